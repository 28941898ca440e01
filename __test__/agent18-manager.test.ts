// SPEC-AGENT18 A30–A33 (the manager as the v18 agent has it, the default compat) against
// the stdio fixture: status events, the startup gate that does not wait for an uncached
// stalled server, the config kept for a server, sorted `mcp__` tool names, the one
// process-wide instance slot.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { MCPManager, MCPStdioServerConfig, McpConnectionStatusEvent } from "../index.js";
import { fixture, native, server, sleep, waitFor } from "./helpers";

const fx = (...flags: string[]): MCPStdioServerConfig => ({ command: process.execPath, args: [server, ...flags] });
const managers: MCPManager<any>[] = [];
const dirs: string[] = [];
afterEach(async () => {
  native.MCPManager.resetForTests();
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function make(options: Record<string, unknown> = {}, cache: any = null) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-a18-"));
  dirs.push(dir);
  const manager = new native.MCPManager(dir, cache, options);
  managers.push(manager);
  return manager;
}

describe("A31 status events", () => {
  it("A31: connecting (config order, invalid included), failed per invalid one, then connected or failed with sourcePath", async () => {
    // A window longer than any spawn: every server settles inside it, so the call waits.
    const manager = make({ startupTimeoutMs: 10_000 });
    const events: McpConnectionStatusEvent[] = [];
    const result = await manager.connectServers(
      { zeta: fx(), bad: {} as any, broken: fx("--init-error") },
      { broken: { provider: "t", providerName: "T", path: "/cfg/.mcp.json", level: "project" } },
      (event) => events.push(event as McpConnectionStatusEvent),
    );
    expect(events[0]).toEqual({ type: "connecting", serverNames: ["zeta", "bad", "broken"] });
    expect(events[1]).toEqual({ type: "failed", serverName: "bad", error: expect.stringContaining('Server "bad"') });
    expect(events.slice(2)).toEqual(
      expect.arrayContaining([
        { type: "connected", serverName: "zeta" },
        { type: "failed", serverName: "broken", error: expect.stringContaining("Initialization refused"), sourcePath: "/cfg/.mcp.json" },
      ]),
    );
    expect(events).toHaveLength(4);
    expect(result.connectedServers).toEqual(["zeta"]);
    expect([...result.errors.keys()].sort()).toEqual(["bad", "broken"]);
  });

  it("A31: a connected server is counted without events; one still connecting is left alone", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    await manager.connectServers({ up: fx() }, {});
    const slow = manager.connectServers({ slow: fx("--init-delay=600") }, {});
    const events: McpConnectionStatusEvent[] = [];
    const again = await manager.connectServers({ up: fx(), slow: fx("--init-delay=600") }, {}, (e) => events.push(e as McpConnectionStatusEvent));
    expect(events).toEqual([]);
    expect(again.connectedServers).toEqual(["up"]);
    expect(again.errors.size).toBe(0);
    await slow;
  });

  it("A31: discoverAndConnect's onStatus hears a loadConfigs failure as .mcp.json, and onConnecting keeps its meaning", async () => {
    const manager = make();
    const events: unknown[] = [];
    await expect(
      manager.discoverAndConnect({ loadConfigs: async () => Promise.reject(new Error("bad file")), onStatus: (e) => events.push(e) }),
    ).rejects.toThrow("bad file");
    expect(events).toEqual([{ type: "failed", serverName: ".mcp.json", error: "bad file" }]);
    const connecting: string[][] = [];
    const statuses: string[] = [];
    await manager.discoverAndConnect({
      loadConfigs: async () => ({ configs: { one: fx() }, sources: {} }),
      onConnecting: (names) => connecting.push(names),
      onStatus: (e) => statuses.push(e.type),
    });
    expect(connecting).toEqual([["one"]]);
    expect(statuses).toEqual(["connecting", "connected"]);
  });
});

