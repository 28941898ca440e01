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

describe("J2 callMCP", () => {
  it("J2: POSTs one request like H2 and resolves with the whole envelope", async () => {
    const f = await fixture();
    const envelope = await native.callMCP(f.url, "json/echo", { q: 1 });
    expect(envelope).toMatchObject({ jsonrpc: "2.0", result: { params: { q: 1 } } });
    expect(typeof envelope.id).toBe("number");
    const [request] = f.received;
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["accept"]).toBe("application/json, text/event-stream");
    expect(request.headers["mcp-session-id"]).toBeUndefined();
    const error = await native.callMCP(f.url, "json/error");
    expect(error.error).toEqual({ code: -32000, message: "Server said no", data: { why: "test" } });
  });

  it("J2: SSE answers are parsed with parseSSE", async () => {
    const f = await fixture();
    const envelope: any = await native.callMCP(f.url, "sse/priming");
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
    await expect(native.callMCP(f.url, "plain/text")).rejects.toThrow(/^Failed to parse MCP response$/);
    await expect(native.callMCP(f.url, "sse/invalid")).rejects.toThrow(/^Failed to parse MCP response$/);
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
