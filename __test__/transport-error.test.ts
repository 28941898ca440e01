// SPEC-AGENT183 A45/A46: `MCPTransportError`, the agent's helpers around it, and every
// rejection of our transports as an instance of it, classified as the agent's own
// transports classify the same failure — against real server processes and 127.0.0.1 HTTP.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { closedPort } from "./fixtures/hostile";
import { connectFixture, httpTestScope, native } from "./helpers";

const { MCPTransportError } = native;
const { fixture, connect, cleanup } = httpTestScope();

/** The fields the agent's retry policy and tool report read. */
const classOf = (error: any) => ({
  transport: error.transport,
  stage: error.stage,
  failure: error.failure,
  retryable: error.retryable,
  code: error.code,
});

async function rawServer(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup(() => new Promise((resolve) => server.close(resolve)));
  cleanup(() => server.closeAllConnections());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

describe("A45 the class", () => {
  it("is a real Error subclass: name, stack, cause, instanceof, subclassing, the agent's fields in its order", () => {
    const cause = new Error("root");
    const error = new MCPTransportError({
      transport: "http",
      stage: "send",
      failure: "eof",
      message: `  socket closed, Authorization: Bearer abc.def ${"x".repeat(2000)}`,
      retryable: true,
      code: "EPIPE",
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(MCPTransportError);
    expect(Object.prototype.toString.call(error)).toBe("[object Error]");
    expect(error.name).toBe("MCPTransportError");
    expect(error.message.startsWith("socket closed, Authorization: [redacted] [redacted] xxx")).toBe(true);
    expect(error.message).toHaveLength(1000 - 2);
    expect(error.stack?.split("\n")[0]).toBe(`MCPTransportError: ${error.message}`);
    expect(error.cause).toBe(cause);
    expect(Object.keys(error)).toEqual(["transport", "stage", "failure", "retryable", "code", "data", "traceId", "name"]);
    expect(classOf(error)).toEqual({ transport: "http", stage: "send", failure: "eof", retryable: true, code: "EPIPE" });
    expect("cause" in new MCPTransportError({ transport: "stdio", stage: "send", failure: "eof", message: "m", retryable: true })).toBe(false);
    class Mine extends MCPTransportError {}
    const mine = new Mine({ transport: "unknown", stage: "protocol", failure: "unknown", message: "m", retryable: false });
    expect(mine).toBeInstanceOf(MCPTransportError);
    expect(mine.constructor).toBe(Mine);
  });

  it("A47: the two timeout classes, constructed as the agent's code constructs them", () => {
    const connect = new native.MCPConnectionTimeoutError("srv", 1500);
    expect(connect.message).toBe('Connection to MCP server "srv" timed out after 1500ms');
    expect([connect.name, connect.serverName, connect.timeoutMs]).toEqual(["MCPConnectionTimeoutError", "srv", 1500]);
    expect(classOf(connect)).toEqual({ transport: "unknown", stage: "connect", failure: "timeout", retryable: false, code: undefined });
    expect(connect).toBeInstanceOf(MCPTransportError);
    const legacy = new native.LegacySseConnectionTimeoutError(250);
    expect(legacy.message).toBe("Legacy SSE endpoint timeout after 250ms");
    expect(legacy.name).toBe("LegacySseConnectionTimeoutError");
    expect(classOf(legacy)).toEqual({ transport: "http", stage: "connect", failure: "timeout", retryable: false, code: undefined });
    expect(legacy).toBeInstanceOf(Error);
  });

  it("is the same class from the ESM entry point", async () => {
    const esm = await import("../index.mjs");
    expect(esm.MCPTransportError).toBe(MCPTransportError);
    expect(esm.MCPConnectionTimeoutError).toBe(native.MCPConnectionTimeoutError);
    expect(esm.LegacySseConnectionTimeoutError).toBe(native.LegacySseConnectionTimeoutError);
    expect(esm.normalizeMCPTransportError).toBe(native.normalizeMCPTransportError);
  });
});

describe("A45 the helpers follow the agent's rules", () => {
  it("normalizeMCPTransportError classifies by code, then by words, and keeps an instance as it is", () => {
    const normalize = (error: unknown, stage: "send" | "receive" = "send") =>
      native.normalizeMCPTransportError(error, { transport: "http", stage, traceId: " trace-1 " });
    const refused = normalize(
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9. For more information, pass `verbose: true` in the second argument to fetch()"), { code: "ECONNREFUSED" }),
    );
    expect(refused.message).toBe("connect ECONNREFUSED 127.0.0.1:9.");
    expect(classOf(refused)).toEqual({ transport: "http", stage: "connect", failure: "connect", retryable: true, code: "ECONNREFUSED" });
    expect(refused.traceId).toBe("trace-1");
    expect(classOf(normalize(Object.assign(new Error("x"), { cause: { code: "ECONNRESET" } })))).toMatchObject({ failure: "reset", retryable: true, code: "ECONNRESET" });
    expect(classOf(normalize(new Error("write EPIPE")))).toMatchObject({ failure: "eof", retryable: true });
    expect(classOf(normalize(new Error("Request timeout after 5ms")))).toMatchObject({ failure: "timeout", retryable: false });
    expect(classOf(normalize(new SyntaxError("Unexpected token <"), "receive"))).toMatchObject({ stage: "decode", failure: "malformed_response", retryable: false });
    expect(classOf(normalize("HTTP 503: busy"))).toEqual({ transport: "http", stage: "send", failure: "http_status", retryable: true, code: 503 });
    expect(classOf(normalize("HTTP 400: bad"))).toMatchObject({ failure: "http_status", retryable: false, code: 400 });
    const unknown = normalize({});
    expect(unknown.message).toBe("[object Object]");
    expect(classOf(unknown)).toMatchObject({ failure: "unknown", retryable: false });
    expect(normalize(undefined).message).toBe("undefined");
    expect(unknown.cause).toEqual({});
    expect(normalize(refused)).toBe(refused);
  });

  it("createMCPJsonRpcError bounds and redacts data, finds a trace id, and formatMCPToolFailure reports it", () => {
    const data: any = { a: 1, password: "p", list: [1, "Bearer tok", { token: "x" }], nested: { requestId: "r-1" }, why: "api_key=k1 failed" };
    data.self = data;
    const error = native.createMCPJsonRpcError("http", { code: -32000, message: "Server said no", data });
    const text = '{"a":1,"password":"[redacted]","list":[1,"Bearer [redacted]",{"token":"[redacted]"}],"nested":{"requestId":"r-1"},"why":"api_key=[redacted] failed","self":"[circular]"}';
    expect(error.data).toBe(text);
    expect(error.traceId).toBe("r-1");
    expect(classOf(error)).toEqual({ transport: "http", stage: "protocol", failure: "json_rpc", retryable: false, code: -32000 });
    expect(native.formatMCPToolFailure(error, "srv", "tool")).toBe(
      [
        "MCP failure",
        "server: srv",
        "tool: tool",
        "transport: http",
        "stage: protocol",
        "failure: json_rpc",
        "retryable: no",
        "message: MCP error -32000: Server said no",
        "code: -32000",
        "trace_id: r-1",
        `data: ${text}`,
        "next: Address the server-reported MCP error before retrying.",
      ].join("\n"),
    );
    const big = native.createMCPJsonRpcError("stdio", { code: 1, message: "m", data: { items: Array.from({ length: 40 }, (_, i) => "x".repeat(100) + i) } });
    expect(big.data).toHaveLength(2000);
    expect(big.data!.startsWith('{"truncated":true,"preview":"{\\"items\\":')).toBe(true);
    expect(native.createMCPJsonRpcError("stdio", { code: 1, message: "m" }).data).toBeUndefined();
    expect(native.formatMCPToolFailure(new Error("connect ECONNREFUSED 127.0.0.1:9"), "s", "t")).toBe(
      "MCP failure\nserver: s\ntool: t\ntransport: unknown\nstage: connect\nfailure: connect\nretryable: yes\nmessage: connect ECONNREFUSED 127.0.0.1:9\nnext: Check that the MCP server is running and reachable, then retry.",
    );
  });

  it("mcpTraceIdFromHeaders takes the first safe id in the agent's header order", () => {
    expect(native.mcpTraceIdFromHeaders(new Headers({ "x-request-id": "bad id", "x-trace-id": "ok-1", "cf-ray": "ray" }))).toBe("ok-1");
    expect(native.mcpTraceIdFromHeaders(new Headers({ "x-request-id": "x".repeat(129) }))).toBeUndefined();
    expect(native.mcpTraceIdFromHeaders(new Headers())).toBeUndefined();
  });
});

describe("A45 stdio rejections, from a real server process", () => {
  it("a JSON-RPC error, a timeout, a dead server and a closed transport", async () => {
    const t = await connectFixture([], { timeout: 300 });
    const rpc: any = await t.request("tools/call", { name: "rpc_error", arguments: {} }).catch((e) => e);
    expect(rpc).toBeInstanceOf(MCPTransportError);
    expect(rpc.message).toBe("MCP error -32042: Custom failure");
    expect(classOf(rpc)).toEqual({ transport: "stdio", stage: "protocol", failure: "json_rpc", retryable: false, code: -32042 });
    expect(rpc.data).toBe('{"detail":7}');
    const slow: any = await t.request("tools/call", { name: "never", arguments: {} }).catch((e) => e);
    expect(slow).toBeInstanceOf(MCPTransportError);
    expect(slow.message).toBe("Request timeout after 300ms");
    expect(classOf(slow)).toMatchObject({ transport: "stdio", failure: "timeout", retryable: false });
    const crashed: any = await t.request("tools/call", { name: "crash", arguments: {} }).catch((e) => e);
    expect(crashed).toBeInstanceOf(MCPTransportError);
    expect(classOf(crashed)).toMatchObject({ transport: "stdio", retryable: true });
    expect(["closed", "eof"]).toContain(crashed.failure);
    await t.close();
    const closed: any = await t.request("ping").catch((e) => e);
    expect(closed).toBeInstanceOf(MCPTransportError);
    expect(closed.message).toBe("Transport not connected");
    expect(classOf(closed)).toEqual({ transport: "stdio", stage: "connect", failure: "closed", retryable: true, code: undefined });
  });
});

describe("A45/A46 HTTP rejections, from 127.0.0.1 servers", () => {
  it("statuses: 404/502/503 may be retried, others not; the contract's properties stay", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const e401: any = await t.request("auth/401").catch((e) => e);
    expect(e401).toBeInstanceOf(MCPTransportError);
    expect(classOf(e401)).toEqual({ transport: "http", stage: "receive", failure: "http_status", retryable: false, code: 401 });
    expect(e401.status).toBe(401);
    expect(e401.wwwAuthenticate).toBe('Bearer realm="mcp"');
    const statuses = await rawServer((req, res) => {
      const status = Number(new URL(req.url!, "http://h").searchParams.get("s"));
      res.writeHead(status, { "Content-Type": "text/plain" }).end("busy");
    });
    for (const [status, retryable] of [[404, true], [502, true], [503, true], [500, false], [429, false]] as const) {
      const u = await connect({ url: `${statuses}?s=${status}` });
      const error: any = await u.request("ping").catch((e) => e);
      expect(error).toBeInstanceOf(MCPTransportError);
      expect(error.message).toBe(`HTTP ${status}: busy`);
      expect(classOf(error)).toEqual({ transport: "http", stage: "receive", failure: "http_status", retryable, code: status });
    }
  });

  it("a JSON-RPC error carries its data as bounded JSON text; a body that is not JSON is malformed, caused by V8's SyntaxError", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const rpc: any = await t.request("json/error").catch((e) => e);
    expect(rpc).toBeInstanceOf(MCPTransportError);
    expect(rpc.message).toBe("MCP error -32000: Server said no");
    expect(classOf(rpc)).toEqual({ transport: "http", stage: "protocol", failure: "json_rpc", retryable: false, code: -32000 });
    expect(rpc.data).toBe('{"why":"test"}');
    const invalid: any = await t.request("json/invalid").catch((e) => e);
    expect(invalid).toBeInstanceOf(MCPTransportError);
    expect(invalid.cause).toBeInstanceOf(SyntaxError);
    expect(invalid.message).toBe(invalid.cause.message);
    expect(classOf(invalid)).toMatchObject({ transport: "http", stage: "decode", failure: "malformed_response", retryable: false });
  });

  it("A50: a JSON answer without result or error is malformed; one deadline covers the POST and its stream", async () => {
    const url = await rawServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        const { id, method } = JSON.parse(body);
        if (method === "empty") return void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id }));
        if (method === "bad-error") return void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id, error: "boom" }));
        // Headers after 250 ms, then a stream that never answers.
        setTimeout(() => {
          res.writeHead(200, { "Content-Type": "text/event-stream" });
          res.write(": accepted\n\n");
        }, 250);
      });
    });
    const t = await connect({ url, timeout: 400 });
    const empty: any = await t.request("empty").catch((e) => e);
    expect([empty.message, empty.failure, empty.stage, empty.retryable]).toEqual(["Malformed JSON-RPC response", "malformed_response", "decode", false]);
    const badError: any = await t.request("bad-error").catch((e) => e);
    expect(badError.message).toBe("Malformed JSON-RPC error response");
    const started = performance.now();
    const slow: any = await t.request("slow").catch((e) => e);
    const took = performance.now() - started;
    expect([slow.message, slow.failure, slow.retryable]).toEqual(["Request timeout after 400ms", "timeout", false]);
    // 400 ms in all, not 250 ms for the POST plus 400 more for the stream.
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(600);
  });

  it("A46: refused and reset before an answer may be retried; a body that breaks off after 200 never is", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const refused: any = await (await connect({ url: `http://127.0.0.1:${freePort}/mcp` })).request("ping").catch((e) => e);
    expect(refused).toBeInstanceOf(MCPTransportError);
    expect(classOf(refused)).toEqual({ transport: "http", stage: "connect", failure: "connect", retryable: true, code: "ECONNREFUSED" });

    const dropped = await rawServer((req) => req.socket.destroy());
    const beforeAnswer: any = await (await connect({ url: dropped })).request("ping").catch((e) => e);
    expect(beforeAnswer).toBeInstanceOf(MCPTransportError);
    expect(beforeAnswer.retryable).toBe(true);

    const broken = await rawServer((req, res) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "100" });
      res.write('{"jsonrpc":"2.0","id":');
      setTimeout(() => req.socket.destroy(), 20);
    });
    const afterAnswer: any = await (await connect({ url: broken })).request("tools/call").catch((e) => e);
    expect(afterAnswer).toBeInstanceOf(MCPTransportError);
    expect(classOf(afterAnswer)).toMatchObject({ transport: "http", stage: "receive", retryable: false });
    expect(["eof", "reset"]).toContain(afterAnswer.failure);

    const brokenStream = await rawServer((req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(": accepted\n\n");
      setTimeout(() => req.socket.destroy(), 20);
    });
    const streamEnded: any = await (await connect({ url: brokenStream })).request("tools/call").catch((e) => e);
    expect(streamEnded).toBeInstanceOf(MCPTransportError);
    expect(classOf(streamEnded)).toMatchObject({ transport: "http", retryable: false });
  });
});

