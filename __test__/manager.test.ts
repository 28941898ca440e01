// SPEC §8 (M1–M11): MCPManager against real fixture servers (stdio-server.mjs, the HTTP
// fixture), with in-memory tool caches and JS subclasses; no mocks of the addon.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type {
  MCPHttpServerConfig,
  MCPLogger,
  MCPManager,
  MCPManagerOptions,
  MCPServerConfig,
  MCPServerConnection,
  MCPSseServerConfig,
  MCPStdioServerConfig,
  MCPTextContent,
  MCPTool,
  MCPToolCache,
  MCPToolCallResult,
  MCPToolDefinition,
  SourceMeta,
  StdioTransport,
} from "../index.js";
import { startHttpFixture } from "./fixtures/http-server";
import { alive, history, native, server, sleep, waitFor } from "./helpers";

// ---- helpers ----

/** A stdio config for the fixture server with the given flags. */
const fx = (...flags: string[]): MCPStdioServerConfig => ({ command: process.execPath, args: [server, ...flags] });

const source = (path: string, level: SourceMeta["level"] = "project"): SourceMeta => ({ provider: "test", providerName: "Test provider", path, level });

/** The fixture's tool definitions, as tools/list gives them. */
let fixtureTools: MCPToolDefinition[] = [];
beforeAll(async () => {
  const connection = await native.connectToServer("probe", fx());
  fixtureTools = await native.listTools(connection);
  await connection.transport.close();
});
/** The manager's tool names for the fixture on a server named `server` (lowercase letters only). */
const expectedNames = (serverName: string) => fixtureTools.map((t) => `mcp_${serverName}_${t.name}`).sort();
const namesOf = (tools: { name: string }[]) => tools.map((t) => t.name).sort();
const toolsOf = <T extends { mcpServerName: string }>(tools: T[], serverName: string) => tools.filter((t) => t.mcpServerName === serverName);
const textOf = (result: MCPToolCallResult) => (result.content[0] as MCPTextContent).text;
const pidOf = (connection: MCPServerConnection | undefined) => (connection?.transport as StdioTransport | undefined)?.pid;
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
const sorted = (names: string[]) => [...names].sort();

/** The rejection of `promise` (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error) => error,
  );
}

/** A tool cache in memory that records every call (W5: it sees the caller's config objects). */
class MemoryCache implements MCPToolCache {
  readonly entries = new Map<string, MCPToolDefinition[]>();
  readonly gets: [string, MCPServerConfig][] = [];
  readonly sets: [string, MCPServerConfig, MCPToolDefinition[]][] = [];
  async get(serverName: string, config: MCPServerConfig) {
    this.gets.push([serverName, config]);
    return this.entries.get(serverName) ?? null;
  }
  async set(serverName: string, config: MCPServerConfig, tools: MCPToolDefinition[]) {
    this.sets.push([serverName, config, tools]);
    this.entries.set(serverName, tools);
  }
}

function recordingLogger() {
  const calls: { level: string; message: string; context?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, context?: Record<string, unknown>) => calls.push({ level, message, context });
  const logger: MCPLogger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { logger, calls, errors: () => calls.filter((c) => c.level === "error") };
}

/** Records every change of a server's status, sampled every 5 ms and once more at stop(). */
function statusTrail(manager: MCPManager<any>, name: string) {
  const seen: string[] = [manager.getConnectionStatus(name)];
  const sample = () => {
    const status = manager.getConnectionStatus(name);
    if (seen[seen.length - 1] !== status) seen.push(status);
  };
  const timer = setInterval(sample, 5);
  return {
    seen,
    stop: () => {
      clearInterval(timer);
      sample();
    },
  };
}

/** A JS MCPTransport test double (C5) whose close() fails. */
class FakeTransport {
  connected = true;
  closes = 0;
  onClose?: () => void;
  onError?: (error: Error) => void;
  onNotification?: (method: string, params: unknown) => void;
  async request<T>(method: string, params?: Record<string, unknown>): Promise<T> {
    if (method === "tools/list") return { tools: [{ name: "faketool", inputSchema: { type: "object" } }] } as T;
    if (method === "tools/call") return { content: [{ type: "text", text: `fake ${(params as any).name}` }] } as T;
    throw new Error(`unexpected ${method}`);
  }
  async notify() {}
  async close() {
    this.closes++;
    this.connected = false;
    throw new Error("close failed on purpose");
  }
}

let tmp = "";
const managers: MCPManager<any>[] = [];
const envNames: string[] = [];
beforeEach(() => {
  tmp = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-manager-")));
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  for (const name of envNames.splice(0)) delete process.env[name];
  rmSync(tmp, { recursive: true, force: true });
});
function setEnv(name: string, value: string) {
  envNames.push(name);
  process.env[name] = value;
}

/** A manager closed after the test. */
function makeManager<T = MCPTool>(options?: MCPManagerOptions<T>, cache: MCPToolCache | null = null, cwd = tmp): MCPManager<T> {
  // The v12 suite: the behaviour `compat: "v12"` keeps (A40).
  const manager = new native.MCPManager<T>(cwd, cache, { compat: "v12", ...options });
  managers.push(manager);
  return manager;
}
function track<M extends MCPManager<any>>(manager: M): M {
  managers.push(manager);
  return manager;
}

// ---- M1 connectServers ----

