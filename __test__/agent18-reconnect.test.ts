// SPEC-AGENT18 A33/A34/A36 against the stdio fixture: an unexpected close calls
// `this.reconnectServer`, which makes a new connection (tools rebuilt, old ones listed
// meanwhile) on the 0/500/1000/2000/4000 ladder; concurrent calls share one; the breaker stops
// a crash loop at the sixth start within 30 s; `reconnect: false` turns it off; auth challenges
// go through `setAuthHandler`; factories get `reconnect`; `setOnToolsChanged` hears each change.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { MCPManager, MCPStdioServerConfig } from "../index.js";
import { native, server, sleep, waitFor } from "./helpers";

const managers: MCPManager<any>[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch() {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-a34-"));
  dirs.push(dir);
  return dir;
}
type Line = [level: string, message: string];
function make(options: Record<string, unknown> = {}) {
  const lines: Line[] = [];
  const logger = Object.fromEntries(
    ["debug", "info", "warn", "error"].map((level) => [level, (message: string) => lines.push([level, message])]),
  );
  const manager = new native.MCPManager(scratch(), null, { startupTimeoutMs: 10_000, logger, ...options });
  managers.push(manager);
  return { manager, lines };
}
/** The fixture, counting its starts in a pid file. */
function counted(...flags: string[]) {
  const pids = join(scratch(), "pids");
  const config: MCPStdioServerConfig = { command: process.execPath, args: [server, `--pid-file=${pids}`, ...flags] };
  const starts = () => {
    try {
      return readFileSync(pids, "utf8").trim().split("\n").filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  return { config, starts };
}

describe("A34 reconnectServer", () => {
  it("A34: an unexpected close reconnects with a new connection; the old tools stay listed until the new ones replace them", async () => {
    const { manager, lines } = make();
    const crashing = counted("--exit-after-tools=150", "--exit-times=1");
    await manager.connectServers({ s: crashing.config }, {});
    const first = manager.getConnection("s");
    const firstTools = manager.getTools();
    expect(first).toBeDefined();
    expect(await waitFor(() => manager.getConnectionStatus("s") !== "connected", 3000)).toBe(true);
    // While it reconnects the server reads "connecting" and keeps its tools.
    expect(manager.getConnectionStatus("s")).toBe("connecting");
    expect(manager.getTools()).toEqual(firstTools);
    const second = await manager.waitForConnection("s");
    expect(second).not.toBe(first);
    expect(manager.getConnection("s")).toBe(second);
    expect(second.config).toBe(crashing.config);
    expect(crashing.starts()).toBe(2);
    // The connection counts once its connect resolved (A31); its new tools follow.
    expect(await waitFor(() => manager.getTools()[0] !== firstTools[0], 3000)).toBe(true);
    const tools = manager.getTools();
    expect(tools.map((t: any) => t.name)).toEqual(firstTools.map((t: any) => t.name));
    expect(lines).toContainEqual(["warn", 'MCP server "s" disconnected unexpectedly; reconnecting']);
    expect(lines).toContainEqual(["info", 'MCP server "s" reconnected']);
  });

  it("A34: concurrent calls share one attempt; a manual call on a connected server replaces its connection", async () => {
    const { manager } = make();
    const steady = counted();
    await manager.connectServers({ s: steady.config }, {});
    const before = manager.getConnection("s");
    const a = manager.reconnectServer("s");
    const b = manager.reconnectServer("s", { manual: true });
    expect(b).toBe(a);
    const connection = await a;
    expect(connection).toBeTruthy();
    expect(connection).not.toBe(before);
    expect(manager.getConnection("s")).toBe(connection);
    expect(steady.starts()).toBe(2);
    // The replaced transport was closed, not leaked.
    expect(await waitFor(() => before!.transport.connected === false, 3000)).toBe(true);
    expect(await manager.reconnectServer("nobody")).toBeNull();
  });

  it("A34: the attempts follow the ladder (options.reconnect scales it); exhausted, the tools stay and null comes back", async () => {
    const { manager, lines } = make({ reconnect: { initialDelayMs: 60 } });
    const flaky = counted("--exit-after-tools=50", "--exit-times=1");
    await manager.connectServers({ s: flaky.config }, {});
    const tools = manager.getTools();
    // From now on every start fails: a config the server refuses (read at each spawn).
    (flaky.config.args as string[]).push("--init-error");
    await waitFor(() => manager.getConnectionStatus("s") !== "connected", 3000);
    const started = Date.now();
    const outcome = await manager.reconnectServer("s");
    // The automatic reconnect was in flight already: this call shared it.
    expect(outcome).toBeNull();
    // 0, 60, 120, 240, 480 ms before the five attempts.
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    expect(flaky.starts()).toBe(6);
    expect(manager.getConnectionStatus("s")).toBe("disconnected");
    expect(manager.getTools()).toEqual(tools);
    await expect(manager.waitForConnection("s")).rejects.toThrow("MCP server not connected: s");
    expect(lines.filter(([level]) => level === "error").map(([, m]) => m)).toEqual([
      expect.stringMatching(/^MCP server "s" could not be reconnected: .*Initialization refused/),
    ]);
  });

  it("A34: a disconnect during the ladder abandons it: null, and no more starts", async () => {
    const { manager } = make({ reconnect: { initialDelayMs: 300 } });
    const failing = counted("--init-error");
    await manager.connectServers({ s: failing.config }, {});
    expect(failing.starts()).toBe(1);
    const outcome = manager.reconnectServer("s");
    expect(await waitFor(() => failing.starts() === 2, 3000)).toBe(true);
    await manager.disconnectServer("s");
    expect(await outcome).toBeNull();
    await sleep(800);
    expect(failing.starts()).toBe(2);
    expect(manager.getAllServerNames()).toEqual([]);
  });

  it("A34: the breaker stops a crash loop at the sixth start within 30 s; a manual reconnect resets it", async () => {
    const { manager, lines } = make();
    const loop = counted("--exit-after-tools=30");
    await manager.connectServers({ s: loop.config }, {});
    const names = () => manager.getTools().map((t: any) => t.name);
    const tools = names();
    expect(
      await waitFor(() => lines.some(([level, m]) => level === "error" && m.includes("automatic reconnects are suspended")), 15_000),
    ).toBe(true);
    // The first connect, then five reconnects; the sixth call trips the breaker.
    expect(loop.starts()).toBe(6);
    expect(manager.getConnectionStatus("s")).toBe("disconnected");
    expect(manager.getConnection("s")).toBeUndefined();
    expect(names()).toEqual(tools);
    await sleep(300);
    expect(loop.starts()).toBe(6);
    expect(lines).toContainEqual([
      "error",
      'MCP server "s" reconnected more than 5 times within 30 s; automatic reconnects are suspended',
    ]);
    // Tripped, a call that is not manual stays refused.
    expect(await manager.reconnectServer("s")).toBeNull();
    expect(loop.starts()).toBe(6);
    const connection = await manager.reconnectServer("s", { manual: true });
    expect(connection).toBeTruthy();
    expect(loop.starts()).toBe(7);
    await manager.disconnectServer("s");
  });

  it("A34: reconnect: false leaves a closed connection closed", async () => {
    const { manager, lines } = make({ reconnect: false });
    const once = counted("--exit-after-tools=50");
    await manager.connectServers({ s: once.config }, {});
    expect(await waitFor(() => manager.getConnectionStatus("s") === "disconnected", 3000)).toBe(true);
    await sleep(300);
    expect(once.starts()).toBe(1);
    expect(lines).toContainEqual(["warn", 'MCP server "s" disconnected unexpectedly']);
  });

  it("A34 W1: the close goes through this.reconnectServer, so a subclass decides", async () => {
    const calls: unknown[][] = [];
    class Agent extends native.MCPManager {
      override reconnectServer(name: string, options?: any) {
        calls.push([name, options]);
        return Promise.resolve(null);
      }
    }
    const manager = new Agent(scratch(), null, { startupTimeoutMs: 10_000 });
    managers.push(manager);
    const once = counted("--exit-after-tools=50");
    await manager.connectServers({ s: once.config }, {});
    expect(await waitFor(() => calls.length === 1, 3000)).toBe(true);
    expect(calls).toEqual([["s", undefined]]);
    await sleep(200);
    expect(once.starts()).toBe(1);
  });

  it("A34: an authChallenge needs setAuthHandler; the config its handler returns is used and kept", async () => {
    const { manager, lines } = make();
    const steady = counted();
    await manager.connectServers({ s: steady.config }, {});
    const challenge = { scheme: "Bearer", params: { error: "invalid_token" } };
    expect(await manager.reconnectServer("s", { authChallenge: challenge })).toBeNull();
    expect(lines).toContainEqual(["error", 'MCP server "s" sent an auth challenge and no auth handler is set']);
    const heard: unknown[][] = [];
    manager.setAuthHandler(async (name: string, c: unknown) => {
      heard.push([name, c]);
      return heard.length === 1 ? undefined : { ...steady.config, args: [...(steady.config.args ?? []), "--instructions=after auth"] };
    });
    expect(await manager.reconnectServer("s", { authChallenge: challenge })).toBeNull();
    expect(steady.starts()).toBe(1);
    const connection = await manager.reconnectServer("s", { authChallenge: challenge });
    expect(heard).toEqual([
      ["s", challenge],
      ["s", challenge],
    ]);
    expect(connection?.instructions).toBe("after auth");
    expect(manager.getServerConfig("s")?.args).toContain("--instructions=after auth");
    manager.setAuthHandler(async () => {
      throw new Error("user closed the browser");
    });
    expect(await manager.reconnectServer("s", { authChallenge: challenge })).toBeNull();
    expect(lines).toContainEqual(["error", 'The auth handler failed for MCP server "s": user closed the browser']);
    expect(manager.getConnection("s")).toBe(connection);
  });
});

describe("A33 the factory's reconnect argument", () => {
  it("A33: live(connection, tools, reconnect) and deferred(..., source, reconnect) get this.reconnectServer(name, options)", async () => {
    const live: any[] = [];
    const deferred: any[] = [];
    const toolFactory = {
      live: (connection: any, tools: any[], reconnect: any) => {
        live.push({ connection, reconnect });
        return tools.map((t) => ({ name: `live_${t.name}`, mcpServerName: connection.name }));
      },
      deferred: (name: string, tools: any[], _get: any, _source: any, reconnect: any) => {
        deferred.push({ name, reconnect });
        return tools.map((t) => ({ name: `deferred_${t.name}`, mcpServerName: name }));
      },
    };
    const cache = { get: async () => [{ name: "cached", inputSchema: { type: "object" } }], set: async () => {} };
    const manager = new native.MCPManager(scratch(), cache as any, { toolFactory, startupTimeoutMs: 20 });
    managers.push(manager);
    const steady = counted("--init-delay=300");
    await manager.connectServers({ s: steady.config }, {});
    expect(deferred).toHaveLength(1);
    expect(typeof deferred[0].reconnect).toBe("function");
    await manager.waitForConnection("s");
    expect(await waitFor(() => live.length > 0, 3000)).toBe(true);
    expect(typeof live[0].reconnect).toBe("function");
    const before = manager.getConnection("s");
    const connection = await live[0].reconnect();
    expect(connection).toBeTruthy();
    expect(connection).not.toBe(before);
    expect(steady.starts()).toBe(2);
    const v12 = new native.MCPManager(scratch(), null, { toolFactory, compat: "v12" });
    managers.push(v12);
    await v12.connectServers({ old: counted().config }, {});
    expect(live.at(-1).reconnect).toBeUndefined();
  });
});

describe("A36 setOnToolsChanged", () => {
  it("A36: called with every tool after connect, reconnect, refresh (awaited) and disconnectServer, not disconnectAll", async () => {
    const { manager } = make();
    const heard: string[][] = [];
    let release = () => {};
    // A60: a connect awaits the handler too, so only the refresh is held here.
    let holding = false;
    manager.setOnToolsChanged((tools: any[]) => {
      heard.push(tools.map((t) => t.mcpServerName));
      return holding ? new Promise<void>((resolve) => (release = resolve)) : undefined;
    });
    await manager.connectServers({ a: counted().config, b: counted().config }, {});
    expect(heard).toHaveLength(2);
    expect(new Set(heard[1])).toEqual(new Set(["a", "b"]));
    await manager.reconnectServer("a");
    expect(heard).toHaveLength(3);
    let refreshed = false;
    holding = true;
    const refreshing = manager.refreshServerTools("b").then(() => (refreshed = true));
    expect(await waitFor(() => heard.length === 4, 3000)).toBe(true);
    await sleep(50);
    expect(refreshed).toBe(false);
    holding = false;
    release();
    await refreshing;
    await manager.disconnectServer("a");
    expect(heard.at(-1)!.every((s) => s === "b")).toBe(true);
    const count = heard.length;
    await manager.disconnectAll();
    expect(heard).toHaveLength(count);
  });
});
