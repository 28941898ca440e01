// SPEC §5 (createTransport) and §6 (C1–C5), against the fixture server, a JS test-double
// transport, and server-everything over stdio, streamable HTTP and legacy SSE.
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpFixture } from "./fixtures/http-server";
import { alive, everything, history, native, server, sleep, startEverything, waitFor } from "./helpers";

const require = createRequire(import.meta.url);
const pkg = require("../package.json");

const connections: any[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.transport.close()));
});
async function connectFixture(flags: string[] = [], extra: Record<string, unknown> = {}, options?: any) {
  const connection = await native.connectToServer("fixture", { command: process.execPath, args: [server, ...flags], ...extra }, options);
  connections.push(connection);
  return connection;
}

describe("§5 createTransport", () => {
  it("§5: type omitted or 'stdio' → stdio; 'http'/'sse' → HTTP; anything else rejects", async () => {
    const stdio = await native.createTransport({ command: process.execPath, args: [server] });
    expect(stdio).toBeInstanceOf(native.StdioTransport);
    expect(stdio.connected).toBe(true);
    await stdio.close();
    const typed = await native.createTransport({ type: "stdio", command: process.execPath, args: [server] });
    expect(typed).toBeInstanceOf(native.StdioTransport);
    await typed.close();
    for (const type of ["http", "sse"] as const) {
      const http = await native.createTransport({ type, url: "http://127.0.0.1:9/mcp" });
      expect(http).toBeInstanceOf(native.HttpTransport);
      await http.close();
    }
    const error: any = await native.createTransport({ type: "websocket", url: "ws://x" } as any).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("Unknown server type: websocket");
  });
});