describe("A46 no replay of accepted work", () => {
  /** The agent 18.3.4's tool-bridge rule: reconnect and call again only when the error says so. */
  const retriable = (error: any) =>
    error instanceof MCPTransportError &&
    (["connect", "reset", "eof", "closed"].includes(error.failure)
      ? error.retryable
      : error.failure === "http_status" && [404, 502, 503].includes(error.code as number));

  it("A46: a tools/call the server accepted, whose stream then breaks, runs exactly once through the agent's retry", async () => {
    let runs = 0;
    let refuseNext = true;
    const url = await rawServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        const message = JSON.parse(body);
        if (message.method === "ping" && refuseNext) {
          // Not accepted: the socket goes before any answer.
          refuseNext = false;
          return void req.socket.destroy();
        }
        if (message.method === "ping") return void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: {} }));
        runs++;
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(": working\n\n");
        setTimeout(() => req.socket.destroy(), 20);
      });
    });
    const callOnce = async (method: string) => {
      const t = await connect({ url });
      return t.request(method, { name: "deploy", arguments: {} });
    };
    const withRetry = async (method: string) => {
      try {
        return await callOnce(method);
      } catch (error) {
        if (!retriable(error)) throw error;
        return callOnce(method);
      }
    };
    // Dropped before an answer: the retry goes through.
    await expect(withRetry("ping")).resolves.toEqual({});
    const error: any = await withRetry("tools/call").catch((e) => e);
    expect(error).toBeInstanceOf(MCPTransportError);
    expect(error.retryable).toBe(false);
    expect(retriable(error)).toBe(false);
    expect(runs).toBe(1);
  });
});