describe("M1 connectServers", () => {
  it("M1: connects the servers in parallel and returns their tools, no errors, the connected names and exaApiKeys []", async () => {
    const m = makeManager();
    const result = await m.connectServers({ alpha: fx(), beta: fx() }, {});
    expect(result.errors).toBeInstanceOf(Map);
    expect(result.errors.size).toBe(0);
    expect(sorted(result.connectedServers)).toEqual(["alpha", "beta"]);
    expect(result.exaApiKeys).toEqual([]);
    expect(namesOf(result.tools)).toEqual(sorted([...expectedNames("alpha"), ...expectedNames("beta")]));
    expect(namesOf(m.getTools())).toEqual(namesOf(result.tools));
    expect(m.getConnectionStatus("alpha")).toBe("connected");
    expect(m.getConnectionStatus("beta")).toBe("connected");
  });

  it("M1: onConnecting is called once, synchronously, with exactly the names being connected", async () => {
    const m = makeManager();
    const first: string[][] = [];
    const pending = m.connectServers({ good: fx(), invalid: { command: "" }, other: fx() }, {}, (names) => first.push([...names]));
    // Synchronously, before anything was awaited.
    expect(first.map(sorted)).toEqual([["good", "other"]]);
    const result = await pending;
    expect(first).toHaveLength(1);
    expect(sorted(result.connectedServers)).toEqual(["good", "other"]);
    expect([...result.errors.keys()]).toEqual(["invalid"]);

    // A pending server and an already-connected one are not reported again.
    const pidFile = join(tmp, "slow.pids");
    const second: string[][] = [];
    const slowPending = m.connectServers({ slow: fx("--init-delay=800", `--pid-file=${pidFile}`) }, {}, (names) => second.push([...names]));
    expect(second).toEqual([["slow"]]);
    const third: string[][] = [];
    const mixed = m.connectServers(
      { good: fx(), slow: fx("--init-delay=800", `--pid-file=${pidFile}`), fresh: fx() },
      {},
      (names) => third.push([...names]),
    );
    expect(third).toEqual([["fresh"]]);
    const mixedResult = await mixed;
    expect(mixedResult.connectedServers).toEqual(expect.arrayContaining(["good", "fresh"]));
    expect(namesOf(toolsOf(mixedResult.tools, "good"))).toEqual(expectedNames("good"));
    expect(namesOf(toolsOf(mixedResult.tools, "fresh"))).toEqual(expectedNames("fresh"));
    await slowPending;
    expect(m.getConnectionStatus("slow")).toBe("connected");
    expect(lines(pidFile)).toHaveLength(1); // the pending server was not started twice

    // Only already-connected servers: no onConnecting, and their tools are in the result.
    const fourth: string[][] = [];
    const again = await m.connectServers({ good: fx() }, {}, (names) => fourth.push(names));
    expect(fourth).toEqual([]);
    expect(again.connectedServers).toEqual(["good"]);
    expect(namesOf(again.tools)).toEqual(expectedNames("good"));
    expect(again.errors.size).toBe(0);
  });

  it("M1/M3/W3: options.connect gets the resolved config; the connection keeps the caller's config object and _source, one object everywhere", async () => {
    setEnv("MCP_NATIVE_TEST_M1_VAR", "from-env");
    const connectCalls: [string, MCPServerConfig][] = [];
    const liveConnections: MCPServerConnection[] = [];
    const m = makeManager<{ server: string; tool: string }>({
      connect: async (name, config) => {
        connectCalls.push([name, config]);
        return native.connectToServer(name, config);
      },
      toolFactory: {
        live: (connection, tools) => {
          liveConnections.push(connection);
          return tools.map((t) => ({ server: connection.name, tool: t.name }));
        },
        deferred: () => [],
      },
    });
    // W5: explicit undefined fields are accepted.
    const config: MCPStdioServerConfig = {
      command: process.execPath,
      args: [server],
      env: { GREETING: "!echo hello", FROM: "MCP_NATIVE_TEST_M1_VAR" },
      cwd: undefined,
      timeout: undefined,
    };
    const src = source("/project/.mcp.json");
    const result = await m.connectServers({ fx: config }, { fx: src });
    expect(connectCalls).toHaveLength(1);
    expect(connectCalls[0][0]).toBe("fx");
    expect(connectCalls[0][1]).not.toBe(config);
    expect((connectCalls[0][1] as MCPStdioServerConfig).env).toEqual({ GREETING: "hello", FROM: "from-env" });
    expect(config.env).toEqual({ GREETING: "!echo hello", FROM: "MCP_NATIVE_TEST_M1_VAR" });

    const connection = m.getConnection("fx")!;
    expect(connection.name).toBe("fx");
    expect(connection.config).toBe(config);
    expect(connection._source).toEqual(src);
    expect(m.getSource("fx")).toEqual(src);
    expect(await m.waitForConnection("fx")).toBe(connection);
    expect(liveConnections).toHaveLength(1);
    expect(liveConnections[0]).toBe(connection);
    expect(result.tools).toEqual(fixtureTools.map((t) => ({ server: "fx", tool: t.name })));
    expect(m.getTools()).toEqual(result.tools);
  });

  it("M1/W3: sources may be a Map; a later call with new sources updates _source of a connected server without reconnecting", async () => {
    const m = makeManager();
    const config = fx();
    const first = source("/a/.mcp.json", "user");
    const second = source("/b/.mcp.json", "project");
    await m.connectServers({ fx: config }, new Map([["fx", first]]));
    const connection = m.getConnection("fx")!;
    const pid = pidOf(connection);
    expect(connection._source).toEqual(first);
    expect(m.getSource("fx")).toEqual(first);
    await m.connectServers({ fx: config }, { fx: second });
    expect(m.getConnection("fx")).toBe(connection);
    expect(pidOf(m.getConnection("fx"))).toBe(pid);
    expect(connection._source).toEqual(second);
    expect(m.getSource("fx")).toEqual(second);
  });

  it("M1: instance methods are ordinary prototype methods, so vi.spyOn works on a manager", async () => {
    const methods = [
      "setAuthStorage", "prepareConfig", "connectServers", "discoverAndConnect", "getTools", "getConnection",
      "getConnectionStatus", "getSource", "waitForConnection", "getConnectedServers", "getAllServerNames",
      "disconnectServer", "disconnectAll", "refreshServerTools", "refreshAllTools",
    ];
    for (const method of methods) expect(typeof (native.MCPManager.prototype as any)[method]).toBe("function");
    const m = makeManager();
    await m.connectServers({ fx: fx() });
    const spy = vi.spyOn(m, "getTools").mockReturnValue([]);
    expect(m.getTools()).toEqual([]);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
    expect(namesOf(m.getTools())).toEqual(expectedNames("fx"));
  });

  it("M1/C1: options.client is passed to every connect (clientInfo, protocol version)", async () => {
    const m = makeManager({ client: { clientInfo: { name: "the-agent", version: "9.9.9" }, protocolVersion: "2025-06-18" } });
    await m.connectServers({ one: fx(), two: fx() }, {});
    for (const name of ["one", "two"]) {
      const connection = m.getConnection(name)!;
      expect(connection.protocolVersion).toBe("2025-06-18");
      const [init] = await history(connection.transport as StdioTransport);
      expect(init.params.clientInfo).toEqual({ name: "the-agent", version: "9.9.9" });
      expect(init.params.protocolVersion).toBe("2025-06-18");
    }
  });

  it("M1: connect failures go to errors with the Error's message; the others still connect", async () => {
    const m = makeManager();
    const missing = { command: "mcp-native-no-such-binary" };
    const expected: string = await native.connectToServer("missing", missing).then(
      () => "connected?!",
      (e) => e.message,
    );
    const result = await m.connectServers({ ok: fx(), missing, refused: fx("--init-error") }, {});
    expect(result.errors.get("missing")).toBe(expected);
    expect(result.errors.get("refused")).toBe("MCP error -32603: Initialization refused");
    expect(result.errors.size).toBe(2);
    expect(result.connectedServers).toEqual(["ok"]);
    expect(namesOf(result.tools)).toEqual(expectedNames("ok"));
    expect(m.getConnectionStatus("missing")).toBe("disconnected");
    expect(m.getConnectionStatus("refused")).toBe("disconnected");
    expect(m.getConnection("refused")).toBeUndefined();
  });

  it("M1: 20 servers connect in parallel (wall time logged against the slowest server alone)", async () => {
    const names = Array.from({ length: 20 }, (_, i) => `par${String.fromCharCode(97 + i)}`);
    const slowestDelay = 19 * 20;
    const aloneStarted = Date.now();
    const alone = await native.connectToServer("alone", fx(`--init-delay=${slowestDelay}`));
    await native.listTools(alone);
    const aloneMs = Date.now() - aloneStarted;
    await alone.transport.close();

    const m = makeManager();
    const configs = Object.fromEntries(names.map((name, i) => [name, fx(`--init-delay=${i * 20}`)]));
    const started = Date.now();
    const result = await m.connectServers(configs, {});
    const wallMs = Date.now() - started;
    console.log(`M1: 20 servers connected in parallel in ${wallMs} ms; the slowest of them (init delay ${slowestDelay} ms) alone took ${aloneMs} ms`);
    expect(result.errors.size).toBe(0);
    expect(sorted(result.connectedServers)).toEqual(names);
    expect(result.tools).toHaveLength(20 * fixtureTools.length);
    for (const name of names) expect(namesOf(toolsOf(result.tools, name))).toEqual(expectedNames(name));
    expect(sorted(m.getConnectedServers())).toEqual(names);
    expect(wallMs).toBeLessThan(20_000); // no hang; not a performance assertion
  });
});

// ---- M2 validation ----