describe("A32 the startup gate", () => {
  it("A32: an uncached server still connecting after the window is not waited for and is in neither list; its tools come later", async () => {
    const manager = make({ startupTimeoutMs: 1500 });
    const events: string[] = [];
    const started = Date.now();
    const result = await manager.connectServers({ quick: fx(), stalled: fx("--init-delay=4000") }, {}, (e: any) =>
      events.push(`${e.type} ${e.serverName ?? e.serverNames}`),
    );
    // The window, not the stalled server's four seconds.
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result.connectedServers).toEqual(["quick"]);
    expect(result.errors.has("stalled")).toBe(false);
    expect(manager.getConnectionStatus("stalled")).toBe("connecting");
    // The status says connected as soon as the connect resolved (as the agent's does); the
    // event comes once the tools are in.
    expect(await waitFor(() => events.includes("connected stalled"), 8000)).toBe(true);
    expect(manager.getConnectionStatus("stalled")).toBe("connected");
    expect(manager.getTools().some((t: any) => t.mcpServerName === "stalled")).toBe(true);
  });

  it("A32: getServerConfig gives the connection's config, else the one given before connecting; a disconnect during the connect says so", async () => {
    const manager = make({ startupTimeoutMs: 20 });
    const config = fx("--init-delay=400");
    const events: any[] = [];
    const result = manager.connectServers({ late: config }, {}, (e) => events.push(e));
    await sleep(50);
    expect(manager.getServerConfig("late")).toBe(config);
    await result;
    await manager.disconnectAll();
    await sleep(600);
    expect(events.at(-1)).toEqual({ type: "failed", serverName: "late", error: 'Server "late" was disconnected during initial connection' });
    expect(manager.getServerConfig("late")).toBeUndefined();
    const failing = fx("--init-error");
    const again = make({ startupTimeoutMs: 10_000 });
    await again.connectServers({ failing }, {});
    expect(again.getServerConfig("failing")).toBe(failing);
  });
});

describe("A33 tool names", () => {
  it("A33: v18 names are mcp__<server>_<tool>, capped at 64; the list is sorted and parseMCPToolName reads both spellings", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    await manager.connectServers({ zeta: fx(), alpha: fx() }, {});
    const names = manager.getTools().map((t: any) => t.name);
    expect(names.length).toBeGreaterThan(2);
    expect(names.every((n: string) => n.startsWith("mcp__alpha_") || n.startsWith("mcp__zeta_"))).toBe(true);
    expect(names).toEqual([...names].sort());
    expect(native.parseMCPToolName("mcp__alpha_echo")).toEqual({ serverName: "alpha", toolName: "echo" });
    expect(native.parseMCPToolName("mcp_alpha_echo")).toEqual({ serverName: "alpha", toolName: "echo" });
    const long = make({ startupTimeoutMs: 10_000 });
    await long.connectServers({ [`s${"x".repeat(70)}`]: fx() }, {});
    for (const tool of long.getTools() as any[]) {
      expect(tool.name.length).toBeLessThanOrEqual(64);
      expect(tool.name).toMatch(/^mcp__s?x+_[0-9a-z]{8}$/);
    }
    expect(new Set(long.getTools().map((t: any) => t.name)).size).toBe(long.getTools().length);
  });

  it('A40: compat "v12" keeps mcp_ names and the onConnecting third argument', async () => {
    const manager = make({ compat: "v12" });
    const heard: unknown[] = [];
    await manager.connectServers({ old: fx() }, {}, (names: any) => heard.push(names));
    expect(heard).toEqual([["old"]]);
    expect(manager.getTools().every((t: any) => t.name.startsWith("mcp_old_"))).toBe(true);
  });
});

describe("A30 the instance slot", () => {
  it("A30: instance(), setInstance(m?) and resetForTests() share one slot, subclasses included", () => {
    class Sub extends native.MCPManager {}
    expect(native.MCPManager.instance()).toBeUndefined();
    const sub = new Sub(process.cwd());
    native.MCPManager.setInstance(sub);
    expect(Sub.instance()).toBe(sub);
    expect(native.MCPManager.instance()).toBe(sub);
    Sub.setInstance(undefined);
    expect(native.MCPManager.instance()).toBeUndefined();
    Sub.setInstance(sub);
    native.MCPManager.resetForTests();
    expect(Sub.instance()).toBeUndefined();
  });
});

describe("A58 startup waits", () => {
  it("A58: waitForStartup says who connected, who is pending and who failed (and why); waitForPendingConnections waits for the rest", async () => {
    const manager = make({ startupTimeoutMs: 100 });
    const connecting = manager.connectServers({ fast: fx(), slow: fx("--init-delay=1500"), broken: fx("--init-error") }, {});
    const started = Date.now();
    const early = await manager.waitForStartup(600);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(early).toEqual({
      connected: ["fast"],
      pending: ["slow"],
      failed: [{ name: "broken", error: "MCP error -32603: Initialization refused" }],
    });
    await manager.waitForPendingConnections();
    expect(manager.getConnectionStatus("slow")).toBe("connected");
    expect(await manager.waitForStartup(0)).toEqual({
      connected: ["fast", "slow"],
      pending: [],
      failed: [{ name: "broken", error: "MCP error -32603: Initialization refused" }],
    });
    await connecting;
    await manager.disconnectServer("broken");
    expect((await manager.waitForStartup(1)).failed).toEqual([]);
  });
});

