// SPEC-AGENT18 A39 on Node: the v18 agent's manager.ts as a subclass of MCPManager
// (__test__/agent18-manager-subclass.ts), driven the way the v18 agent drives it, against real
// stdio fixture processes and a 127.0.0.1 HTTP fixture. The core of it also runs under
// `bun test` in __test__/bun/agent18-manager-subclass.bun.test.ts.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { MCPServerConfig, MCPStdioServerConfig, MCPTextContent, MCPToolDefinition, McpConnectionStatusEvent } from "../index.js";
import * as client from "./agent18-client";
import {
  AgentMCPManager,
  AgentMCPTool,
  agentMCPConfigPath,
  agentToolName,
  createMCPManager,
  resolveMCPTimeoutMs,
  resolveSubscriptionPostAction,
  sortMCPToolsByName,
} from "./agent18-manager-subclass";
import { startHttpFixture } from "./fixtures/http-server";
import { alive, native, server, sleep, waitFor } from "./helpers";

const fx = (...flags: string[]): MCPStdioServerConfig => ({ command: process.execPath, args: [server, ...flags] });

const cleanups: (() => unknown)[] = [];
const managers: AgentMCPManager[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  native.MCPManager.resetForTests();
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  for (const f of cleanups.splice(0).reverse()) await f();
});
function scratch(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-a39-")));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
function agent(cache: ConstructorParameters<typeof AgentMCPManager>[1] = null, dir = scratch()): AgentMCPManager {
  const manager = new AgentMCPManager(dir, cache);
  managers.push(manager);
  return manager;
}
/** The fixture, counting its starts (and keeping their pids) in a pid file. */
function counted(...flags: string[]) {
  const pids = join(scratch(), "pids");
  const config = fx(`--pid-file=${pids}`, ...flags);
  const pidList = () => {
    try {
      return readFileSync(pids, "utf8").trim().split("\n").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  return { config, pidList, starts: () => pidList().length };
}
type Event = McpConnectionStatusEvent;
const settled = (events: Event[], name: string) =>
  events.some((e) => (e.type === "connected" || e.type === "failed") && e.serverName === name);
const text = (result: { content: unknown[] }) => (result.content[0] as MCPTextContent).text;

let fixtureTools: MCPToolDefinition[] = [];
beforeAll(async () => {
  const connection = await native.connectToServer("probe", fx());
  fixtureTools = await native.listTools(connection);
  await connection.transport.close();
});
const expectedNames = (serverName: string) => fixtureTools.map((t) => `mcp__${serverName}_${t.name}`).sort();

describe("A39 connectServers as the agent calls it", () => {
  it("A31: connecting in config order (invalid included), failed per invalid config at once, then connected / failed with sourcePath; settled-in-window events precede the answer", async () => {
    const manager = agent();
    const events: Event[] = [];
    const brokenSource = { provider: "omp", providerName: "OMP", path: "/proj/.omp/mcp.json", level: "project" as const };
    const result = await manager.connectServers(
      { beta: fx(), bad: { type: "http" } as unknown as MCPServerConfig, alpha: fx(), broken: fx("--init-error") },
      { broken: brokenSource },
      (event: Event) => events.push(event),
    );
    const atAnswer = [...events];
    expect(events[0]).toEqual({ type: "connecting", serverNames: ["beta", "bad", "alpha", "broken"] });
    expect(events[1]).toEqual({ type: "failed", serverName: "bad", error: expect.stringContaining('Server "bad"') });
    // Whatever settled inside the 250 ms window is in the answer, and its event came first.
    for (const name of result.connectedServers) expect(atAnswer).toContainEqual({ type: "connected", serverName: name });
    for (const name of result.errors.keys()) expect(settled(atAnswer, name)).toBe(true);
    expect(result.errors.has("bad")).toBe(true);
    // The rest settle after the answer (A32: not awaited).
    expect(await waitFor(() => ["beta", "alpha", "broken"].every((n) => settled(events, n)), 8000)).toBe(true);
    expect(events.slice(2)).toEqual(
      expect.arrayContaining([
        { type: "connected", serverName: "beta" },
        { type: "connected", serverName: "alpha" },
        { type: "failed", serverName: "broken", error: expect.stringContaining("Initialization refused"), sourcePath: brokenSource.path },
      ]),
    );
    expect(events).toHaveLength(5);
    expect(manager.getConnectedServers().sort()).toEqual(["alpha", "beta"]);
    // A connected server is counted again without events (A31).
    const again: Event[] = [];
    const second = await manager.connectServers({ alpha: fx() }, {}, (e: Event) => again.push(e));
    expect(again).toEqual([]);
    expect(second.connectedServers).toEqual(["alpha"]);
  });

  it("A30/A33: the bridge's tools are sorted by name, owned by server name (not name prefix), named mcp__<server>_<tool> like the built-in tools", async () => {
    const manager = agent();
    const events: Event[] = [];
    // "docs_extra"'s tool names all start with "mcp__docs_": ownership must not follow prefixes.
    await manager.connectServers({ docs_extra: fx(), docs: fx() }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "docs") && settled(events, "docs_extra"), 8000)).toBe(true);
    const tools = manager.getTools();
    expect(tools.every((t) => t instanceof AgentMCPTool)).toBe(true);
    const names = tools.map((t) => t.name);
    expect(names).toEqual([...names].sort());
    expect(manager.toolsOf("docs").map((t) => t.name).sort()).toEqual(expectedNames("docs"));
    expect(manager.toolsOf("docs_extra").map((t) => t.name).sort()).toEqual(expectedNames("docs_extra"));
    expect(tools).toHaveLength(2 * fixtureTools.length);
    // The package's own v18 tools name them the same way.
    const builtIn = new native.MCPManager(scratch(), null, { startupTimeoutMs: 10_000 });
    cleanups.push(() => builtIn.disconnectAll());
    await builtIn.connectServers({ docs: fx() }, {});
    expect(builtIn.getTools().map((t) => t.name)).toEqual(manager.toolsOf("docs").map((t) => t.name));
    // A name over 64 characters is capped with a hash, stable and distinct.
    const long = agentToolName(`s${"x".repeat(70)}`, "echo");
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^mcp__sx+_[0-9a-z]{8}$/);
    expect(agentToolName(`s${"x".repeat(70)}`, "echo")).toBe(long);
    expect(agentToolName(`s${"x".repeat(70)}`, "add")).not.toBe(long);
    // The bridge's tools call their server.
    const echo = manager.toolsOf("docs").find((t) => t.mcpToolName === "echo")!;
    expect(echo.deferred).toBe(false);
    expect(echo.label).toBe("docs/echo");
    expect(text(await echo.execute({ text: "from the agent" }))).toBe("from the agent");
    // Disconnecting "docs" leaves every tool of "docs_extra".
    await manager.disconnectServer("docs");
    expect(manager.getTools().map((t) => t.name).sort()).toEqual(expectedNames("docs_extra"));
    // The re-exports of A30.
    const list = [{ name: "b" }, { name: "B" }, { name: "a" }];
    expect(sortMCPToolsByName(list)).toBe(list);
    expect(list.map((t) => t.name)).toEqual(["B", "a", "b"]);
    expect(resolveSubscriptionPostAction(false, 1, 1)).toBe("rollback");
    expect(resolveSubscriptionPostAction(true, 2, 1)).toBe("ignore");
    expect(resolveSubscriptionPostAction(true, 2, 2)).toBe("apply");
  });

  it("A32: a cached server still connecting gets deferred bridge tools at once; they wait for the connection and work", async () => {
    const definitions = fixtureTools;
    const cache = {
      gets: [] as string[],
      sets: [] as string[],
      async get(name: string) {
        this.gets.push(name);
        return definitions;
      },
      async set(name: string) {
        this.sets.push(name);
      },
    };
    const manager = agent(cache);
    const events: Event[] = [];
    const started = Date.now();
    const result = await manager.connectServers({ slow: fx("--init-delay=800") }, {}, (e: Event) => events.push(e));
    expect(Date.now() - started).toBeLessThan(700);
    expect(cache.gets).toEqual(["slow"]);
    expect(result.tools.map((t) => t.name).sort()).toEqual(expectedNames("slow"));
    expect(result.tools.every((t) => t.deferred)).toBe(true);
    expect(events).toEqual([{ type: "connecting", serverNames: ["slow"] }]);
    const echo = result.tools.find((t) => t.mcpToolName === "echo")!;
    expect(typeof echo.reconnect).toBe("function");
    expect(text(await echo.execute({ text: "after the wait" }))).toBe("after the wait");
    expect(await waitFor(() => settled(events, "slow"), 5000)).toBe(true);
    expect(events.at(-1)).toEqual({ type: "connected", serverName: "slow" });
    expect(await waitFor(() => manager.getTools().every((t) => !t.deferred), 3000)).toBe(true);
    expect(await waitFor(() => cache.sets.includes("slow"), 3000)).toBe(true);
  });
});

