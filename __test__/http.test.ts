// SPEC §4 (H1–H11) and the T requirements over HTTP, against a scriptable 127.0.0.1 server.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { init, native, sleep, waitFor, httpTestScope } from "./helpers";

const { fixture, connect, cleanup } = httpTestScope();

describe("H1/H2/H3 requests, headers, sessions", () => {
  it("H1: connect() marks the transport connected without network traffic", async () => {
    const f = await fixture();
    const t = new native.HttpTransport({ type: "http", url: f.url });
    expect(t.connected).toBe(false);
    await t.connect();
    expect(t.connected).toBe(true);
    expect(t.url).toBe(f.url);
    expect(t.sessionId).toBeNull();
    await sleep(50);
    expect(f.received).toEqual([]);
    await t.close();
  });

  it("H2/A17: POST with the exact headers; the generated ones win over configured ones whatever their case", async () => {
    const f = await fixture();
    const configured = { "X-Api-Key": "secret", accept: "*/*", "CONTENT-TYPE": "text/plain", "Mcp-Protocol-Version": "1999-01-01", "mcp-session-id": "forged" };
    const t = await connect({ url: f.url, headers: configured });
    await t.request("json/echo", { a: 1 });
    const [{ headers, body }] = f.received;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["accept"]).toBe("application/json, text/event-stream");
    expect(headers["x-api-key"]).toBe("secret");
    expect(headers["mcp-session-id"]).toBeUndefined();
    expect(headers["mcp-protocol-version"]).toBeUndefined();
    expect(body).toMatchObject({ jsonrpc: "2.0", method: "json/echo", params: { a: 1 } });
    // A17: after setProtocolVersion every request names it, whatever the version.
    t.setProtocolVersion("2024-11-05");
    await t.request("json/echo");
    await t.notify("notifications/initialized");
    expect(f.received.slice(1).map((r) => r.headers["mcp-protocol-version"])).toEqual(["2024-11-05", "2024-11-05"]);
    expect(() => t.setProtocolVersion("bad\nvalue")).toThrow(TypeError);
  });

  it("A21: close() unsets onClose after calling it once; a close of a transport that is not connected does nothing", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    let closed = 0;
    t.onClose = () => closed++;
    await t.close();
    expect(closed).toBe(1);
    expect(t.onClose).toBeUndefined();
    const again = () => closed++;
    t.onClose = again;
    await t.close();
    expect(closed).toBe(1);
    expect(t.onClose).toBe(again);
  });

  it("H3: the session id from initialize is sent on later requests, notifications and DELETE", async () => {
    const f = await fixture({ session: "sess-abc" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    expect(t.sessionId).toBe("sess-abc");
    await t.notify("notifications/initialized");
    await expect(t.request("json/echo")).resolves.toEqual({ params: {} });
    expect(f.received.slice(1).map((r) => r.headers["mcp-session-id"])).toEqual(["sess-abc", "sess-abc"]);
    await t.close();
    expect(t.sessionId).toBeNull();
    const del = f.received.find((r) => r.method === "DELETE");
    expect(del?.headers["mcp-session-id"]).toBe("sess-abc");
  });

  it("H3: any response's Mcp-Session-Id replaces the stored one", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await t.request("json/new-session", { session: "second" });
    expect(t.sessionId).toBe("second");
    await t.request("json/echo");
    expect(f.received[1].headers["mcp-session-id"]).toBe("second");
  });

  it("H2: MCP-Protocol-Version is sent after initialize negotiated 2025-06-18 or later, on notifications too", async () => {
    const f = await fixture({ protocolVersion: "2025-06-18" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    await t.notify("notifications/initialized");
    await t.request("json/echo");
    expect(f.received.map((r) => r.headers["mcp-protocol-version"])).toEqual([undefined, "2025-06-18", "2025-06-18"]);
    const old = await fixture({ protocolVersion: "2025-03-26" });
    const t2 = await connect({ url: old.url });
    await t2.request("initialize", init);
    await t2.request("json/echo");
    expect(old.received.map((r) => r.headers["mcp-protocol-version"])).toEqual([undefined, undefined]);
  });
});

describe("H4/H5 JSON answers and HTTP errors", () => {
  it("H4: non-2xx rejects with 'HTTP <status>: <body>' plus the auth hints, carrying status", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const e401: any = await t.request("auth/401").catch((e) => e);
    expect(e401).toBeInstanceOf(Error);
    // A45: sanitized by the agent's rules, which take the word after `Bearer` as a credential.
    expect(e401.message).toBe("HTTP 401: Unauthorized [WWW-Authenticate: Bearer [redacted]; Mcp-Auth-Server: http://127.0.0.1/auth]");
    expect(e401.status).toBe(401);
    expect(e401.wwwAuthenticate).toBe('Bearer realm="mcp"');
    expect(e401.mcpAuthServer).toBe("http://127.0.0.1/auth");
    const e403: any = await t.request("auth/403").catch((e) => e);
    expect(e403.message).toBe("HTTP 403: Forbidden [WWW-Authenticate: Bearer [redacted]");
    const e500: any = await t.request("http/500").catch((e) => e);
    expect(e500.message).toBe("HTTP 500: boom");
    expect(e500.status).toBe(500);
  });

  it("H5/T4: a JSON error response rejects as T4; any JSON content type works", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const error: any = await t.request("json/error").catch((e) => e);
    expect(error.message).toBe("MCP error -32000: Server said no");
    expect(error.code).toBe(-32000);
    // A45: `data` as the agent's bounded, redacted JSON text.
    expect(error.data).toBe('{"why":"test"}');
    await expect(t.request("json/charset")).resolves.toEqual({ charset: true });
  });

  it("H5/A45: a body that is not JSON rejects as malformed, caused by JSON.parse's own SyntaxError", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const error = await t.request("json/invalid").catch((e) => e);
    expect(error).toBeInstanceOf(native.MCPTransportError);
    expect(error.failure).toBe("malformed_response");
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(error.message).toBe(error.cause.message);
  });

  it("E3: a JSON body over maxMessageBytes rejects naming the limit", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, maxMessageBytes: 100_000 });
    await expect(t.request("json/huge", { bytes: 200_000 })).rejects.toThrow("maxMessageBytes (100000 bytes)");
    await expect(t.request("json/huge", { bytes: 1000 })).resolves.toMatchObject({ pad: expect.any(String) });
  });
});

