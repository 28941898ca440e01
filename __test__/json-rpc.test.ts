// SPEC §7: parseSSE (J1) and callMCP (J2, W8, W9).
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

  it("J1: a data line that is not JSON throws", () => {
    expect(() => native.parseSSE("data: {oops\n")).toThrow(SyntaxError);
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

  it("J2: an unparseable body rejects 'Failed to parse MCP response'; a bad data line rejects with SyntaxError", async () => {
    const f = await fixture();
    await expect(native.callMCP(f.url, "plain/text")).rejects.toThrow(/^Failed to parse MCP response$/);
    await expect(native.callMCP(f.url, "sse/invalid")).rejects.toBeInstanceOf(SyntaxError);
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