describe("A59 status and catalog listeners", () => {
  it("A59: a status listener hears connectServers' events and a reconnect's; a catalog listener hears fresh listings; removers stop them", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    const heard: McpConnectionStatusEvent[] = [];
    const removeStatus = manager.addConnectionStatusListener((event) => heard.push(event));
    const catalogs: { serverName: string; kind: string }[] = [];
    const removeCatalog = manager.addCatalogChangeListener((event) => catalogs.push(event));
    manager.addConnectionStatusListener(() => {
      throw new Error("a listener that throws is on its own");
    });
    await manager.connectServers({ s: fx("--all-capabilities"), broken: fx("--init-error") }, {});
    expect(heard.slice(0, 1)).toEqual([{ type: "connecting", serverNames: ["s", "broken"] }]);
    expect(heard.slice(1).sort((a: any, b: any) => a.serverName.localeCompare(b.serverName))).toEqual([
      { type: "failed", serverName: "broken", error: "MCP error -32603: Initialization refused" },
      { type: "connected", serverName: "s" },
    ]);
    // The catalog loads after the connect: resources, then prompts.
    expect(await waitFor(() => catalogs.length === 2, 5000)).toBe(true);
    expect(catalogs).toEqual([
      { serverName: "s", kind: "resources" },
      { serverName: "s", kind: "prompts" },
    ]);
    heard.length = 0;
    await manager
      .getConnection("s")!
      .transport.request("tools/call", { name: "crash", arguments: {} })
      .catch(() => {});
    expect(await waitFor(() => heard.length === 2, 10_000)).toBe(true);
    expect(heard).toEqual([
      { type: "reconnecting", serverName: "s" },
      { type: "connected", serverName: "s" },
    ]);
    removeStatus();
    removeCatalog();
    heard.length = 0;
    const count = catalogs.length;
    await manager.refreshServerResources("s");
    await manager.connectServers({ later: fx() }, {});
    expect(heard).toEqual([]);
    expect(catalogs).toHaveLength(count);
  });
});

describe("A55 the agent's constructor form", () => {
  it("A55: (cwd, toolCache, loadConfigs, reconnectPolicy): discovery asks that loader; a lost server is retried on that ladder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-a55-"));
    dirs.push(dir);
    const asked: string[] = [];
    const loadConfigs = async (cwd: string) => {
      asked.push(cwd);
      return { configs: { s: fx() }, sources: {} };
    };
    const manager = new native.MCPManager(dir, null, loadConfigs, { ladderMs: [50, 50], retryBaseMs: 15_000, retryMaxMs: 300_000 });
    managers.push(manager);
    const result = await manager.discoverAndConnect();
    expect(asked).toEqual([dir]);
    expect(result.connectedServers).toEqual(["s"]);
    const events: McpConnectionStatusEvent[] = [];
    manager.addConnectionStatusListener((event) => events.push(event));
    await manager.getConnection("s")!.transport.request("tools/call", { name: "crash", arguments: {} }).catch(() => {});
    expect(await waitFor(() => events.some((e) => e.type === "connected"), 5000)).toBe(true);
    expect(events.map((e) => e.type)).toEqual(["reconnecting", "connected"]);
  });
});

describe("A58 a call's startup window", () => {
  it("A58: connectServers' fourth argument and discovery's startupTimeoutMs override the constructor's; 0 waits for every server", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    let started = Date.now();
    const quick = await manager.connectServers({ slow: fx("--init-delay=1500") }, {}, undefined, 50);
    expect(Date.now() - started).toBeLessThan(1200);
    expect(quick.connectedServers).toEqual([]);
    const waiting = make({ startupTimeoutMs: 50 });
    started = Date.now();
    const all = await waiting.connectServers({ slow: fx("--init-delay=600") }, {}, undefined, 0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(all.connectedServers).toEqual(["slow"]);
    const discovering = make({ startupTimeoutMs: 10_000, loadConfigs: async () => ({ configs: { d: fx("--init-delay=1500") }, sources: {} }) });
    started = Date.now();
    const found = await discovering.discoverAndConnect({ startupTimeoutMs: 50 });
    expect(Date.now() - started).toBeLessThan(1200);
    expect(found.connectedServers).toEqual([]);
  });
});