describe("H6 SSE answers", () => {
  for (const lineEnding of ["\n", "\r\n", "\r"] as const) {
    it(`H6/T3: notifications before the answer, multi-line data, comments (line ending ${JSON.stringify(lineEnding)})`, async () => {
      const f = await fixture({ lineEnding });
      const t = await connect({ url: f.url });
      const order: string[] = [];
      t.onNotification = (_m, p: any) => order.push(p.data);
      const result = await t.request("sse/echo", { notifications: 3, x: "y" }).then((r) => {
        order.push("answer");
        return r;
      });
      expect(result).toEqual({ params: { notifications: 3, x: "y" } });
      expect(order).toEqual(["n0", "n1", "n2", "answer"]);
    });
  }

  it("H6: a priming event (id and retry, empty data) is skipped", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await expect(t.request("sse/priming")).resolves.toEqual({ primed: true });
  });

  it("H6: a stream that ends first rejects 'No response received for request ID <id>'; [DONE] ends it", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const seen: string[] = [];
    t.onNotification = (m) => seen.push(m);
    const error: any = await t.request("sse/no-answer").catch((e) => e);
    const id = f.posted().find((m) => m.method === "sse/no-answer").id;
    expect(error.message).toBe(`No response received for request ID ${id}`);
    expect(seen).toEqual(["notifications/message"]);
    const done: any = await t.request("sse/done").catch((e) => e);
    expect(done.message).toMatch(/^No response received for request ID \d+$/);
  });

  it("H6/A45: a data payload that is not JSON rejects the request as malformed", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const error = await t.request("sse/invalid").catch((e) => e);
    expect(error.failure).toBe("malformed_response");
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("H6/T11: server requests inside an SSE answer are answered by POST", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    t.onRequest = async (method) => ({ roots: [{ uri: "file:///srv" }], method });
    const result: any = await t.request("sse/server-request", { method: "roots/list" });
    expect(result.clientSaid).toMatchObject({ jsonrpc: "2.0", id: "srv-1", result: { roots: [{ uri: "file:///srv" }], method: "roots/list" } });
    const noHandler = await connect({ url: f.url });
    const pinged: any = await noHandler.request("sse/server-request", { method: "ping" });
    expect(pinged.clientSaid.result).toEqual({});
    const unknown: any = await noHandler.request("sse/server-request", { method: "sampling/createMessage" });
    expect(unknown.clientSaid.error).toEqual({ code: -32601, message: "Method not found" });
  });

  it("E3: an SSE event over maxMessageBytes is discarded with onError; the answer still arrives", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, maxMessageBytes: 50_000 });
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    await expect(t.request("sse/huge", { bytes: 200_000 })).resolves.toEqual({ afterHuge: true });
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toContain("maxMessageBytes");
  });
});