describe("M2 validation", () => {
  it("M2/W8: invalid configs get the agent's messages (several joined with '; '), nothing is connected, no onConnecting", async () => {
    const m = makeManager();
    const calls: string[][] = [];
    const result = await m.connectServers(
      {
        both: { command: "node", url: "http://127.0.0.1:1/mcp" } as any,
        nocmd: {} as any,
        emptycmd: { command: "" },
        nourl: { type: "http" } as any,
        emptyurl: { type: "sse", url: "" },
        weird: { type: "websocket", url: "ws://127.0.0.1:1" } as any,
        several: { type: "websocket", command: "node", url: "ws://127.0.0.1:1" } as any,
      },
      {},
      (names) => calls.push(names),
    );
    const both = `both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`;
    expect(Object.fromEntries(result.errors)).toEqual({
      both: `Server "both": ${both}`,
      nocmd: `Server "nocmd": stdio server requires "command" field`,
      emptycmd: `Server "emptycmd": stdio server requires "command" field`,
      nourl: `Server "nourl": http server requires "url" field`,
      emptyurl: `Server "emptyurl": sse server requires "url" field`,
      weird: `Server "weird": unknown server type "websocket"`,
      several: `Server "several": ${both}; Server "several": unknown server type "websocket"`,
    });
    expect(calls).toEqual([]);
    expect(result.connectedServers).toEqual([]);
    expect(result.tools).toEqual([]);
    expect(m.getConnectionStatus("both")).toBe("disconnected");
  });
});
describe("M6 getAllServerNames", () => {
  it("M6/M1: a server whose config failed validation still has its recorded source and its name", async () => {
    const m = makeManager();
    const src = source("/bad/.mcp.json");
    const result = await m.connectServers({ bad: { command: "" } as any, good: fx() }, { bad: src });
    expect(result.errors.get("bad")).toBe('Server "bad": stdio server requires "command" field');
    expect(m.getSource("bad")).toEqual(src);
    expect(sorted(m.getAllServerNames())).toEqual(["bad", "good"]);
    expect(m.getConnectionStatus("bad")).toBe("disconnected");
    await m.disconnectServer("bad");
    expect(m.getAllServerNames()).toEqual(["good"]);
  });
});


// ---- M3 config resolution ----

describe("M3 prepareConfig", () => {
  it("M3: env values: !command → trimmed stdout (failing or empty → dropped), else a set non-empty env var, else the literal; the original is untouched", async () => {
    setEnv("MCP_NATIVE_TEST_TOKEN", "env-value");
    setEnv("MCP_NATIVE_TEST_EMPTY", "");
    delete process.env.MCP_NATIVE_TEST_UNSET;
    const m = makeManager();
    const config: MCPStdioServerConfig = {
      command: "some-server",
      args: ["--flag"],
      env: {
        CMD: "!echo '  from shell  '",
        FAILS: "!echo partial; exit 3",
        EMPTY_OUT: "!true",
        VAR: "MCP_NATIVE_TEST_TOKEN",
        EMPTY_VAR: "MCP_NATIVE_TEST_EMPTY",
        UNSET: "MCP_NATIVE_TEST_UNSET",
        LITERAL: "plain value",
      },
      timeout: 1234,
    };
    const snapshot = structuredClone(config);
    const resolved = await m.prepareConfig(config);
    expect(resolved).not.toBe(config);
    expect(config).toEqual(snapshot);
    expect(resolved).toEqual({
      ...snapshot,
      env: { CMD: "from shell", VAR: "env-value", EMPTY_VAR: "MCP_NATIVE_TEST_EMPTY", UNSET: "MCP_NATIVE_TEST_UNSET", LITERAL: "plain value" },
    });
  });

  it("M3: header values of http and sse configs resolve the same way", async () => {
    setEnv("MCP_NATIVE_TEST_HEADER", "header-from-env");
    const m = makeManager();
    for (const type of ["http", "sse"] as const) {
      const config = {
        type,
        url: "http://127.0.0.1:1/mcp",
        headers: { "X-Cmd": "!printf 'shell-%s' value", "X-Env": "MCP_NATIVE_TEST_HEADER", "X-Gone": "!exit 1", "X-Literal": "literal-header" },
      };
      const snapshot = structuredClone(config);
      const resolved = await m.prepareConfig(config);
      expect(config).toEqual(snapshot);
      expect(resolved).toEqual({
        type,
        url: "http://127.0.0.1:1/mcp",
        headers: { "X-Cmd": "shell-value", "X-Env": "header-from-env", "X-Literal": "literal-header" },
      });
    }
  });

  it("M3/W6: OAuth credentials from setAuthStorage (get may return a Promise) become Authorization (http/sse) or OAUTH_ACCESS_TOKEN (stdio)", async () => {
    const m = makeManager();
    const asked: string[] = [];
    m.setAuthStorage({
      get: async (id: string) => {
        asked.push(id);
        return id === "cred" ? { type: "oauth", access: "tok-async" } : id === "key" ? { type: "apikey", key: "k" } : undefined;
      },
    });
    const http = await m.prepareConfig({ type: "http", url: "http://127.0.0.1:1/mcp", headers: { "X-Other": "other-value" }, auth: { type: "oauth", credentialId: "cred" } });
    expect(http.headers).toEqual({ "X-Other": "other-value", Authorization: "Bearer tok-async" });
    const sseConfig: MCPSseServerConfig = { type: "sse", url: "http://127.0.0.1:1/sse", auth: { type: "oauth", credentialId: "cred" } };
    const sse = await m.prepareConfig(sseConfig);
    expect(sse.headers).toEqual({ Authorization: "Bearer tok-async" });
    const stdio = await m.prepareConfig({ command: "srv", env: { KEEP: "kept-value" }, auth: { type: "oauth", credentialId: "cred" } });
    expect(stdio.env).toEqual({ KEEP: "kept-value", OAUTH_ACCESS_TOKEN: "tok-async" });
    expect(asked).toEqual(["cred", "cred", "cred"]);

    // Unknown credential, a non-oauth credential, or apikey auth: nothing is injected.
    const unknown = await m.prepareConfig({ type: "http", url: "http://127.0.0.1:1/mcp", headers: {}, auth: { type: "oauth", credentialId: "nope" } });
    expect(unknown.headers).toEqual({});
    const notOauth = await m.prepareConfig({ command: "srv", env: {}, auth: { type: "oauth", credentialId: "key" } });
    expect(notOauth.env).toEqual({});
    const apikey = await m.prepareConfig({ type: "http", url: "http://127.0.0.1:1/mcp", headers: {}, auth: { type: "apikey", credentialId: "cred" } });
    expect(apikey.headers).toEqual({});

    // A synchronous storage works too.
    m.setAuthStorage({ get: () => ({ type: "oauth", access: "tok-sync" }) });
    const syncConfig: MCPHttpServerConfig = { type: "http", url: "http://127.0.0.1:1/mcp", auth: { type: "oauth", credentialId: "any" } };
    const sync = await m.prepareConfig(syncConfig);
    expect(sync.headers).toEqual({ Authorization: "Bearer tok-sync" });
  });

  it("M3/W6: options.resolveConfigValue replaces the built-in resolution, the injected OAuth value included", async () => {
    const values: string[] = [];
    const m = makeManager({
      resolveConfigValue: async (value) => {
        values.push(value);
        return value === "drop-me" ? undefined : `R(${value})`;
      },
    });
    m.setAuthStorage({ get: () => ({ type: "oauth", access: "tok" }) });
    const resolved = await m.prepareConfig({
      type: "sse",
      url: "http://127.0.0.1:1/sse",
      headers: { A: "!echo never-run", B: "drop-me" },
      auth: { type: "oauth", credentialId: "c" },
    });
    expect(resolved.headers).toEqual({ A: "R(!echo never-run)", Authorization: "R(Bearer tok)" });
    expect(sorted(values)).toEqual(sorted(["!echo never-run", "drop-me", "Bearer tok"]));
    const stdio = await m.prepareConfig({ command: "srv", env: { X: "x-value" } });
    expect(stdio.env).toEqual({ X: "R(x-value)" });
  });

  it("M3: a !command runs once per process: concurrent identical commands share one run, later ones use the cached result", async () => {
    const runs = join(tmp, "runs.log");
    const token = randomUUID();
    const command = `!echo run >> '${runs}'; echo cached-${token}`;
    const first = makeManager();
    const [a, b] = await Promise.all([first.prepareConfig({ command: "x", env: { A: command } }), first.prepareConfig({ command: "x", env: { B: command } })]);
    const later = await makeManager().prepareConfig({ command: "x", env: { C: command } });
    expect(a.env).toEqual({ A: `cached-${token}` });
    expect(b.env).toEqual({ B: `cached-${token}` });
    expect(later.env).toEqual({ C: `cached-${token}` });
    expect(readFileSync(runs, "utf8")).toBe("run\n");
  });

  it("M3/W1: end to end, a stdio server gets the resolved env (OAuth included) while the connection keeps the original config", async () => {
    setEnv("MCP_NATIVE_TEST_E2E", "from-host-env");
    const m = makeManager();
    m.setAuthStorage({ get: async () => ({ type: "oauth", access: "stdio-token" }) });
    const config: MCPStdioServerConfig = {
      ...fx(),
      env: { SECRET: "!echo s3cret", HOSTVAR: "MCP_NATIVE_TEST_E2E", DROPPED: "!exit 1" },
      auth: { type: "oauth", credentialId: "cred" },
    };
    const result = await m.connectServers({ envfx: config }, {});
    expect(result.connectedServers).toEqual(["envfx"]);
    const envTool = result.tools.find((t) => t.name === "mcp_envfx_env")!;
    const read = async (name: string) => JSON.parse(textOf(await envTool.execute({ name }))).value;
    expect(await read("SECRET")).toBe("s3cret");
    expect(await read("HOSTVAR")).toBe("from-host-env");
    expect(await read("OAUTH_ACCESS_TOKEN")).toBe("stdio-token");
    expect(await read("DROPPED")).toBe(null);
    expect(m.getConnection("envfx")!.config).toBe(config);
    expect(config.env!.SECRET).toBe("!echo s3cret");
  });

  it("M3: end to end, an HTTP server sees the resolved headers and the OAuth bearer", async () => {
    const f = await startHttpFixture();
    const m = makeManager();
    try {
      m.setAuthStorage({ get: () => ({ type: "oauth", access: "web-token" }) });
      const config: MCPServerConfig = {
        type: "http",
        url: f.url,
        headers: { "X-Api-Key": "!echo from-shell", "X-Plain": "plain-header" },
        auth: { type: "oauth", credentialId: "web" },
      };
      const result = await m.connectServers({ web: config }, {});
      expect(result.errors.size).toBe(0);
      expect(result.connectedServers).toEqual(["web"]);
      const init = f.received.find((r) => r.body?.method === "initialize")!;
      expect(init.headers["x-api-key"]).toBe("from-shell");
      expect(init.headers["x-plain"]).toBe("plain-header");
      expect(init.headers.authorization).toBe("Bearer web-token");
      const whoami = result.tools.find((t) => t.name === "mcp_web_whoami")!;
      const seen = JSON.parse(textOf(await whoami.execute({})));
      expect(seen["x-api-key"]).toBe("from-shell");
      expect(seen.authorization).toBe("Bearer web-token");
      expect(m.getConnection("web")!.config).toBe(config);
    } finally {
      await m.disconnectAll();
      await f.close();
    }
  });

  it("M3/W1: connectServers resolves through this.prepareConfig, so a subclass override takes effect", async () => {
    const prepared: string[] = [];
    class Sub extends native.MCPManager {
      override async prepareConfig<T extends MCPServerConfig>(config: T): Promise<T> {
        const resolved = await super.prepareConfig(config);
        prepared.push((config as MCPStdioServerConfig).args!.at(-1)!);
        return { ...resolved, env: { ...(resolved as MCPStdioServerConfig).env, INJECTED_BY_SUBCLASS: "yes" } } as T;
      }
    }
    const m = track(new Sub(tmp, null, { compat: "v12" }));
    const result = await m.connectServers({ sub: fx("--marker-sub") }, {});
    expect(prepared).toEqual(["--marker-sub"]);
    const envTool = result.tools.find((t) => t.name === "mcp_sub_env")!;
    expect(JSON.parse(textOf(await envTool.execute({ name: "INJECTED_BY_SUBCLASS" }))).value).toBe("yes");
  });
});