describe("A62 reconciles", () => {
  const project = { provider: "omp", providerName: "OMP", path: "/p/.omp/mcp.json", level: "project" } as const;
  const user = { provider: "omp", providerName: "OMP", path: "/home/.omp/mcp.json", level: "user" } as const;
  // The agent's loader: a project server `shared` shadows the user's; `playwright` is a browser server.
  const loader = (asked: any[]) => async (_cwd: string, options: any) => {
    asked.push({ enableProjectConfig: options.enableProjectConfig, filterBrowser: options.filterBrowser });
    const projectOn = options.enableProjectConfig !== false;
    const configs: Record<string, MCPStdioServerConfig> = { shared: fx(), plain: fx() };
    const sources: Record<string, any> = { shared: projectOn ? project : user, plain: user };
    if (projectOn) (configs.local = fx()), (sources.local = project);
    if (!options.filterBrowser) (configs.playwright = fx()), (sources.playwright = user);
    return { configs, sources };
  };

  it("A62: reconcileProjectConfig(false) drops project servers and brings back the user's; (true) connects them again", async () => {
    const asked: any[] = [];
    const manager = make({ startupTimeoutMs: 10_000, loadConfigs: loader(asked) });
    // Before any discovery there is nothing to reconcile.
    await manager.reconcileProjectConfig(false);
    expect(asked).toEqual([]);
    const discovering = manager.discoverAndConnect({ filterBrowser: true });
    // Waits for the discovery in flight.
    const reconciling = manager.reconcileProjectConfig(false);
    await discovering;
    expect(manager.getAllServerNames().sort()).toEqual(["local", "plain", "shared"]);
    await reconciling;
    expect(asked.at(-1)).toEqual({ enableProjectConfig: false, filterBrowser: true });
    expect(manager.getAllServerNames().sort()).toEqual(["plain", "shared"]);
    expect(manager.getSource("shared")?.level).toBe("user");
    expect(manager.getConnectionStatus("shared")).toBe("connected");
    // The same setting again changes nothing.
    const loads = asked.length;
    await manager.reconcileProjectConfig(false);
    expect(asked).toHaveLength(loads);
    await manager.reconcileProjectConfig(true);
    expect(manager.getAllServerNames().sort()).toEqual(["local", "plain", "shared"]);
    expect(manager.getSource("shared")?.level).toBe("project");
  });

  it("A62: reconcileBrowserFilter(true) disconnects browser servers, held or configured; (false) connects them", async () => {
    const asked: any[] = [];
    const manager = make({ startupTimeoutMs: 10_000, loadConfigs: loader(asked) });
    await manager.discoverAndConnect({ filterBrowser: false });
    await manager.connectServers({ web: { command: process.execPath, args: [server, "@playwright/mcp"] } }, {});
    expect(manager.getAllServerNames().sort()).toEqual(["local", "plain", "playwright", "shared", "web"]);
    await manager.reconcileBrowserFilter(true);
    expect(asked.at(-1)).toEqual({ enableProjectConfig: undefined, filterBrowser: false });
    expect(manager.getAllServerNames().sort()).toEqual(["local", "plain", "shared"]);
    await manager.reconcileBrowserFilter(false);
    expect(manager.getAllServerNames().sort()).toEqual(["local", "plain", "playwright", "shared"]);
    expect(manager.getConnectionStatus("playwright")).toBe("connected");
  });
});