describe("T7/T8/T9 over HTTP", () => {
  it("T7: a slow POST times out with 'Request timeout after <ms>ms' and the HTTP request is dropped", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, timeout: 300 });
    await expect(t.request("slow/json", { ms: 3000 })).rejects.toThrow(/^Request timeout after 300ms$/);
    expect(await waitFor(() => f.aborted.includes("slow/json"))).toBe(true);
    expect(await waitFor(() => f.posted().some((m) => m.method === "notifications/cancelled"))).toBe(true);
    const cancelled = f.posted().find((m) => m.method === "notifications/cancelled");
    const call = f.posted().find((m) => m.method === "slow/json");
    expect(cancelled.params).toEqual({ requestId: call.id, reason: "Request timeout after 300ms" });
  });

  it("T7/A50: one deadline covers the POST and its SSE answer: 'Request timeout after <ms>ms'", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, timeout: 300 });
    await expect(t.request("slow/sse", { ms: 3000 })).rejects.toThrow(/^Request timeout after 300ms$/);
    expect(await waitFor(() => f.aborted.includes("slow/sse"))).toBe(true);
  });

  it("T7/H7: a slow notification rejects 'Notify timeout after <ms>ms'", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, timeout: 200 });
    await expect(t.notify("notifications/slow", { ms: 2000 })).rejects.toThrow(/^Notify timeout after 200ms$/);
  });

  it("T8/T9: abort rejects with the reason, drops the HTTP request and POSTs notifications/cancelled", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const controller = new AbortController();
    const pending = t.request("slow/json", { ms: 5000 }, { signal: controller.signal });
    await waitFor(() => f.posted().some((m) => m.method === "slow/json"));
    const reason = new Error("changed my mind");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(await waitFor(() => f.aborted.includes("slow/json"))).toBe(true);
    expect(await waitFor(() => f.posted().some((m) => m.method === "notifications/cancelled"))).toBe(true);
    expect(f.posted().find((m) => m.method === "notifications/cancelled").params.reason).toBe("changed my mind");
    await expect(t.request("x", {}, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("T10: request before connect and after close rejects 'Transport not connected'", async () => {
    const f = await fixture();
    const t = new native.HttpTransport({ type: "http", url: f.url });
    await expect(t.request("json/echo")).rejects.toThrow(/^Transport not connected$/);
    await t.connect();
    await t.close();
    await expect(t.notify("x")).rejects.toThrow(/^Transport not connected$/);
  });
});

describe("H7 notify", () => {
  it("H7: 202 resolves; non-2xx rejects 'HTTP <status>: <body>' without the hint suffix, with the hint properties", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await expect(t.notify("notifications/initialized")).resolves.toBeUndefined();
    const error: any = await t.notify("notifications/denied").catch((e) => e);
    expect(error.message).toBe("HTTP 401: Unauthorized");
    expect(error.status).toBe(401);
    expect(error.wwwAuthenticate).toBe('Bearer realm="mcp"');
    expect(error.mcpAuthServer).toBe("http://127.0.0.1/auth");
    expect(f.posted()[0]).toEqual({ jsonrpc: "2.0", method: "notifications/initialized", params: {} });
  });
});