describe("A45/A48 legacy SSE rejections, from a 127.0.0.1 server", () => {
  it("a JSON-RPC error, a response timeout, the stream's end, close's AbortError, a closed transport, a refused connection", async () => {
    const f = await fixture({ legacy: true });
    const t: any = await native.createSseTransport({ type: "sse", url: f.url, timeout: 300 } as any);
    cleanup(() => t.close());
    // The first request of this transport is id 1: its answer is an error event on the stream.
    const text = `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32042, message: "Custom failure", data: { detail: 7 } } })}\n\n`;
    const rpc: any = await t.request("legacy/raw", { text }).catch((e: unknown) => e);
    expect(rpc).toBeInstanceOf(MCPTransportError);
    expect(rpc.message).toBe("MCP error -32042: Custom failure");
    expect(classOf(rpc)).toEqual({ transport: "http", stage: "protocol", failure: "json_rpc", retryable: false, code: -32042 });
    const slow: any = await t.request("sse/no-answer").catch((e: unknown) => e);
    expect(slow.message).toBe("Legacy SSE response timeout after 300ms");
    expect(classOf(slow)).toEqual({ transport: "http", stage: "receive", failure: "timeout", retryable: false, code: undefined });
    const pending = t.request("sse/no-answer").catch((e: unknown) => e);
    await t.close();
    const aborted: any = await pending;
    expect([aborted.name, aborted.message, aborted instanceof DOMException]).toEqual(["AbortError", "MCP legacy SSE transport closed", true]);
    const closed: any = await t.request("ping").catch((e: unknown) => e);
    expect(classOf(closed)).toEqual({ transport: "http", stage: "connect", failure: "closed", retryable: true, code: undefined });

    const g = await fixture({ legacy: true });
    const u: any = await native.createSseTransport({ type: "sse", url: g.url, timeout: 2000 } as any);
    cleanup(() => u.close());
    const ended: any = await u.request("legacy/end").catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(MCPTransportError);
    expect(classOf(ended)).toEqual({ transport: "http", stage: "connect", failure: "eof", retryable: true, code: undefined });
    const refused: any = await native
      .createSseTransport({ type: "sse", url: `http://127.0.0.1:${await closedPort()}/mcp`, timeout: 2000 } as any)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(MCPTransportError);
    expect(classOf(refused)).toEqual({ transport: "http", stage: "connect", failure: "connect", retryable: true, code: "ECONNREFUSED" });
  });
});