describe("C1 connectToServer", () => {
  it("C1/P1: initialize offers 2025-11-25, roots without listChanged and our clientInfo, then notifications/initialized", async () => {
    const connection = await connectFixture();
    expect(connection.name).toBe("fixture");
    expect(connection.serverInfo).toEqual({ name: "fixture-stdio", version: "1.0.0" });
    expect(connection.capabilities).toEqual({ tools: {} });
    expect(connection.protocolVersion).toBe("2025-11-25");
    expect("instructions" in connection).toBe(false);
    expect(connection.transport).toBeInstanceOf(native.StdioTransport);
    const [init, initialized] = await history(connection.transport);
    expect(init.params).toEqual({
      protocolVersion: "2025-11-25",
      capabilities: { roots: { listChanged: false } },
      clientInfo: { name: "mcp-native", version: pkg.version },
    });
    expect(initialized).toEqual({ jsonrpc: "2.0", method: "notifications/initialized", params: {} });
  });

  it("C1/W3: the connection keeps the caller's config object itself, and the server's instructions", async () => {
    const config = { command: process.execPath, args: [server, "--instructions=Use the echo tool."], env: undefined };
    const connection = await native.connectToServer("inst", config);
    connections.push(connection);
    expect(connection.config).toBe(config);
    expect(connection.instructions).toBe("Use the echo tool.");
  });

  it("C1: options.client overrides clientInfo and the version, and merges capabilities key by key", async () => {
    const connection = await connectFixture([], {}, {
      client: { clientInfo: { name: "agent", version: "7.0.0" }, protocolVersion: "2025-06-18", capabilities: { elicitation: {} } },
    });
    expect(connection.protocolVersion).toBe("2025-06-18");
    const [init] = await history(connection.transport);
    expect(init.params).toEqual({
      protocolVersion: "2025-06-18",
      capabilities: { roots: { listChanged: false }, elicitation: {} },
      clientInfo: { name: "agent", version: "7.0.0" },
    });
  });

  it("P1: every handshake version the server answers is kept; one we do not speak fails the connect and stops the server", async () => {
    for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
      const connection = await native.connectToServer("fixture", { command: process.execPath, args: [server, `--answer-version=${version}`] });
      expect(connection.protocolVersion).toBe(version);
      await connection.transport.close();
    }
    const pidFile = join(mkdtempSync(join(tmpdir(), "mcp-native-p1-")), "pids");
    const error = await native
      .connectToServer("future", { command: process.execPath, args: [server, "--answer-version=2099-01-01", `--pid-file=${pidFile}`] })
      .then(() => null, (e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('MCP server "future" answered unsupported protocol version 2099-01-01');
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    expect(await waitFor(() => !alive(pid))).toBe(true);
  });

  it("C1: a server that never answers: the connect timeout message wins and the server is stopped", async () => {
    const config = { command: process.execPath, args: [server, "--no-init-answer"], timeout: 400 };
    const started = Date.now();
    const error: any = await native.connectToServer("silent", config).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('Connection to MCP server "silent" timed out after 400ms');
    // A47: the agent's class, a transport failure too (A45) that is never replayed as is.
    expect(error).toBeInstanceOf(native.MCPConnectionTimeoutError);
    expect(error).toBeInstanceOf(native.MCPTransportError);
    expect([error.name, error.serverName, error.timeoutMs]).toEqual(["MCPConnectionTimeoutError", "silent", 400]);
    expect([error.stage, error.failure, error.retryable]).toEqual(["connect", "timeout", false]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
  });

  it("C1: an initialize error rejects as T4 and closes the transport first", async () => {
    const error: any = await native.connectToServer("refuses", { command: process.execPath, args: [server, "--init-error"] }).catch((e) => e);
    expect(error.message).toBe("MCP error -32603: Initialization refused");
  });

  it("C1: a command that cannot start rejects with its spawn error", async () => {
    const error: any = await native.connectToServer("missing", { command: "mcp-native-no-such-binary" }).catch((e) => e);
    expect(error.code).toBe("ENOENT");
  });

  it("C1/T8: abort before or during the handshake rejects with the reason and closes the transport", async () => {
    const reason = new Error("stop connecting");
    await expect(native.connectToServer("x", { command: process.execPath, args: [server] }, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    const controller = new AbortController();
    const pending = native.connectToServer("x", { command: process.execPath, args: [server, "--no-init-answer"] }, { signal: controller.signal });
    await sleep(300);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it("E2: bad arguments reject with TypeErrors", async () => {
    await expect(native.connectToServer(5 as any, { command: "x" })).rejects.toBeInstanceOf(TypeError);
    await expect(native.connectToServer("x", null as any)).rejects.toBeInstanceOf(TypeError);
    await expect(native.listTools(null as any)).rejects.toBeInstanceOf(TypeError);
    await expect(native.callTool({ transport: 1 } as any, "x")).rejects.toBeInstanceOf(TypeError);
  });
});

describe("C2–C4 listTools, callTool, disconnectServer", () => {
  it("C2: pages through nextCursor ({} then {cursor}) and caches the list in connection.tools", async () => {
    const connection = await connectFixture(["--page-size=3"]);
    const tools = await native.listTools(connection);
    expect(tools.length).toBeGreaterThan(9);
    expect(new Set(tools.map((t: any) => t.name)).size).toBe(tools.length);
    expect(connection.tools).toBe(tools);
    const lists = (await history(connection.transport)).filter((m) => m.method === "tools/list");
    expect(lists[0].params).toEqual({});
    expect(lists.slice(1).map((m) => m.params)).toEqual(lists.slice(1).map((_, i) => ({ cursor: String((i + 1) * 3) })));
    expect(await native.listTools(connection)).toBe(tools);
    const again = (await history(connection.transport)).filter((m) => m.method === "tools/list");
    expect(again).toHaveLength(lists.length);
  });

  it("C2/C4: no tools capability → [] without a request; serverSupportsTools", async () => {
    const connection = await connectFixture(["--no-tools"]);
    expect(native.serverSupportsTools(connection.capabilities)).toBe(false);
    expect(native.serverSupportsTools({ tools: {} })).toBe(true);
    expect(await native.listTools(connection)).toEqual([]);
    expect((await history(connection.transport)).some((m) => m.method === "tools/list")).toBe(false);
  });

  it("C3: callTool passes the result through untouched", async () => {
    const connection = await connectFixture();
    const result = await native.callTool(connection, "rich");
    expect(result).toEqual({
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
    await native.callTool(connection, "echo");
    const calls = (await history(connection.transport)).filter((m) => m.method === "tools/call" && m.params.name !== "history");
    expect(calls.map((m) => m.params)).toEqual([{ name: "rich", arguments: {} }, { name: "echo", arguments: {} }]);
  });

  it("C4: disconnectServer closes the transport", async () => {
    const connection = await connectFixture();
    const pid = connection.transport.pid;
    await native.disconnectServer(connection);
    expect(connection.transport.connected).toBe(false);
    expect(alive(pid)).toBe(false);
  });
});

describe("C5 any MCPTransport", () => {
  class FakeTransport {
    connected = true;
    onClose?: () => void;
    onError?: (e: Error) => void;
    onNotification?: (m: string, p: unknown) => void;
    sent: [string, unknown][] = [];
    closed = 0;
    async request<T>(method: string, params?: Record<string, unknown>): Promise<T> {
      this.sent.push([method, params]);
      if (method === "tools/list") {
        const cursor = (params as any)?.cursor;
        return (cursor ? { tools: [{ name: "b", inputSchema: { type: "object" } }] } : { tools: [{ name: "a", inputSchema: { type: "object" } }], nextCursor: "p2" }) as T;
      }
      if (method === "tools/call") return { content: [{ type: "text", text: `called ${(params as any).name}` }] } as T;
      throw new Error(`unexpected ${method}`);
    }
    async notify() {}
    async close() {
      this.closed++;
      this.connected = false;
    }
  }

  it("C5: listTools, callTool and disconnectServer drive a JS test double", async () => {
    const transport = new FakeTransport();
    const connection: any = { name: "fake", config: { command: "x" }, transport, serverInfo: { name: "f", version: "1" }, capabilities: { tools: {} } };
    const tools = await native.listTools(connection);
    expect(tools.map((t: any) => t.name)).toEqual(["a", "b"]);
    expect(transport.sent.map(([m, p]) => [m, p])).toEqual([["tools/list", {}], ["tools/list", { cursor: "p2" }]]);
    await expect(native.callTool(connection, "a", { x: 1 })).resolves.toEqual({ content: [{ type: "text", text: "called a" }] });
    expect(transport.sent[2]).toEqual(["tools/call", { name: "a", arguments: { x: 1 } }]);
    await native.disconnectServer(connection);
    expect(transport.closed).toBe(1);
    const failing = { ...connection, tools: undefined, transport: { ...transport, request: async () => { throw new Error("double failed"); } } };
    await expect(native.listTools(failing)).rejects.toThrow("double failed");
  });
});


describe("server-everything through the client functions", () => {
  const configs: [string, () => Promise<{ config: any; stop: () => void }>][] = [
    ["stdio", async () => ({ config: { command: process.execPath, args: [everything, "stdio"] }, stop: () => {} })],
    ["streamable HTTP", async () => {
      const { proc, port } = await startEverything("streamableHttp");
      return { config: { type: "http", url: `http://127.0.0.1:${port}/mcp` }, stop: () => proc.kill() };
    }],
    ["legacy SSE", async () => {
      const { proc, port } = await startEverything("sse");
      return { config: { type: "sse", url: `http://127.0.0.1:${port}/sse` }, stop: () => proc.kill() };
    }],
  ];
  for (const [label, start] of configs) {
    it(`C1–C4 over ${label}: connect, list tools, call echo and get-sum, ping`, async () => {
      const { config, stop } = await start();
      try {
        const connection = await native.connectToServer("everything", config);
        connections.push(connection);
        expect(connection.serverInfo.name).toContain("everything");
        const tools = await native.listTools(connection);
        expect(tools.map((t: any) => t.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
        await expect(native.callTool(connection, "echo", { message: label })).resolves.toMatchObject({ content: [{ type: "text", text: `Echo: ${label}` }] });
        const sum: any = await native.callTool(connection, "get-sum", { a: 40, b: 2 });
        expect(sum.content[0].text).toContain("42");
        await expect(connection.transport.request("ping")).resolves.toEqual({});
      } finally {
        stop();
      }
    });
  }
});

describe("C1 over HTTP", () => {
  it("C1: connectToServer over HTTP keeps the negotiated version and sends it as a header", async () => {
    const f = await startHttpFixture({ protocolVersion: "2025-06-18", session: "s1" });
    try {
      const connection = await native.connectToServer("web", { type: "http", url: f.url });
      connections.push(connection);
      expect(connection.protocolVersion).toBe("2025-06-18");
      expect(f.received[1].headers["mcp-protocol-version"]).toBe("2025-06-18");
      expect(f.received[1].body.method).toBe("notifications/initialized");
    } finally {
      await f.close();
    }
  });
});
