// SPEC §7: parseSSE (J1, revised by SPEC-AGENT18 A5) and callMCP (J2, W8, W9, A6).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpFixture } from "./fixtures/http-server";
import { native } from "./helpers";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});
async function fixture() {
  const f = await startHttpFixture();
  cleanups.push(f.close);
  return f;
}

describe("J1 parseSSE", () => {
  it("J1: returns the first truthy JSON value of the 'data: ' lines, skipping [DONE]", () => {
    expect(native.parseSSE('event: message\ndata: {"a":1}\n\ndata: {"b":2}\n\n')).toEqual({ a: 1 });
    expect(native.parseSSE("data: [DONE]\ndata: 0\ndata: null\ndata:  {\"c\":3}  \r\n")).toEqual({ c: 3 });
  });

  it("J1: without data lines the whole text is parsed as JSON, else null", () => {
    expect(native.parseSSE('{"jsonrpc":"2.0","id":1,"result":{}}')).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    expect(native.parseSSE("data: 0\n")).toBe(null);
    expect(native.parseSSE("not json at all")).toBe(null);
    expect(native.parseSSE("")).toBe(null);
  });

  it("J1/A5: a data line that is not JSON is skipped (keep-alives), not thrown", () => {
    expect(native.parseSSE('data: {oops\ndata: keep-alive\ndata: {"d":4}\n')).toEqual({ d: 4 });
    expect(native.parseSSE("data: {oops\n")).toBe(null);
    expect(native.parseSSE('data: {oops\n\n{"whole":1}')).toBe(null);
  });
});

describe("J2 callMCP (compat: \"v12\")", () => {
  it("J2: POSTs one request like H2 and resolves with the whole envelope", async () => {
    const f = await fixture();
    const envelope = await native.callMCP(f.url, "json/echo", { q: 1 }, { compat: "v12" });
    expect(envelope).toMatchObject({ jsonrpc: "2.0", result: { params: { q: 1 } } });
    expect(typeof envelope.id).toBe("number");
    const [request] = f.received;
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["accept"]).toBe("application/json, text/event-stream");
    expect(request.headers["mcp-session-id"]).toBeUndefined();
    const error = await native.callMCP(f.url, "json/error", {}, { compat: "v12" });
    expect(error.error).toEqual({ code: -32000, message: "Server said no", data: { why: "test" } });
  });

  it("J2: SSE answers are parsed with parseSSE", async () => {
    const f = await fixture();
    const envelope: any = await native.callMCP(f.url, "sse/priming", {}, { compat: "v12" });
    // The first truthy data line is the answer (the priming event has no data: line).
    expect(envelope.result).toEqual({ primed: true });
  });

  it("J2/W9: non-2xx rejects 'MCP request failed: <status> <statusText>' and is logged", async () => {
    const f = await fixture();
    const logged: unknown[][] = [];
    const logger = { error: (...args: unknown[]) => logged.push(args) };
    const error: any = await native.callMCP(f.url, "http/500", {}, { logger }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP request failed: 500 Internal Server Error");
    expect(logged).toHaveLength(1);
    expect(logged[0][0]).toContain("MCP request failed: 500");
  });

  it("J2: an unparseable body rejects 'Failed to parse MCP response', a body whose only data line is not JSON too (A5)", async () => {
    const f = await fixture();
    const v12 = { compat: "v12" } as const;
    await expect(native.callMCP(f.url, "plain/text", {}, v12)).rejects.toThrow(/^Failed to parse MCP response$/);
    await expect(native.callMCP(f.url, "sse/invalid", {}, v12)).rejects.toThrow(/^Failed to parse MCP response$/);
  });

  it("A6: options.signal aborts the call with its reason; logged URLs have their secrets redacted (A4)", async () => {
    const server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
    const { port } = server.address() as AddressInfo;
    const controller = new AbortController();
    const logged: any[][] = [];
    const calling = native.callMCP(`http://127.0.0.1:${port}/mcp?api_key=s3cret&page=2`, "ping", {}, {
      signal: controller.signal,
      logger: { error: (...args: unknown[]) => logged.push(args) },
      compat: "v12",
    });
    setTimeout(() => controller.abort(new Error("user pressed Escape")), 50);
    await expect(calling).rejects.toThrow("user pressed Escape");
    expect(logged[0][1].url).toBe(`http://127.0.0.1:${port}/mcp?api_key=%5Bredacted%5D&page=2`);
    expect(JSON.stringify(logged)).not.toContain("s3cret");
    // Already aborted: rejects at once.
    await expect(native.callMCP(`http://127.0.0.1:${port}/`, "ping", {}, { signal: AbortSignal.abort(new Error("early")) })).rejects.toThrow("early");
    await expect(native.callMCP(`http://127.0.0.1:${port}/`, "ping", {}, { signal: 7 as any })).rejects.toBeInstanceOf(TypeError);
  });

  it("J2/W8: connection refused names ECONNREFUSED; bad arguments are TypeErrors", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r));
    const error: any = await native.callMCP(`http://127.0.0.1:${port}/`, "ping").catch((e) => e);
    expect(error.message).toContain("ECONNREFUSED");
    await expect(native.callMCP(42 as any, "ping")).rejects.toBeInstanceOf(TypeError);
    await expect(native.callMCP("http://127.0.0.1/", 7 as any)).rejects.toBeInstanceOf(TypeError);
  });
});