describe("A35/A36 change callbacks and notifications", () => {
  it("A36: setOnToolsChanged hears the late tools and the list change; A35: listeners hear notifications after the manager refreshed, early ones buffered", async () => {
    const manager = agent();
    const changes: string[][] = [];
    manager.setOnToolsChanged((tools) => void changes.push(tools.map((t) => t.name)));
    const events: Event[] = [];
    await manager.connectServers({ s: fx() }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    expect(await waitFor(() => changes.length >= 1, 3000)).toBe(true);
    expect(changes.at(-1)!.sort()).toEqual(expectedNames("s"));
    const tool = (name: string) => manager.toolsOf("s").find((t) => t.mcpToolName === name)!;
    // Before any listener: kept for the first one.
    await tool("send_notification").execute({ method: "notifications/custom", params: { i: 1 } });
    const heard: Array<[string, string, unknown, boolean]> = [];
    const stop = manager.addNotificationListener((serverName, method, params) => {
      heard.push([serverName, method, params, manager.getTools().some((t) => t.name === "mcp__s_extra")]);
    });
    expect(heard).toEqual([["s", "notifications/custom", { i: 1 }, false]]);
    const before = changes.length;
    expect(text(await tool("toggle_extra").execute())).toBe("true");
    expect(await waitFor(() => heard.some(([, m]) => m === "notifications/tools/list_changed"), 3000)).toBe(true);
    // The refresh ran before the fan-out: the listener saw the new tool already.
    expect(heard.find(([, m]) => m === "notifications/tools/list_changed")).toEqual(["s", "notifications/tools/list_changed", {}, true]);
    expect(changes.length).toBe(before + 1);
    expect(changes.at(-1)).toContain("mcp__s_extra");
    expect(changes.at(-1)).toEqual([...changes.at(-1)!].sort());
    stop();
    await tool("send_notification").execute({ method: "notifications/custom", params: { i: 2 } });
    await sleep(100);
    expect(heard.filter(([, m]) => m === "notifications/custom")).toHaveLength(1);
  });

  it("A36: getServerResources / getServerPrompts / readServerResource / executePrompt / getServerInstructions through the subclass", async () => {
    const manager = agent();
    const events: Event[] = [];
    await manager.connectServers({ s: fx("--all-capabilities", "--instructions=prefer the s tools") }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    await manager.ensureServerResources("s");
    const catalog = manager.getServerResources("s")!;
    expect(catalog.resources.map((r) => r.uri)).toEqual(Array.from({ length: 7 }, (_, i) => `fixture://r/${i}`));
    expect(catalog.templates).toEqual([{ uriTemplate: "fixture://r/{n}", name: "r" }]);
    expect(await waitFor(() => (manager.getServerPrompts("s") ?? []).length === 5, 3000)).toBe(true);
    expect(manager.getServerPrompts("s")!.map((p) => p.name)).toEqual(["p0", "p1", "p2", "p3", "p4"]);
    const read = await manager.readServerResource("s", "fixture://r/4");
    expect(read?.contents).toEqual([{ uri: "fixture://r/4", mimeType: "text/plain", text: "contents of fixture://r/4" }]);
    const prompt = await manager.executePrompt("s", "p2", { who: "the agent" });
    expect(prompt?.messages).toEqual([{ role: "user", content: { type: "text", text: "p2 for the agent" } }]);
    expect(manager.getServerInstructions()).toEqual(new Map([["s", "prefer the s tools"]]));
    expect(manager.getServerResources("nobody")).toBeUndefined();
    expect(await manager.executePrompt("nobody", "p0")).toBeUndefined();
  });
});

describe("A34 reconnect", () => {
  it("A34: a server process that dies is reconnected through this.reconnectServer: a new connection, the tools rebuilt under the same names", async () => {
    const manager = agent();
    const crashing = counted("--exit-after-tools=150", "--exit-times=1");
    const changes: string[][] = [];
    manager.setOnToolsChanged((tools) => void changes.push(tools.map((t) => t.name)));
    const events: Event[] = [];
    await manager.connectServers({ s: crashing.config }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    const first = manager.getConnection("s")!;
    const firstTools = manager.getTools();
    const firstPid = crashing.pidList()[0];
    expect(await waitFor(() => manager.reconnects.length > 0, 5000)).toBe(true);
    expect(manager.reconnects[0]).toEqual({ name: "s" });
    const second = await manager.waitForConnection("s");
    expect(second).not.toBe(first);
    expect(manager.getConnectionStatus("s")).toBe("connected");
    expect(crashing.starts()).toBe(2);
    expect(alive(firstPid)).toBe(false);
    // The connection counts once its connect resolved (A31); its tools follow with the change.
    expect(await waitFor(() => changes.length >= 2, 3000)).toBe(true);
    const tools = manager.getTools();
    expect(tools.map((t) => t.name)).toEqual(firstTools.map((t) => t.name));
    expect(tools[0]).not.toBe(firstTools[0]);
    expect(changes.at(-1)).toEqual(tools.map((t) => t.name));
    expect(manager.logged).toContainEqual(expect.objectContaining({ level: "warn", message: 'MCP server "s" disconnected unexpectedly; reconnecting' }));
    expect(manager.logged).toContainEqual(expect.objectContaining({ level: "info", message: 'MCP server "s" reconnected' }));
    // The new tools call the new process.
    const echo = manager.toolsOf("s").find((t) => t.mcpToolName === "echo")!;
    expect(text(await echo.execute({ text: "back again" }))).toBe("back again");
    // A33: the factory's reconnect is this.reconnectServer(name, options).
    const third = await echo.reconnect!();
    expect(third).toBeTruthy();
    expect(third).not.toBe(second);
    expect(manager.reconnects.at(-1)!.name).toBe("s");
    expect(crashing.starts()).toBe(3);
  });
});

describe("A38 clientApi", () => {
  it("A38: the manager calls the agent's client module, looked up at call time: spies installed after construction see every call and can stub it", async () => {
    const manager = agent();
    const connect = vi.spyOn(client, "connectToServer");
    const listTools = vi.spyOn(client, "listTools");
    const listPrompts = vi.spyOn(client, "listPrompts");
    const readResource = vi.spyOn(client, "readResource");
    const getPrompt = vi.spyOn(client, "getPrompt");
    const disconnect = vi.spyOn(client, "disconnectServer");
    const events: Event[] = [];
    await manager.connectServers({ s: fx("--all-capabilities") }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    expect(connect).toHaveBeenCalledTimes(1);
    expect(connect.mock.calls[0][0]).toBe("s");
    expect(connect.mock.calls[0][1]).toMatchObject({ command: process.execPath, args: [server, "--all-capabilities"] });
    expect(listTools).toHaveBeenCalledTimes(1);
    expect(listTools.mock.calls[0][0]).toBe(manager.getConnection("s"));
    expect(await waitFor(() => listPrompts.mock.calls.length === 1, 3000)).toBe(true);
    await manager.readServerResource("s", "fixture://r/1");
    await manager.executePrompt("s", "p0", { who: "spy" });
    expect(readResource.mock.calls.map((c) => c[1])).toEqual(["fixture://r/1"]);
    expect(getPrompt.mock.calls.map((c) => [c[1], c[2]])).toEqual([["p0", { who: "spy" }]]);
    const connection = manager.getConnection("s");
    await manager.disconnectServer("s");
    expect(disconnect).toHaveBeenCalledTimes(1);
    expect(disconnect.mock.calls[0][0]).toBe(connection);
    // The agent's tests stub the client module: a stubbed connect is the failure reported.
    connect.mockRejectedValueOnce(new Error("stubbed connect failure"));
    const stubbed: Event[] = [];
    await manager.connectServers({ t: fx() }, {}, (e: Event) => stubbed.push(e));
    expect(await waitFor(() => settled(stubbed, "t"), 3000)).toBe(true);
    expect(stubbed).toEqual([
      { type: "connecting", serverNames: ["t"] },
      { type: "failed", serverName: "t", error: "stubbed connect failure" },
    ]);
  });
});

/** A token endpoint on 127.0.0.1 that answers refresh grants with `next()`. */
async function startTokenServer(next: () => { access_token: string; refresh_token?: string }) {
  const forms: URLSearchParams[] = [];
  const httpServer = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const form = new URLSearchParams(body);
    forms.push(form);
    if (form.get("grant_type") !== "refresh_token") return res.writeHead(400).end('{"error":"unsupported_grant_type"}');
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ token_type: "Bearer", ...next() }));
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer.address() as AddressInfo;
  cleanups.push(() => new Promise<void>((resolve) => httpServer.close(() => resolve())));
  return { url: `http://127.0.0.1:${port}/token`, forms };
}

describe("A37 the agent's credential methods", () => {
  it("A37: resolveCredentials injects the stored token as Bearer (replacing a configured authorization), the HTTP fixture accepts it; a 401 refreshes at tokenUrl and the call is retried", async () => {
    const token = { current: "tok-1" };
    const http = await startHttpFixture({ bearer: token });
    cleanups.push(() => http.close());
    let issued = 1;
    const issuer = await startTokenServer(() => (issued++, { access_token: `tok-${issued}`, refresh_token: `r-${issued}` }));
    process.env.MCP_NATIVE_A39_TEAM = "platform";
    cleanups.push(() => delete process.env.MCP_NATIVE_A39_TEAM);
    const manager = agent();
    manager.authStorage.set("cred", { type: "oauth", access: "tok-1", refresh: "r-1" });
    const config: MCPServerConfig = {
      type: "http",
      url: http.url,
      headers: { authorization: "Bearer stale", "X-Team": "MCP_NATIVE_A39_TEAM" },
      auth: { type: "oauth", credentialId: "cred", tokenUrl: issuer.url, clientId: "omp-agent" },
    };
    expect(manager.hasRefreshableCredential(config)).toBe(true);
    const events: Event[] = [];
    await manager.connectServers({ remote: config }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "remote"), 8000)).toBe(true);
    expect(events.at(-1)).toEqual({ type: "connected", serverName: "remote" });
    const whoami = manager.toolsOf("remote").find((t) => t.mcpToolName === "whoami")!;
    expect(whoami.name).toBe("mcp__remote_whoami");
    const seen = JSON.parse(text(await whoami.execute()));
    // One Authorization header (setGeneratedHeader replaced "authorization"), the value resolved.
    expect(seen.authorization).toBe("Bearer tok-1");
    expect(seen["x-team"]).toBe("platform");
    expect(manager.credentialCalls).toEqual([{ credentialId: "cred", forceRefresh: false, refreshed: false }]);
    expect(issuer.forms).toHaveLength(0);
    // The server moves on to another token: the next call is refused once, then refreshed.
    token.current = "tok-2";
    const after = JSON.parse(text(await whoami.execute()));
    expect(after.authorization).toBe("Bearer tok-2");
    expect(after["x-team"]).toBe("platform");
    expect(issuer.forms.map((f) => Object.fromEntries(f))).toEqual([{ grant_type: "refresh_token", refresh_token: "r-1", client_id: "omp-agent" }]);
    expect(manager.authStorage.get("cred")).toMatchObject({ access: "tok-2", refresh: "r-2" });
    expect(manager.credentialCalls.at(-1)).toEqual({ credentialId: "cred", forceRefresh: true, refreshed: true });
    expect(http.received.some((r) => r.body === null && r.headers.authorization === "Bearer tok-1")).toBe(true);
    // A10: the refreshed headers replace the configured ones: later calls carry them at once.
    const refused = http.received.filter((r) => r.body === null).length;
    const later = JSON.parse(text(await whoami.execute()));
    expect(later.authorization).toBe("Bearer tok-2");
    expect(http.received.filter((r) => r.body === null).length).toBe(refused);
    expect(issuer.forms).toHaveLength(1);
    // A34/A37: a reconnect is prepared and wired like a first connect: the stored token goes
    // in, and a 401 on the new connection refreshes again.
    const reconnected = await manager.reconnectServer("remote", { manual: true });
    expect(reconnected).toBeTruthy();
    token.current = "tok-3";
    const renewed = manager.toolsOf("remote").find((t) => t.mcpToolName === "whoami")!;
    expect(JSON.parse(text(await renewed.execute())).authorization).toBe("Bearer tok-3");
    expect(issuer.forms.map((f) => f.get("refresh_token"))).toEqual(["r-1", "r-2"]);
    // Without a refresh token nothing is refreshable.
    manager.authStorage.set("plain", { type: "oauth", access: "x" });
    expect(manager.hasRefreshableCredential({ ...config, auth: { type: "oauth", credentialId: "plain", tokenUrl: issuer.url } })).toBe(false);
    // Stdio servers get the token in env.
    const bare: MCPStdioServerConfig = { command: "srv", auth: { type: "oauth", credentialId: "plain" } };
    const stdio = await manager.resolveCredentials(bare);
    expect(stdio.env).toEqual({ OAUTH_ACCESS_TOKEN: "x" });
  });
});