describe("H8 the GET listener", () => {
  it("H8: a server without a GET stream (405): startSSEListener resolves quietly", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    await expect(t.startSSEListener()).resolves.toBeUndefined();
    expect(f.received.map((r) => r.method)).toEqual(["GET"]);
    expect(f.received[0].headers.accept).toBe("text/event-stream");
    expect(errors).toEqual([]);
  });

  it("H8/A20: notifications and server requests on the GET stream are handled; it resolves once the GET is answered, and the stream's end fires onClose", async () => {
    const f = await fixture({ get: "stream", session: "s-get" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    const seen: unknown[] = [];
    t.onNotification = (m, p) => seen.push([m, p]);
    t.onRequest = (method) => ({ answeredBy: "listener", method });
    let closed = false;
    t.onClose = () => (closed = true);
    await t.startSSEListener();
    expect(f.getStreamCount()).toBe(1);
    expect(f.received.find((r) => r.method === "GET")?.headers["mcp-session-id"]).toBe("s-get");
    await t.request("get/push", { message: { jsonrpc: "2.0", method: "notifications/tools/list_changed" } });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    expect(seen[0]).toEqual(["notifications/tools/list_changed", undefined]);
    const asked: any = await t.request("get/ask", { method: "roots/list" });
    expect(asked.clientSaid.result).toEqual({ answeredBy: "listener", method: "roots/list" });
    expect(closed).toBe(false);
    await t.request("get/end");
    expect(await waitFor(() => closed)).toBe(true);
  });

  it("H8/H9: close() stops the listener; a non-JSON event goes to onError", async () => {
    const f = await fixture({ get: "stream" });
    const t = await connect({ url: f.url });
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    const listening = t.startSSEListener();
    await waitFor(() => f.getStreamCount() === 1);
    await t.request("get/push", { message: "{broken" });
    expect(await waitFor(() => errors.length === 1)).toBe(true);
    expect(errors[0]).toBeInstanceOf(SyntaxError);
    await t.close();
    await listening;
    expect(await waitFor(() => f.getStreamCount() === 0)).toBe(true);
    expect(errors).toHaveLength(1);
  });
});

describe("H9 close", () => {
  it("H9: close() rejects in-flight requests, sends DELETE with the session, fires onClose once", async () => {
    const f = await fixture({ session: "s-close" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    let closes = 0;
    t.onClose = () => closes++;
    const inFlight = t.request("slow/json", { ms: 5000 }).catch((e) => e);
    await waitFor(() => f.posted().some((m) => m.method === "slow/json"));
    await Promise.all([t.close(), t.close()]);
    const error = await inFlight;
    expect(error).toBeInstanceOf(Error);
    // A48: an AbortError DOMException, as the agent's transport rejects.
    expect(error).toBeInstanceOf(DOMException);
    expect([error.name, error.message]).toEqual(["AbortError", "MCP HTTP transport closed"]);
    expect(closes).toBe(1);
    expect(t.connected).toBe(false);
    expect(f.received.filter((r) => r.method === "DELETE").map((r) => r.headers["mcp-session-id"])).toEqual(["s-close"]);
    expect(await waitFor(() => f.aborted.includes("slow/json"))).toBe(true);
    await t.close();
    expect(closes).toBe(1);
  });

  it("H9: without a session no DELETE is sent", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await t.request("json/echo");
    await t.close();
    expect(f.received.some((r) => r.method === "DELETE")).toBe(false);
  });
});

describe("H10 connections and proxies", () => {
  it("H10/W8: connection refused keeps the OS words and ECONNREFUSED", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r));
    const t = await connect({ url: `http://127.0.0.1:${port}/mcp` });
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toContain("ECONNREFUSED");
    expect(error.message).toMatch(/Connection refused \(ECONNREFUSED\)$/);
    expect(error.code).toBe("ECONNREFUSED");
  });

  it("H10: one keep-alive pool per transport: calls in turn share a connection, calls at once keep theirs", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    for (let i = 0; i < 20; i++) await expect(t.request("json/echo", { i })).resolves.toEqual({ params: { i } });
    expect(f.connections()).toBe(1);
    const together = await Promise.all(Array.from({ length: 8 }, (_, i) => t.request("json/echo", { i })));
    expect(together.map((r: any) => r.params.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const opened = f.connections();
    expect(opened).toBeLessThanOrEqual(8);
    for (let i = 0; i < 20; i++) await t.request("json/echo", { i });
    expect(f.connections()).toBe(opened);
    const other = await connect({ url: f.url });
    await other.request("json/echo");
    expect(f.connections()).toBe(opened + 1);
  });

  it("H10: a kept connection the server closed while idle is replaced, and the call goes once", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await t.request("json/echo", { n: 1 });
    f.closeIdle();
    await sleep(50);
    await expect(t.request("json/echo", { n: 2 })).resolves.toEqual({ params: { n: 2 } });
    expect(f.posted().map((m) => m.params.n)).toEqual([1, 2]);
    expect(f.connections()).toBe(2);
  });

  it.runIf(process.platform === "linux")("H10: a kept connection probes for a dead peer as reqwest's do: TCP keep-alive after 15 s idle", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await t.request("json/echo", {});
    const port = Number(new URL(f.url).port);
    // /proc/net/tcp, one socket a line: local and remote address as hex ip:port, the state
    // (01 established), then the timer running ("02": keep-alive) and when it fires, in
    // 1/100 s. Without keep-alive an idle socket runs no timer; the system default is 2 h.
    const { readFileSync } = await import("node:fs");
    const ours = readFileSync("/proc/net/tcp", "utf8")
      .split("\n")
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((cols) => cols.length > 5 && parseInt(cols[2].split(":")[1], 16) === port && cols[3] === "01");
    expect(ours).toHaveLength(1);
    const [timer, when] = ours[0][5].split(":");
    expect(timer).toBe("02");
    expect(parseInt(when, 16)).toBeLessThanOrEqual(1500);
  });

  it("H10: HTTP_PROXY is honoured, and NO_PROXY exempts a host", async () => {
    const f = await fixture();
    const proxied: string[] = [];
    const proxy = createServer((req, res) => {
      proxied.push(`${req.method} ${req.url}`);
      const target = new URL(req.url!);
      const forward = require("node:http").request(
        { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers },
        (upstream: any) => {
          res.writeHead(upstream.statusCode, upstream.headers);
          upstream.pipe(res);
        },
      );
      req.pipe(forward);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    cleanup(() => new Promise((r) => proxy.close(r)));
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY, http_proxy: process.env.http_proxy, no_proxy: process.env.no_proxy };
    try {
      process.env.HTTP_PROXY = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      delete process.env.NO_PROXY;
      delete process.env.no_proxy;
      const viaProxy = await connect({ url: f.url });
      await expect(viaProxy.request("json/echo", { via: "proxy" })).resolves.toEqual({ params: { via: "proxy" } });
      expect(proxied).toEqual([`POST ${f.url}`]);
      process.env.NO_PROXY = "127.0.0.1";
      const direct = await connect({ url: f.url });
      await direct.request("json/echo");
      expect(proxied).toHaveLength(1);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe("H11 legacy HTTP+SSE", () => {
  it("H11: type 'sse' against a 2024-11-05 server: endpoint event, POSTs to it, answers on the stream", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ type: "sse", url: f.url });
    const seen: string[] = [];
    t.onNotification = (_m, p: any) => seen.push(p.data);
    const initResult: any = await t.request("initialize", init);
    expect(initResult.serverInfo.name).toBe("fixture-legacy");
    await t.notify("notifications/initialized");
    await expect(t.request("sse/echo", { legacy: true })).resolves.toEqual({ params: { legacy: true } });
    expect(seen).toEqual(["legacy note"]);
    const paths = f.received.map((r) => r.path);
    expect(paths.every((p) => p.startsWith("/messages?sessionId=legacy-1"))).toBe(true);
    expect(f.posted().map((m) => m.method)).toEqual(["initialize", "notifications/initialized", "sse/echo"]);
  });

  it("H11/A23: the legacy stream is read as LegacySseTransport reads it: [DONE] skipped, non-JSON ends it", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ type: "sse", url: f.url });
    const errors: string[] = [];
    t.onError = (e) => errors.push(e.message);
    let closes = 0;
    t.onClose = () => closes++;
    await t.request("initialize", init);
    // The one legacy stream carries everything: a `[DONE]` on it ends nothing.
    await expect(t.request("legacy/raw", { text: "data: [DONE]\n\n" })).resolves.toEqual({});
    await expect(t.request("sse/echo", { after: "done" })).resolves.toEqual({ params: { after: "done" } });
    const pending = t.request("legacy/raw", { text: "data: not json\n\n" });
    await expect(pending).rejects.toThrow("Legacy SSE message event contained non-JSON data: not json");
    expect(errors).toContain("Legacy SSE message event contained non-JSON data: not json");
    await sleep(20);
    expect(closes).toBe(1);
  });

  it("H11: type 'sse' against a Streamable HTTP server stays on Streamable HTTP", async () => {
    const f = await fixture();
    const t = await connect({ type: "sse", url: f.url });
    await expect(t.request("json/echo", { x: 1 })).resolves.toEqual({ params: { x: 1 } });
    expect(f.received.map((r) => r.method)).toEqual(["POST"]);
  });
});