// SPEC-AGENT183 A52–A54: callMCP as 18.3.4 has it (the default), and readMcpJsonRpcResponse.
type Answer = (request: { id: unknown; method: string; params: unknown; headers: Record<string, unknown> }, res: import("node:http").ServerResponse) => void;

/** A server on 127.0.0.1 whose answer to each POST `answer` writes; open streams are ended at cleanup. */
async function answering(answer: Answer) {
  const received: { id: unknown; method: string; params: unknown; headers: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const body = JSON.parse(text);
      const request = { id: body.id, method: body.method, params: body.params, headers: req.headers };
      received.push(request);
      answer(request, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp?token=s3cret`, received };
}

const sse = (res: import("node:http").ServerResponse, ...messages: unknown[]) => {
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  for (const message of messages) res.write(`data: ${typeof message === "string" ? message : JSON.stringify(message)}\n\n`);
};

describe("A52–A54 callMCP (18.3.4)", () => {
  it("A52: a string id and params {} by default; resolves with the envelope only", async () => {
    const s = await answering(({ id }, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true }, extra: 1 }));
    });
    const envelope = await native.callMCP(s.url, "tools/list");
    expect(typeof s.received[0].id).toBe("string");
    expect(s.received[0].params).toEqual({});
    expect(envelope).toEqual({ jsonrpc: "2.0", id: s.received[0].id, result: { ok: true } });
    expect(s.received[0].headers["content-type"]).toBe("application/json");
    expect(s.received[0].headers["accept"]).toBe("application/json, text/event-stream");
  });

  it("A53: an SSE answer after notifications, server requests and other ids resolves while the stream stays open", async () => {
    const s = await answering(({ id }, res) => {
      sse(
        res,
        { jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } },
        { jsonrpc: "2.0", id: 99, method: "roots/list" },
        { jsonrpc: "2.0", id: "someone-else", result: {} },
        { jsonrpc: "2.0", id, error: { code: -32601, message: "nope", data: { why: 1 }, stray: true } },
      );
      // The stream is not ended: the answer must be enough.
    });
    const envelope = await native.callMCP(s.url, "x", { a: 1 }, { signal: AbortSignal.timeout(5000) });
    expect(envelope).toEqual({ jsonrpc: "2.0", id: s.received[0].id, error: { code: -32601, message: "nope", data: { why: 1 } } });
    expect(s.received[0].params).toEqual({ a: 1 });
  });

  it("A53: answers to other ids only, malformed messages and a bad error object reject with the agent's words", async () => {
    const cases: [Answer, string, ErrorConstructor | SyntaxErrorConstructor][] = [
      [(_, res) => (sse(res, { jsonrpc: "2.0", id: "other", result: {} }), res.end()), "MCP response ID did not match request ID", Error],
      [(_, res) => (sse(res, { jsonrpc: "2.0", method: "notifications/message" }), res.end()), "MCP response did not include a result or error", Error],
      [(_, res) => (sse(res, "not json"), res.end()), "Malformed JSON-RPC message", SyntaxError],
      [({ id }, res) => (sse(res, { jsonrpc: "2.0", id }), res.end()), "Malformed JSON-RPC response", SyntaxError],
      [({ id }, res) => (sse(res, { jsonrpc: "2.0", id, error: { code: "x", message: "m" } }), res.end()), "Malformed JSON-RPC error response", SyntaxError],
      [(_, res) => (res.writeHead(200, { "Content-Type": "application/json" }), res.end("{oops")), "Malformed JSON-RPC message", SyntaxError],
    ];
    for (const [answer, message, kind] of cases) {
      const s = await answering(answer);
      const error: any = await native.callMCP(s.url, "x").catch((e) => e);
      expect(error.message, message).toBe(message);
      expect(error).toBeInstanceOf(kind);
    }
  });

  it("A54: options.fetch sends it with options.headers over the defaults; onHttpError and onParseError make the errors", async () => {
    const s = await answering(({ id, method }, res) => {
      if (method === "refuse") return void (res.writeHead(429, { "Retry-After": "3" }), res.end("slow down"));
      if (method === "garble") return void (sse(res, "garbage"), res.end());
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { via: "fetch" } }));
    });
    const sent: { url: string; init: RequestInit }[] = [];
    const recording = (url: string, init: RequestInit) => (sent.push({ url, init }), fetch(url, init));
    const envelope = await native.callMCP(s.url, "ok", {}, { fetch: recording, headers: { "User-Agent": "omp-test", Accept: "application/json" } });
    expect(envelope.result).toEqual({ via: "fetch" });
    expect(sent).toHaveLength(1);
    expect(sent[0].init.method).toBe("POST");
    expect(sent[0].init.signal).toBeInstanceOf(AbortSignal);
    expect(s.received[0].headers["user-agent"]).toBe("omp-test");
    expect(s.received[0].headers["accept"]).toBe("application/json");

    for (const viaFetch of [true, false]) {
      const seen: [number, string, string | null][] = [];
      const options = {
        ...(viaFetch ? { fetch: recording } : {}),
        onHttpError: (response: Response, body: string) => {
          seen.push([response.status, body, response.headers.get("retry-after")]);
          return new RangeError(`limited ${response.status}`);
        },
        onParseError: (error: unknown) => new TypeError(`parse: ${(error as Error).message}`),
      };
      const refused: any = await native.callMCP(s.url, "refuse", {}, options).catch((e) => e);
      expect(refused).toBeInstanceOf(RangeError);
      expect(refused.message).toBe("limited 429");
      expect(seen).toEqual([[429, "slow down", "3"]]);
      const garbled: any = await native.callMCP(s.url, "garble", {}, options).catch((e) => e);
      expect(garbled).toBeInstanceOf(TypeError);
      expect(garbled.message).toBe("parse: Malformed JSON-RPC message");
    }
    const logged: any[][] = [];
    const plain: any = await native.callMCP(s.url, "refuse", {}, { logger: { error: (...args: unknown[]) => logged.push(args) } }).catch((e) => e);
    expect(plain.message).toBe("MCP request failed: 429 Too Many Requests");
    expect(logged[0][0]).toBe("MCP request failed: 429 Too Many Requests");
    expect(JSON.stringify(logged)).not.toContain("s3cret");
  });

  it("A52: the caller's signal aborts a stream that never answers, with its reason", async () => {
    const s = await answering((_, res) => sse(res, { jsonrpc: "2.0", method: "notifications/progress" }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user pressed Escape")), 100);
    await expect(native.callMCP(s.url, "x", {}, { signal: controller.signal })).rejects.toThrow("user pressed Escape");
    const viaFetch = new AbortController();
    setTimeout(() => viaFetch.abort(new Error("stop reading")), 100);
    await expect(native.callMCP(s.url, "x", {}, { signal: viaFetch.signal, fetch })).rejects.toThrow("stop reading");
  });
});

describe("A53 readMcpJsonRpcResponse", () => {
  const stream = (...messages: unknown[]) =>
    new Response(messages.map((m) => `data: ${JSON.stringify(m)}\n\n`).join(""), { headers: { "Content-Type": "text/event-stream" } });

  it("A53: reads a fetched Response, JSON or SSE, to the message with the expected id", async () => {
    const s = await answering(({ id }, res) => sse(res, { jsonrpc: "2.0", method: "notifications/message" }, { jsonrpc: "2.0", id, result: { n: 7 } }));
    const response = await fetch(s.url, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: "r1", method: "x" }) });
    expect(await native.readMcpJsonRpcResponse(response, "r1")).toEqual({ jsonrpc: "2.0", id: "r1", result: { n: 7 } });
    const json = new Response(JSON.stringify([{ jsonrpc: "2.0", id: 1, result: "one" }, { jsonrpc: "2.0", id: 2, result: "two" }]));
    expect((await native.readMcpJsonRpcResponse(json, 2)).result).toBe("two");
    // Ids compare as === does.
    await expect(native.readMcpJsonRpcResponse(stream({ jsonrpc: "2.0", id: "2", result: 0 }), 2)).rejects.toThrow("MCP response ID did not match request ID");
  });

  it("A53: an event stream without a body, a non-JSON data line, an aborted signal", async () => {
    const bodiless = new Response(null, { headers: { "Content-Type": "text/event-stream" } });
    await expect(native.readMcpJsonRpcResponse(bodiless, 1)).rejects.toThrow("MCP SSE response did not include a body");
    const bad = new Response("data: {oops\n\n", { headers: { "Content-Type": "text/event-stream" } });
    const error: any = await native.readMcpJsonRpcResponse(bad, 1).catch((e) => e);
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toBe("Malformed JSON-RPC message");
    const reason = new Error("gone");
    await expect(native.readMcpJsonRpcResponse(stream({ jsonrpc: "2.0", id: 1, result: {} }), 1, AbortSignal.abort(reason))).rejects.toBe(reason);
  });
});