// ---- M4 startup gate and the tool cache ----

describe("M4 startup gate", () => {
  it("M4/W5: a server pending at the gate with cached tools gets deferred tools at once; it later goes live and the cache is written", async () => {
    const cache = new MemoryCache();
    cache.entries.set("late", [{ name: "echo", description: "cached echo", inputSchema: { type: "object" } }]);
    const m = makeManager({ startupTimeoutMs: 100 }, cache);
    const late = fx("--init-delay=1500");
    const quick = fx();
    const result = await m.connectServers({ late, quick }, {});

    expect(result.connectedServers).toEqual(["quick"]);
    expect(result.errors.size).toBe(0);
    expect(m.getConnectionStatus("late")).toBe("connecting");
    const deferred = toolsOf(result.tools, "late");
    expect(deferred.map((t) => [t.name, t.label, t.description, t.mcpServerName, t.mcpToolName, t.deferred])).toEqual([
      ["mcp_late_echo", "late/echo", "cached echo", "late", "echo", true],
    ]);
    expect(toolsOf(result.tools, "quick").every((t) => t.deferred === false)).toBe(true);
    expect(namesOf(toolsOf(result.tools, "quick"))).toEqual(expectedNames("quick"));
    // W5: the cache saw the caller's config object.
    const lateGet = cache.gets.find(([name]) => name === "late")!;
    expect(lateGet[1]).toBe(late);

    // A deferred tool waits for the connection, then calls the tool.
    await expect(deferred[0].execute({ text: "waited" })).resolves.toEqual({ content: [{ type: "text", text: "waited" }] });

    // The late success replaces that server's tools by live ones and writes the cache.
    expect(await waitFor(() => toolsOf(m.getTools(), "late").length === fixtureTools.length && m.getTools().every((t) => !t.deferred), 8000)).toBe(true);
    expect(namesOf(toolsOf(m.getTools(), "late"))).toEqual(expectedNames("late"));
    expect(namesOf(toolsOf(m.getTools(), "quick"))).toEqual(expectedNames("quick"));
    expect(m.getConnectionStatus("late")).toBe("connected");
    expect(await waitFor(() => cache.sets.some(([name]) => name === "late"))).toBe(true);
    const [, lateConfig, lateTools] = cache.sets.find(([name]) => name === "late")!;
    expect(lateConfig).toBe(late);
    expect(lateTools.map((t) => t.name)).toEqual(fixtureTools.map((t) => t.name));
    // The early success was written too.
    const quickSet = cache.sets.find(([name]) => name === "quick")!;
    expect(quickSet[1]).toBe(quick);
    expect(quickSet[2].map((t) => t.name)).toEqual(fixtureTools.map((t) => t.name));
  });

  it("M4: a pending server without cached tools (none, or an empty list) is waited for", async () => {
    const cache = new MemoryCache();
    cache.entries.set("empty", []);
    const m = makeManager({ startupTimeoutMs: 50 }, cache);
    const result = await m.connectServers({ nocache: fx("--init-delay=600"), empty: fx("--init-delay=600") }, {});
    expect(sorted(result.connectedServers)).toEqual(["empty", "nocache"]);
    expect(sorted(cache.gets.map(([name]) => name))).toEqual(["empty", "nocache"]);
    expect(result.tools.every((t) => t.deferred === false)).toBe(true);
    expect(namesOf(result.tools)).toEqual(sorted([...expectedNames("empty"), ...expectedNames("nocache")]));
  });

  it("M4: without a tool cache every server is waited for", async () => {
    const m = makeManager({ startupTimeoutMs: 50 });
    const result = await m.connectServers({ slow: fx("--init-delay=500") }, {});
    expect(result.connectedServers).toEqual(["slow"]);
    expect(namesOf(result.tools)).toEqual(expectedNames("slow"));
    expect(result.tools.every((t) => !t.deferred)).toBe(true);
  });

  it("M4/W7: a deferred server that fails late is logged with its name and error, keeps its deferred tools, which then reject", async () => {
    const cache = new MemoryCache();
    cache.entries.set("broken", [{ name: "echo", inputSchema: { type: "object" } }]);
    const { logger, errors } = recordingLogger();
    const m = makeManager({ startupTimeoutMs: 100, logger }, cache);
    const result = await m.connectServers({ broken: fx("--init-delay=800", "--init-error") }, {});
    expect(result.errors.has("broken")).toBe(false);
    expect(result.connectedServers).toEqual([]);
    expect(result.tools.map((t) => [t.name, t.deferred])).toEqual([["mcp_broken_echo", true]]);

    expect(await waitFor(() => errors().length > 0, 8000)).toBe(true);
    expect(errors()[0].message).toContain("broken");
    expect(errors()[0].message).toContain("Initialization refused");
    expect(m.getConnectionStatus("broken")).toBe("disconnected");
    expect(m.getTools().map((t) => [t.name, t.deferred])).toEqual([["mcp_broken_echo", true]]);
    const error = await rejection(m.getTools()[0].execute({}));
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP server not connected: broken");
  });

  it("M4/M5: toolFactory.deferred gets (serverName, cached tools, getConnection, source); live replaces them with the same connection", async () => {
    const cache = new MemoryCache();
    const cached = [{ name: "echo", inputSchema: { type: "object" as const } }];
    cache.entries.set("later", cached);
    type Made = { kind: "live" | "deferred"; server: string; tool: string };
    const deferredCalls: [string, MCPToolDefinition[], () => Promise<MCPServerConnection>, SourceMeta | undefined][] = [];
    const liveCalls: [MCPServerConnection, MCPToolDefinition[]][] = [];
    const made: Made[] = [];
    const m = makeManager<Made>(
      {
        startupTimeoutMs: 100,
        toolFactory: {
          live(connection, tools) {
            liveCalls.push([connection, tools]);
            return tools.map((t) => ({ kind: "live" as const, server: connection.name, tool: t.name }));
          },
          deferred(serverName, tools, getConnection, src) {
            deferredCalls.push([serverName, tools, getConnection, src]);
            const out = tools.map((t) => ({ kind: "deferred" as const, server: serverName, tool: t.name }));
            made.push(...out);
            return out;
          },
        },
      },
      cache,
    );
    const config = fx("--init-delay=1200");
    const src = source("/later/.mcp.json", "user");
    const result = await m.connectServers({ later: config }, { later: src });
    expect(result.tools).toEqual([{ kind: "deferred", server: "later", tool: "echo" }]);
    expect(result.tools[0]).toBe(made[0]);
    expect(deferredCalls).toHaveLength(1);
    expect(deferredCalls[0][0]).toBe("later");
    expect(deferredCalls[0][1]).toEqual(cached);
    expect(deferredCalls[0][3]).toEqual(src);
    expect(liveCalls).toHaveLength(0);

    const connection = await deferredCalls[0][2]();
    expect(connection).toBe(m.getConnection("later"));
    expect(connection.config).toBe(config);
    expect(connection._source).toEqual(src);
    expect(await waitFor(() => m.getTools().length > 0 && m.getTools().every((t) => t.kind === "live"), 8000)).toBe(true);
    expect(liveCalls).toHaveLength(1);
    expect(liveCalls[0][0]).toBe(connection);
    expect(liveCalls[0][1].map((t) => t.name)).toEqual(fixtureTools.map((t) => t.name));
    expect(m.getTools()).toEqual(fixtureTools.map((t) => ({ kind: "live", server: "later", tool: t.name })));
  });
});