describe("E2 HTTP configs", () => {
  it("E2: bad HTTP configs reject with TypeErrors naming the field", async () => {
    const cases: [unknown, string][] = [
      [{ type: "http" }, "url"],
      [{ type: "http", url: "" }, "url"],
      [{ type: "http", url: "not a url" }, "url"],
      [{ type: "http", url: "ftp://x/" }, "url"],
      [{ type: "http", url: "http://127.0.0.1/", headers: "x" }, "headers"],
      [{ type: "http", url: "http://127.0.0.1/", timeout: "soon" }, "timeout"],
      [{ type: "carrier-pigeon", url: "http://127.0.0.1/" }, "type"],
    ];
    for (const [config, field] of cases) {
      const error: any = await native.createHttpTransport(config as any).catch((e) => e);
      expect(error, JSON.stringify(config)).toBeInstanceOf(TypeError);
      expect(error.message).toContain(`"${field}"`);
    }
  });
});

describe("H10 TLS", () => {
  it("H10: an https server whose certificate nobody trusts is refused in the TLS handshake (rustls, ring)", async () => {
    const { createServer: createHttpsServer } = await import("node:https");
    const { readFileSync } = await import("node:fs");
    const pem = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
    let reached = 0;
    const server = createHttpsServer({ key: pem("tls-key.pem"), cert: pem("tls-cert.pem") }, (_req, res) => {
      reached++;
      res.end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanup(() => new Promise((resolve) => server.close(resolve)));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const t = await connect({ url });
    const error: any = await t.request("ping").catch((e) => e);
    expect(error.message).toMatch(/^fetch failed: https:\/\/127\.0\.0\.1:\d+\/mcp: invalid peer certificate: /);
    await expect(native.callMCP(url, "ping")).rejects.toThrow(/invalid peer certificate/);
    expect(reached).toBe(0);
  });
});