describe("A56 idle reconnect", () => {
  it("A56: a lost HTTP server is tried again on its own after retryBaseMs, doubling to retryMaxMs, until it answers", async () => {
    let down = false;
    const attempts: number[] = [];
    const http = createServer((req, res) => {
      let text = "";
      req.on("data", (c) => (text += c));
      req.on("end", () => {
        if (req.method !== "POST") return void (res.writeHead(405), res.end());
        const message = JSON.parse(text);
        if (message.method === "initialize") attempts.push(Date.now());
        if (down) return void (res.writeHead(503), res.end("restarting"));
        if (message.id === undefined) return void (res.writeHead(202), res.end());
        const result =
          message.method === "initialize"
            ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "idle", version: "1" } }
            : message.method === "tools/list"
              ? { tools: [{ name: "t", inputSchema: { type: "object" } }] }
              : {};
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      });
    });
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    try {
      const manager = make({ reconnectPolicy: { ladderMs: [20], retryBaseMs: 300, retryMaxMs: 450 } });
      await manager.connectServers({ remote: { type: "http", url } }, {}, undefined, 0);
      const events: McpConnectionStatusEvent[] = [];
      manager.addConnectionStatusListener((event) => events.push(event));
      down = true;
      attempts.length = 0;
      expect(await manager.reconnectServer("remote")).toBeNull();
      expect(attempts).toHaveLength(2);
      // The schedule: 300 ms, then 450 ms (the ceiling) after each failed attempt.
      expect(await waitFor(() => attempts.length === 3, 2000)).toBe(true);
      expect(attempts[2] - attempts[1]).toBeGreaterThanOrEqual(280);
      down = false;
      expect(await waitFor(() => manager.getConnectionStatus("remote") === "connected", 3000)).toBe(true);
      expect(attempts[3] - attempts[2]).toBeGreaterThanOrEqual(430);
      expect(events.filter((e) => e.type === "failed")).toHaveLength(1);
      expect(events.at(-1)).toEqual({ type: "connected", serverName: "remote" });
      // Answered: no further attempts.
      const settled = attempts.length;
      await sleep(800);
      expect(attempts).toHaveLength(settled);
    } finally {
      await new Promise((r) => (http.closeAllConnections(), http.close(r)));
    }
  });
});

describe("A60 connectServers adds and waits for the tools-changed handler", () => {
  it("A60: a second connectServers adds its server's tools; each connected event follows the handler's completion", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    const order: string[] = [];
    manager.setOnToolsChanged(async (tools) => {
      order.push(`changed ${new Set(tools.map((t: any) => t.name.split("_")[2])).size}`);
      await sleep(100);
      order.push("handled");
    });
    manager.addConnectionStatusListener((event) => order.push(event.type));
    const first = await manager.connectServers({ a: fx() }, {});
    const second = await manager.connectServers({ b: fx() }, {});
    expect(first.tools.every((t: any) => t.name.startsWith("mcp__a_"))).toBe(true);
    expect(second.tools.some((t: any) => t.name.startsWith("mcp__b_"))).toBe(true);
    const names = manager.getTools().map((t: any) => t.name);
    expect(names.some((n: string) => n.startsWith("mcp__a_")) && names.some((n: string) => n.startsWith("mcp__b_"))).toBe(true);
    expect(order).toEqual(["connecting", "changed 1", "handled", "connected", "connecting", "changed 2", "handled", "connected"]);
  });
});

describe("A65 names", () => {
  it("A65: default v18 names keep digits; Claude Code's mcp__server__tool spelling parses to the registered parts", async () => {
    const manager = make({ startupTimeoutMs: 10_000 });
    await manager.connectServers({ context7: fx() }, {});
    const names = manager.getTools().map((t: any) => t.name);
    expect(names).toContain("mcp__context7_echo");
    expect(native.parseMCPToolName("mcp__context7__echo")).toEqual({ serverName: "context7", toolName: "echo" });
    expect(native.parseMCPToolName("mcp__context7_echo")).toEqual({ serverName: "context7", toolName: "echo" });
    // The v12 spelling is unchanged.
    expect(native.createMCPToolName("context7", "echo")).toBe("mcp_context_echo");
  });
});

describe("A66 a shutdown is not a failure", () => {
  it("no error is logged for servers the manager itself disconnects while they connect", async () => {
    const logged: { level: string; message: string }[] = [];
    const log = (level: string) => (message: string) => logged.push({ level, message });
    const manager = make({ logger: { error: log("error"), warn: log("warn"), info: log("info") } });
    const result = await manager.connectServers({ slow: fx("--init-delay=600"), up: fx("--all-capabilities") }, {}, undefined, 50);
    expect(result.connectedServers).not.toContain("slow");
    await manager.disconnectAll();
    await sleep(900);
    expect(logged.filter((l) => l.level !== "info")).toEqual([]);
  });
});

describe("A56 the schedule never keeps a process alive", () => {
  it("A56: a process with a lost server on its 15 s schedule exits as soon as it has nothing else to do", async () => {
    const { spawnSync } = await import("node:child_process");
    const started = Date.now();
    const run = spawnSync(process.execPath, [fixture("idle-exit.mjs")], { encoding: "utf8", timeout: 20_000 });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim().split("\n")).toEqual(['MCP server "remote": reconnect scheduled in 15000 ms', "armed"]);
    expect(run.status).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