/** A server on 127.0.0.1 that answers every request with `status` and `Location: location`. */
async function startRedirector(status: number, location: string) {
  const hits: Array<{ method: string; key: string | null }> = [];
  const httpServer = createServer(async (req, res) => {
    for await (const _ of req);
    hits.push({ method: req.method ?? "", key: (req.headers["x-key"] as string | undefined) ?? null });
    res.writeHead(status, { Location: location }).end();
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => httpServer.close(() => resolve())));
  return { url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`, hits };
}

describe("A24 origin-locked headers through the agent's manager", () => {
  it("A24: a 307 to another origin is followed without the configured headers", async () => {
    const target = await startHttpFixture();
    cleanups.push(() => target.close());
    // localhost vs 127.0.0.1: another origin, the same fixture.
    const redirector = await startRedirector(307, target.url.replace("127.0.0.1", "localhost"));
    const manager = agent();
    const events: Event[] = [];
    const config: MCPServerConfig = { type: "http", url: redirector.url, headers: { "X-Key": "secret" }, headerPolicy: "origin-locked" };
    await manager.connectServers({ locked: config }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "locked"), 8000)).toBe(true);
    expect(redirector.hits[0]).toEqual({ method: "POST", key: "secret" });
    expect(target.received.length).toBeGreaterThan(0);
    expect(target.received.map((r) => r.headers["x-key"] ?? null)).toEqual(target.received.map(() => null));
  });

  it("A24: a 302 answering a POST is refused, not followed", async () => {
    const target = await startHttpFixture();
    cleanups.push(() => target.close());
    const redirector = await startRedirector(302, target.url);
    const manager = agent();
    const events: Event[] = [];
    const config: MCPServerConfig = { type: "http", url: redirector.url, headers: { "X-Key": "secret" }, headerPolicy: "origin-locked" };
    await manager.connectServers({ locked: config }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "locked"), 8000)).toBe(true);
    expect(events.at(-1)).toMatchObject({
      type: "failed",
      serverName: "locked",
      error: expect.stringContaining("HTTP 302: server redirected a POST request; refusing to follow"),
    });
    expect(target.received).toEqual([]);
  });
});

describe("A9 the timeout shim", () => {
  it("A9: setTimeoutResolver(resolveMCPTimeoutMs): OMP_MCP_TIMEOUT_MS wins over a server's timeout; 0 is none; invalid values are ignored", async () => {
    const saved = process.env.OMP_MCP_TIMEOUT_MS;
    cleanups.push(() => (saved === undefined ? delete process.env.OMP_MCP_TIMEOUT_MS : (process.env.OMP_MCP_TIMEOUT_MS = saved)));
    delete process.env.OMP_MCP_TIMEOUT_MS;
    expect(resolveMCPTimeoutMs()).toBe(30_000);
    expect(resolveMCPTimeoutMs(1234)).toBe(1234);
    process.env.OMP_MCP_TIMEOUT_MS = "-5";
    expect(resolveMCPTimeoutMs(1234)).toBe(1234);
    process.env.OMP_MCP_TIMEOUT_MS = "0";
    expect(resolveMCPTimeoutMs(1234)).toBe(0);
    const manager = agent();
    const events: Event[] = [];
    delete process.env.OMP_MCP_TIMEOUT_MS;
    await manager.connectServers({ s: { ...fx(), timeout: 10_000 } }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    const slow = manager.toolsOf("s").find((t) => t.mcpToolName === "slow")!;
    process.env.OMP_MCP_TIMEOUT_MS = "300";
    const started = Date.now();
    await expect(slow.execute({ ms: 2000 })).rejects.toThrow("Request timeout after 300ms");
    expect(Date.now() - started).toBeLessThan(1500);
    delete process.env.OMP_MCP_TIMEOUT_MS;
    expect(text(await slow.execute({ ms: 400 }))).toBe("slow done");
  });
});

describe("A39 discovery and lifecycle", () => {
  it("A31/A38: createMCPManager discovers through the agent's loadConfigs (filterBrowser passed on), onStatus hears it; a loadConfigs failure is failed for .mcp.json", async () => {
    const dir = scratch();
    const path = agentMCPConfigPath(dir);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      JSON.stringify({
        $schema: native.MCP_CONFIG_SCHEMA_URL,
        mcpServers: {
          alpha: fx(),
          browser: fx(),
          exa: { command: "exa-mcp", env: { EXA_API_KEY: "exa-key" } },
          off: { ...fx(), enabled: false },
          back: { ...fx(), enabled: false },
        },
        enabledServers: ["back"],
      }),
    );
    const events: Event[] = [];
    const { manager, result } = await createMCPManager(dir, { filterBrowser: true, onStatus: (e) => events.push(e) });
    managers.push(manager);
    expect(manager).toBeInstanceOf(AgentMCPManager);
    expect(manager.discoverCalls).toHaveLength(1);
    expect(manager.discoverCalls[0].filterBrowser).toBe(true);
    expect(result.exaApiKeys).toEqual(["exa-key"]);
    expect(events[0]).toEqual({ type: "connecting", serverNames: ["alpha", "back"] });
    expect(await waitFor(() => settled(events, "alpha") && settled(events, "back"), 8000)).toBe(true);
    expect(manager.getAllServerNames().sort()).toEqual(["alpha", "back"]);
    expect(manager.getSource("alpha")).toEqual({ provider: "omp", providerName: "OMP", path, level: "project" });
    writeFileSync(path, "{ not json");
    const failed: Event[] = [];
    const error = await manager.discoverAndConnect({ onStatus: (e) => failed.push(e) }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect(failed).toEqual([{ type: "failed", serverName: ".mcp.json", error: (error as Error).message }]);
  });

  it("A36: disconnectAll closes every server (processes gone), without a tools-changed call", async () => {
    const manager = agent();
    const a = counted();
    const b = counted();
    const events: Event[] = [];
    await manager.connectServers({ a: a.config, b: b.config }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "a") && settled(events, "b"), 8000)).toBe(true);
    expect(manager.getConnectedServers().sort()).toEqual(["a", "b"]);
    const pids = [...a.pidList(), ...b.pidList()];
    expect(pids).toHaveLength(2);
    let changes = 0;
    manager.setOnToolsChanged(() => void changes++);
    await manager.disconnectAll();
    expect(manager.getConnectedServers()).toEqual([]);
    expect(manager.getConnectionStatus("a")).toBe("disconnected");
    expect(manager.getTools()).toEqual([]);
    expect(await waitFor(() => pids.every((pid) => !alive(pid)), 3000)).toBe(true);
    await sleep(100);
    expect(changes).toBe(0);
    expect(manager.reconnects).toEqual([]);
  });
});