// ---- M5 tools ----

describe("M5 tools", () => {
  it("M5: createMCPToolName and parseMCPToolName follow the agent's rule", () => {
    expect(native.createMCPToolName("GitHub", "create_issue")).toBe("mcp_github_create_issue");
    expect(native.createMCPToolName("github", "github_create_issue")).toBe("mcp_github_create_issue");
    expect(native.createMCPToolName("my-server.v2", "Tool 9 X")).toBe("mcp_my_server_v_tool_x");
    expect(native.createMCPToolName("", "")).toBe("mcp_server_tool");
    expect(native.parseMCPToolName("mcp_github_create_issue")).toEqual({ serverName: "github", toolName: "create_issue" });
    expect(native.parseMCPToolName("github_create_issue")).toBeNull();
    expect(native.parseMCPToolName("read")).toBeNull();
  });

  it("M5: default tools are plain objects with the agent's fields; execute returns the raw tools/call result", async () => {
    const m = makeManager();
    const result = await m.connectServers({ "My-Server": fx() }, {});
    const pick = (t: MCPTool) => ({
      name: t.name,
      label: t.label,
      description: t.description,
      parameters: t.parameters,
      mcpServerName: t.mcpServerName,
      mcpToolName: t.mcpToolName,
      deferred: t.deferred,
    });
    const echo = result.tools.find((t) => t.mcpToolName === "echo")!;
    expect(pick(echo)).toEqual({
      name: "mcp_my_server_echo",
      label: "My-Server/echo",
      description: "Echoes its text argument",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      mcpServerName: "My-Server",
      mcpToolName: "echo",
      deferred: false,
    });
    const add = result.tools.find((t) => t.mcpToolName === "add")!;
    expect(pick(add)).toEqual({
      name: "mcp_my_server_add",
      label: "My-Server/add",
      description: "MCP tool from My-Server",
      parameters: { type: "object", properties: {} },
      mcpServerName: "My-Server",
      mcpToolName: "add",
      deferred: false,
    });
    expect(typeof echo.execute).toBe("function");
    expect(namesOf(result.tools)).toEqual(fixtureTools.map((t) => `mcp_my_server_${t.name}`).sort());
    await expect(echo.execute({ text: "hello" })).resolves.toEqual({ content: [{ type: "text", text: "hello" }] });
    await expect(add.execute({ a: 40, b: 2 })).resolves.toEqual({ content: [{ type: "text", text: "42" }] });
    const rich = result.tools.find((t) => t.mcpToolName === "rich")!;
    await expect(rich.execute({})).resolves.toEqual({
      content: [
        { type: "text", text: "t" },
        { type: "image", data: "aW1n", mimeType: "image/png" },
        { type: "audio", data: "YXVk", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///r", text: "r", mimeType: "text/plain" } },
        { type: "resource_link", uri: "file:///l", name: "l" },
      ],
      structuredContent: { answer: 42 },
      isError: true,
      _meta: { trace: "abc" },
    });
  });

  it("M5: execute passes its AbortSignal on (abort rejects with the reason)", async () => {
    const m = makeManager();
    const result = await m.connectServers({ fx: fx() }, {});
    const slow = result.tools.find((t) => t.mcpToolName === "slow")!;
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    const pending = slow.execute({ ms: 20_000 }, controller.signal);
    await sleep(100);
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    const echo = result.tools.find((t) => t.mcpToolName === "echo")!;
    expect(await rejection(echo.execute({ text: "x" }, AbortSignal.abort(reason)))).toBe(reason);
  });
});

// ---- M6 queries ----

describe("M6 queries", () => {
  it("M6: status, connection, source, waitForConnection and the name lists follow a server from pending to connected", async () => {
    const m = makeManager();
    expect(m.getConnectionStatus("nobody")).toBe("disconnected");
    expect(m.getConnection("nobody")).toBeUndefined();
    expect(m.getSource("nobody")).toBeUndefined();
    const unknown = await rejection(m.waitForConnection("nobody"));
    expect(unknown).toBeInstanceOf(Error);
    expect(unknown.message).toBe("MCP server not connected: nobody");

    const src = source("/slow/.mcp.json");
    const pending = m.connectServers({ slow: fx("--init-delay=1000") }, { slow: src });
    await sleep(100);
    expect(m.getConnectionStatus("slow")).toBe("connecting");
    expect(m.getConnection("slow")).toBeUndefined();
    expect(m.getConnectedServers()).toEqual([]);
    expect(m.getAllServerNames()).toEqual(["slow"]);
    expect(m.getSource("slow")).toEqual(src);
    const waited = m.waitForConnection("slow");
    const connection = await waited;
    expect(connection).toBe(m.getConnection("slow"));
    expect(connection.name).toBe("slow");
    await pending;
    expect(m.getConnectionStatus("slow")).toBe("connected");
    expect(m.getConnectedServers()).toEqual(["slow"]);
    expect(m.getAllServerNames()).toEqual(["slow"]);
    expect(await m.waitForConnection("slow")).toBe(connection);

    await m.connectServers({ other: fx() }, {});
    expect(sorted(m.getConnectedServers())).toEqual(["other", "slow"]);
    expect(sorted(m.getAllServerNames())).toEqual(["other", "slow"]);
    expect(m.getSource("other")).toBeUndefined();
  });
});

// ---- M7 disconnect ----

describe("M7 disconnect", () => {
  it("M7: disconnectServer closes that server, forgets its state and drops its tools; others stay", async () => {
    const m = makeManager();
    await m.connectServers({ one: fx(), two: fx() }, { one: source("/one"), two: source("/two") });
    const pid = pidOf(m.getConnection("one"))!;
    expect(alive(pid)).toBe(true);
    await m.disconnectServer("one");
    expect(alive(pid)).toBe(false);
    expect(m.getConnectionStatus("one")).toBe("disconnected");
    expect(m.getConnection("one")).toBeUndefined();
    expect(m.getSource("one")).toBeUndefined();
    expect(m.getConnectedServers()).toEqual(["two"]);
    expect(m.getAllServerNames()).toEqual(["two"]);
    expect(namesOf(m.getTools())).toEqual(expectedNames("two"));
    expect(await rejection(m.waitForConnection("one"))).toMatchObject({ message: "MCP server not connected: one" });
  });

  it("M7: disconnectServer while the connect is pending: the late connection is closed, not adopted", async () => {
    const m = makeManager();
    const pidFile = join(tmp, "slow.pids");
    const pending = m.connectServers({ slow: fx("--init-delay=1500", `--pid-file=${pidFile}`), other: fx() }, {});
    expect(await waitFor(() => lines(pidFile).length === 1)).toBe(true);
    const pid = Number(lines(pidFile)[0]);
    expect(m.getConnectionStatus("slow")).toBe("connecting");
    await m.disconnectServer("slow");
    expect(m.getConnectionStatus("slow")).toBe("disconnected");

    const result = await pending;
    expect(result.connectedServers).toEqual(["other"]);
    expect(toolsOf(result.tools, "slow")).toEqual([]);
    expect(await waitFor(() => !alive(pid), 6000)).toBe(true);
    expect(m.getConnectionStatus("slow")).toBe("disconnected");
    expect(m.getConnection("slow")).toBeUndefined();
    expect(toolsOf(m.getTools(), "slow")).toEqual([]);
    expect(m.getConnectedServers()).toEqual(["other"]);
    expect(lines(pidFile)).toHaveLength(1);
  });

  it("M7/C5: disconnectAll settles everything and never throws (a JS transport whose close fails, a native one, a pending one)", async () => {
    const fakes: FakeTransport[] = [];
    const m = makeManager({
      connect: async (name, config) => {
        if (name !== "fake") return native.connectToServer(name, config);
        const transport = new FakeTransport();
        fakes.push(transport);
        return { name, config, transport, serverInfo: { name: "fake", version: "1" }, capabilities: { tools: {} } };
      },
    });
    const result = await m.connectServers({ fake: { command: "unused-fake" }, real: fx() }, {});
    expect(sorted(result.connectedServers)).toEqual(["fake", "real"]);
    const fakeTool = result.tools.find((t) => t.name === "mcp_fake_faketool")!;
    await expect(fakeTool.execute({})).resolves.toEqual({ content: [{ type: "text", text: "fake faketool" }] });
    const realPid = pidOf(m.getConnection("real"))!;

    const pidFile = join(tmp, "pending.pids");
    const pending = m.connectServers({ slow: fx("--init-delay=1000", `--pid-file=${pidFile}`) }, {});
    expect(await waitFor(() => lines(pidFile).length === 1)).toBe(true);
    const slowPid = Number(lines(pidFile)[0]);

    await expect(m.disconnectAll()).resolves.toBeUndefined();
    expect(fakes[0].closes).toBe(1);
    expect(m.getTools()).toEqual([]);
    expect(m.getConnectedServers()).toEqual([]);
    expect(m.getAllServerNames()).toEqual([]);
    for (const name of ["fake", "real", "slow"]) expect(m.getConnectionStatus(name)).toBe("disconnected");
    await pending;
    expect(await waitFor(() => !alive(realPid) && !alive(slowPid), 6000)).toBe(true);
    expect(m.getConnectionStatus("slow")).toBe("disconnected");
    expect(m.getTools()).toEqual([]);
    await expect(m.disconnectAll()).resolves.toBeUndefined();
  });
});

// ---- M8 refresh ----

describe("M8 refresh", () => {
  it("M8: refreshServerTools lists again, replaces that server's tools, updates connection.tools and writes the cache", async () => {
    const cache = new MemoryCache();
    const m = makeManager({}, cache);
    const config = fx();
    await m.connectServers({ fx: config, other: fx() }, {});
    expect(m.getTools().some((t) => t.name === "mcp_fx_extra")).toBe(false);
    const toggle = m.getTools().find((t) => t.name === "mcp_fx_toggle_extra")!;
    expect(textOf(await toggle.execute({}))).toBe("true");
    await sleep(300);
    expect(m.getTools().some((t) => t.name === "mcp_fx_extra")).toBe(false); // no autoRefreshTools
    expect(await waitFor(() => cache.sets.length === 2)).toBe(true);

    await m.refreshServerTools("fx");
    expect(namesOf(toolsOf(m.getTools(), "fx"))).toEqual(sorted([...expectedNames("fx"), "mcp_fx_extra"]));
    expect(namesOf(toolsOf(m.getTools(), "other"))).toEqual(expectedNames("other"));
    expect(m.getConnection("fx")!.tools!.map((t) => t.name)).toContain("extra");
    expect(await waitFor(() => cache.sets.length === 3)).toBe(true);
    const [name, setConfig, setTools] = cache.sets[2];
    expect(name).toBe("fx");
    expect(setConfig).toBe(config);
    expect(setTools.map((t) => t.name)).toEqual([...fixtureTools.map((t) => t.name), "extra"]);
    const extra = m.getTools().find((t) => t.name === "mcp_fx_extra")!;
    await expect(extra.execute({})).resolves.toEqual({ content: [{ type: "text", text: "extra tool" }] });
  });

  it("M8/W1: refreshAllTools calls this.refreshServerTools for every server and settles when one fails", async () => {
    const refreshed: string[] = [];
    class Sub extends native.MCPManager {
      override async refreshServerTools(name: string): Promise<void> {
        refreshed.push(name);
        if (name === "bad") throw new Error("refresh failed on purpose");
        return super.refreshServerTools(name);
      }
    }
    const m = track(new Sub(tmp, null, { compat: "v12" }));
    await m.connectServers({ good: fx(), bad: fx() }, {});
    const toggle = m.getTools().find((t) => t.name === "mcp_good_toggle_extra")!;
    await toggle.execute({});
    await expect(m.refreshAllTools()).resolves.toBeUndefined();
    expect(sorted(refreshed)).toEqual(["bad", "good"]);
    expect(m.getTools().some((t) => t.name === "mcp_good_extra")).toBe(true);
    expect(namesOf(toolsOf(m.getTools(), "bad"))).toEqual(expectedNames("bad"));
  });
});

// ---- M9 discovery ----

describe("M9 discoverAndConnect", () => {
  it("M9: without loadConfigs, <cwd>/.mcp.json is read (mcpServers; disabledServers and enabled: false skipped)", async () => {
    writeFileSync(
      join(tmp, ".mcp.json"),
      JSON.stringify({ mcpServers: { alpha: fx(), off: { ...fx(), enabled: false }, skipped: fx() }, disabledServers: ["skipped"] }),
    );
    const m = makeManager();
    expect(m.cwd).toBe(tmp);
    const connecting: string[][] = [];
    const result = await m.discoverAndConnect({ onConnecting: (names) => connecting.push(names) });
    expect(connecting).toEqual([["alpha"]]);
    expect(result.connectedServers).toEqual(["alpha"]);
    expect(result.errors.size).toBe(0);
    expect(result.exaApiKeys).toEqual([]);
    expect(namesOf(result.tools)).toEqual(expectedNames("alpha"));
    expect(m.getConnection("alpha")!.config).toEqual(fx());
    expect(m.getConnectionStatus("off")).toBe("disconnected");
    expect(m.getConnectionStatus("skipped")).toBe("disconnected");
  });

  it("M9: no .mcp.json means no servers and an empty result", async () => {
    const m = makeManager();
    const connecting: string[][] = [];
    const result = await m.discoverAndConnect({ onConnecting: (names) => connecting.push(names) });
    expect(result).toEqual({ tools: [], errors: new Map(), connectedServers: [], exaApiKeys: [] });
    expect(connecting).toEqual([]);
    expect(m.getAllServerNames()).toEqual([]);
  });

  it("M9: an invalid or unreadable .mcp.json rejects with an Error naming the file", async () => {
    const file = join(tmp, ".mcp.json");
    writeFileSync(file, "{ this is not json");
    const invalid = await rejection(makeManager().discoverAndConnect());
    expect(invalid).toBeInstanceOf(Error);
    expect(invalid.message).toContain(file);

    const other = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-manager-dir-")));
    try {
      mkdirSync(join(other, ".mcp.json")); // a directory: cannot be read as a file
      const unreadable = await rejection(makeManager({}, null, other).discoverAndConnect());
      expect(unreadable).toBeInstanceOf(Error);
      expect(unreadable.message).toContain(join(other, ".mcp.json"));
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("M9/W1/W4: the constructor's loadConfigs gets (cwd, options); exaApiKeys are copied; this.connectServers is called", async () => {
    writeFileSync(join(tmp, ".mcp.json"), JSON.stringify({ mcpServers: { fromfile: fx() } })); // not read
    const config = fx();
    const src = source("/agent/config", "native");
    const loadCalls: [string, Record<string, unknown>][] = [];
    const connectCalls: string[][] = [];
    class Sub extends native.MCPManager {
      override async connectServers(
        configs: Record<string, MCPServerConfig>,
        sources?: Record<string, SourceMeta> | Map<string, SourceMeta>,
        onConnecting?: (names: string[]) => void,
      ) {
        connectCalls.push(Object.keys(configs));
        return super.connectServers(configs, sources, onConnecting);
      }
    }
    const m = track(
      new Sub(tmp, null, {
        compat: "v12",
        loadConfigs: async (cwd, options) => {
          loadCalls.push([cwd, options]);
          return { configs: { alpha: config }, sources: { alpha: src }, exaApiKeys: ["exa-1", "exa-2"] };
        },
      }),
    );
    const connecting: string[][] = [];
    const result = await m.discoverAndConnect({ enableProjectConfig: false, filterExa: true, custom: "passed", onConnecting: (n) => connecting.push(n) });
    expect(loadCalls).toHaveLength(1);
    expect(loadCalls[0][0]).toBe(tmp);
    expect(loadCalls[0][1]).toMatchObject({ enableProjectConfig: false, filterExa: true, custom: "passed" });
    expect(connectCalls).toEqual([["alpha"]]);
    expect(connecting).toEqual([["alpha"]]);
    expect(result.exaApiKeys).toEqual(["exa-1", "exa-2"]);
    expect(result.connectedServers).toEqual(["alpha"]);
    expect(namesOf(result.tools)).toEqual(expectedNames("alpha"));
    expect(m.getSource("alpha")).toEqual(src);
    expect(m.getConnection("alpha")!.config).toBe(config);
    expect(m.getConnection("alpha")!._source).toEqual(src);
    expect(m.getConnectionStatus("fromfile")).toBe("disconnected");
  });

  it("M9/W4: a loadConfigs passed to discoverAndConnect wins over the constructor's", async () => {
    let constructorCalls = 0;
    const m = makeManager({
      loadConfigs: async () => {
        constructorCalls++;
        return { configs: { wrong: fx() }, sources: {} };
      },
    });
    const result = await m.discoverAndConnect({ loadConfigs: async () => ({ configs: { right: fx() }, sources: {} }) });
    expect(constructorCalls).toBe(0);
    expect(result.connectedServers).toEqual(["right"]);
    expect(result.exaApiKeys).toEqual([]);
    expect(m.getConnectionStatus("wrong")).toBe("disconnected");
  });

  it("M9: createMCPManager(cwd, options) → {manager, result}; options.toolCache is the cache, the rest goes to the constructor and discovery", async () => {
    const cache = new MemoryCache();
    const config = fx();
    const connecting: string[][] = [];
    const { manager, result } = await native.createMCPManager(tmp, {
      compat: "v12",
      toolCache: cache,
      startupTimeoutMs: 300,
      loadConfigs: async () => ({ configs: { made: config }, sources: {}, exaApiKeys: ["exa-key"] }),
      onConnecting: (names) => connecting.push(names),
    });
    track(manager);
    expect(manager).toBeInstanceOf(native.MCPManager);
    expect(manager.cwd).toBe(tmp);
    expect(result.connectedServers).toEqual(["made"]);
    expect(result.exaApiKeys).toEqual(["exa-key"]);
    expect(connecting).toEqual([["made"]]);
    expect(namesOf(manager.getTools())).toEqual(expectedNames("made"));
    expect(await waitFor(() => cache.sets.length === 1)).toBe(true);
    expect(cache.sets[0][0]).toBe("made");
    expect(cache.sets[0][1]).toBe(config);

    writeFileSync(join(tmp, ".mcp.json"), JSON.stringify({ mcpServers: { filed: fx() } }));
    const second = await native.createMCPManager(tmp, { compat: "v12" });
    track(second.manager);
    expect(second.result.connectedServers).toEqual(["filed"]);
  });
});

// ---- M10 reconnect, notifications, auto refresh ----

describe("M10 reconnect and notifications", () => {
  it("M10: after the server is killed the status goes connecting, then connected again, and the same tool objects work", async () => {
    const { logger } = recordingLogger();
    const m = makeManager({ reconnect: { maxAttempts: 5, initialDelayMs: 300, maxDelayMs: 1000 }, logger });
    await m.connectServers({ fx: fx() }, {});
    const echo = m.getTools().find((t) => t.name === "mcp_fx_echo")!;
    const pid = pidOf(m.getConnection("fx"))!;
    const trail = statusTrail(m, "fx");
    process.kill(pid, "SIGKILL");
    const back = await waitFor(() => {
      const now = pidOf(m.getConnection("fx"));
      return m.getConnectionStatus("fx") === "connected" && now !== undefined && now !== pid;
    }, 8000);
    trail.stop();
    expect(back).toBe(true);
    expect(trail.seen[0]).toBe("connected");
    expect(trail.seen).toContain("connecting");
    expect(trail.seen[trail.seen.length - 1]).toBe("connected");
    const newPid = pidOf(m.getConnection("fx"))!;
    expect(alive(newPid)).toBe(true);
    await expect(echo.execute({ text: "after reconnect" })).resolves.toEqual({ content: [{ type: "text", text: "after reconnect" }] });
    expect(namesOf(m.getTools())).toEqual(expectedNames("fx"));
  });

  it("M10: disconnectServer and disconnectAll never trigger a reconnect", async () => {
    const m = makeManager({ reconnect: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 200 } });
    const onePids = join(tmp, "one.pids");
    const twoPids = join(tmp, "two.pids");
    await m.connectServers({ one: fx(`--pid-file=${onePids}`), two: fx(`--pid-file=${twoPids}`) }, {});
    await m.disconnectServer("one");
    await sleep(700);
    expect(m.getConnectionStatus("one")).toBe("disconnected");
    expect(lines(onePids)).toHaveLength(1);
    expect(m.getConnectionStatus("two")).toBe("connected");
    await m.disconnectAll();
    await sleep(700);
    expect(m.getConnectionStatus("two")).toBe("disconnected");
    expect(lines(twoPids)).toHaveLength(1);
    expect(m.getTools()).toEqual([]);
  });

  it("M10: when the attempts run out the server is disconnected, its tools removed, and the error logged", async () => {
    const marker = join(tmp, "marker");
    const pidFile = join(tmp, "flaky.pids");
    writeFileSync(marker, "");
    const script = `test -f '${marker}' && exec '${process.execPath}' '${server}' '--pid-file=${pidFile}'`;
    const { logger, errors } = recordingLogger();
    const m = makeManager({ reconnect: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 200 }, logger });
    const result = await m.connectServers({ flaky: { command: "sh", args: ["-c", script] }, steady: fx() }, {});
    expect(sorted(result.connectedServers)).toEqual(["flaky", "steady"]);
    const pid = pidOf(m.getConnection("flaky"))!;
    expect(lines(pidFile)).toEqual([String(pid)]);

    rmSync(marker);
    const trail = statusTrail(m, "flaky");
    process.kill(pid, "SIGKILL");
    const gone = await waitFor(() => m.getConnectionStatus("flaky") === "disconnected" && toolsOf(m.getTools(), "flaky").length === 0, 8000);
    trail.stop();
    expect(gone).toBe(true);
    expect(trail.seen).toContain("connecting");
    expect(trail.seen[trail.seen.length - 1]).toBe("disconnected");
    expect(lines(pidFile)).toHaveLength(1);
    expect(errors().some((e) => `${e.message} ${JSON.stringify(e.context ?? {})}`.includes("flaky"))).toBe(true);
    expect(m.getConnectionStatus("steady")).toBe("connected");
    expect(namesOf(m.getTools())).toEqual(expectedNames("steady"));
  });

  it("M10: options.onNotification receives (server, method, params) of server notifications", async () => {
    const notes: [string, string, unknown][] = [];
    const m = makeManager({ onNotification: (serverName, method, params) => notes.push([serverName, method, params]) });
    await m.connectServers({ fx: fx() }, {});
    const notify = m.getTools().find((t) => t.name === "mcp_fx_notify_then_answer")!;
    await expect(notify.execute({ count: 2 })).resolves.toEqual({ content: [{ type: "text", text: "after notifications" }] });
    expect(await waitFor(() => notes.length >= 2)).toBe(true);
    expect(notes).toEqual([
      ["fx", "notifications/message", { level: "info", data: "n0" }],
      ["fx", "notifications/message", { level: "info", data: "n1" }],
    ]);
    const toggle = m.getTools().find((t) => t.name === "mcp_fx_toggle_extra")!;
    await toggle.execute({});
    expect(await waitFor(() => notes.length >= 3)).toBe(true);
    expect(notes[2].slice(0, 2)).toEqual(["fx", "notifications/tools/list_changed"]);
  });

  it("M10: autoRefreshTools refreshes a server's tools on notifications/tools/list_changed", async () => {
    const m = makeManager({ autoRefreshTools: true });
    await m.connectServers({ fx: fx(), other: fx() }, {});
    const toggle = m.getTools().find((t) => t.name === "mcp_fx_toggle_extra")!;
    expect(textOf(await toggle.execute({}))).toBe("true");
    expect(await waitFor(() => m.getTools().some((t) => t.name === "mcp_fx_extra"))).toBe(true);
    expect(namesOf(toolsOf(m.getTools(), "fx"))).toEqual(sorted([...expectedNames("fx"), "mcp_fx_extra"]));
    expect(namesOf(toolsOf(m.getTools(), "other"))).toEqual(expectedNames("other"));
    expect(textOf(await toggle.execute({}))).toBe("false");
    expect(await waitFor(() => !m.getTools().some((t) => t.name === "mcp_fx_extra"))).toBe(true);
    expect(namesOf(toolsOf(m.getTools(), "fx"))).toEqual(expectedNames("fx"));
  });
});

// ---- M11 fail fast ----

describe("M11 dead transport", () => {
  it("M11: without reconnect, a tool of a killed server fails fast with 'Transport not connected'", async () => {
    const m = makeManager();
    await m.connectServers({ fx: { ...fx(), timeout: 30_000 } }, {});
    const echo = m.getTools().find((t) => t.name === "mcp_fx_echo")!;
    const connection = m.getConnection("fx")!;
    process.kill(pidOf(connection)!, "SIGKILL");

    // At once: whatever the race with the close, the call fails, and long before the 30 s timeout.
    let started = Date.now();
    const first = await rejection(echo.execute({ text: "x" }));
    expect(first).toBeInstanceOf(Error);
    expect(Date.now() - started).toBeLessThan(5000);

    expect(await waitFor(() => connection.transport.connected === false)).toBe(true);
    started = Date.now();
    const second = await rejection(echo.execute({ text: "y" }));
    expect(second).toBeInstanceOf(Error);
    expect(second.message).toBe("Transport not connected");
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
