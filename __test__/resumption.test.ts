// SPEC-PROTOCOL P2 and P3 over HTTP: a POST's SSE answer or the GET listener that ends or
// breaks after an event id is resumed by GET with Last-Event-ID after the server's retry, a
// bounded number of times; an expired session is re-initialized once, transparently.
import { describe, expect, it } from "vitest";
import { init, native, waitFor, httpTestScope } from "./helpers";

const { fixture, connect, cleanup } = httpTestScope();
const gets = (f: Awaited<ReturnType<typeof fixture>>) => f.received.filter((r) => r.method === "GET");

describe("P2 resuming a request's stream", () => {
  for (const how of ["end", "break"] as const) {
    it(`P2: a stream that ${how}s before the answer is resumed after the server's retry, with Last-Event-ID`, async () => {
      const f = await fixture({ session: "s-resume" });
      const t = await connect({ url: f.url });
      await t.request("initialize", init);
      const notes: unknown[] = [];
      t.onNotification = (method, params) => notes.push([method, params]);
      const answer = await t.request<any>("resume/drop", { retry: 300, how });
      expect(answer).toEqual({ resumed: true });
      const [get] = gets(f);
      expect(get.headers["last-event-id"]).toMatch(/^r\d+-0$/);
      expect(get.headers["mcp-session-id"]).toBe("s-resume");
      expect(get.headers.accept).toBe("text/event-stream");
      // The server said retry: 300; allow the timer's coarseness, never an early reconnect.
      expect(get.at - f.dropTimes[0]).toBeGreaterThanOrEqual(280);
      expect(notes).toEqual([["notifications/message", { level: "info", data: "resumed" }]]);
    });
  }

  it("P2: without an event id nothing is resumed: 'No response received for request ID <id>'", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const error: any = await t.request("resume/drop", { noId: true, retry: 50 }).catch((e) => e);
    expect(error.message).toMatch(/^No response received for request ID \d+$/);
    expect(gets(f)).toEqual([]);
  });

  it("P2/A19: a refused GET ends the resumption at once, with the refusal's status and body", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const error: any = await t.request("resume/drop", { refuse: true, retry: 50 }).catch((e) => e);
    expect(error.message).toBe("HTTP 405 resuming MCP SSE stream: Method Not Allowed");
    expect(gets(f)).toHaveLength(1);
  });

  it("P2: resumed streams that keep dropping are given up after reconnect.maxRetries, backing off", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, reconnect: { maxRetries: 3 } });
    const error: any = await t.request("resume/drop", { drops: 10, retry: 100 }).catch((e) => e);
    expect(error.message).toMatch(/^No response received for request ID \d+$/);
    const times = gets(f).map((g) => g.at);
    expect(times).toHaveLength(3);
    // 100 ms, then 200, then 400: each wait doubles.
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(180);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(380);
  });

  it("P2: the default is two retries; maxRetries 0 turns resumption off", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    await t.request("resume/drop", { drops: 10, retry: 20 }).catch(() => undefined);
    expect(gets(f)).toHaveLength(2);
    const off = await connect({ url: f.url, reconnect: { maxRetries: 0 } });
    const error: any = await off.request("resume/drop", { retry: 20 }).catch((e) => e);
    expect(error.message).toMatch(/^No response received/);
    expect(gets(f)).toHaveLength(2);
  });

  it("P2/A48: close() during the wait rejects with the close's AbortError and sends no GET", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const pending = t.request("resume/drop", { retry: 5000 }).catch((e) => e);
    await waitFor(() => f.dropTimes.length === 1);
    await t.close();
    expect((await pending).message).toBe("MCP HTTP transport closed");
    expect(gets(f)).toEqual([]);
  });
});

describe("P2 resuming the GET listener", () => {
  it("P2/A20: a listener stream with an event id that ends is opened again from it, with no onClose", async () => {
    const f = await fixture({ get: "stream", getPriming: 50 });
    const t = await connect({ url: f.url });
    const seen: string[] = [];
    t.onNotification = (method) => seen.push(method);
    let closed = false;
    t.onClose = () => (closed = true);
    await t.startSSEListener();
    expect(f.getStreamCount()).toBe(1);
    await t.request("get/end");
    expect(await waitFor(() => gets(f).length === 2 && f.getStreamCount() === 1)).toBe(true);
    expect(gets(f)[1].headers["last-event-id"]).toBe("get-1");
    await t.request("get/push", { message: { jsonrpc: "2.0", method: "notifications/tools/list_changed" } });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    expect(closed).toBe(false);
    await t.close();
  });

  it("A20: a listener stream without event ids stops when it ends, and onClose fires", async () => {
    const f = await fixture({ get: "stream" });
    const t = await connect({ url: f.url });
    let closed = false;
    t.onClose = () => (closed = true);
    await t.startSSEListener();
    await t.request("get/end");
    expect(await waitFor(() => closed)).toBe(true);
    expect(gets(f)).toHaveLength(1);
  });
});

describe("P2 through connectToServer", () => {
  it("P2/H8: connectToServer starts the GET listener, and a dropped tools/call is resumed", async () => {
    const f = await fixture({ get: "stream" });
    const connection = await native.connectToServer("resumable", { type: "http", url: f.url });
    cleanup(() => connection.transport.close());
    expect(await waitFor(() => f.getStreamCount() === 1)).toBe(true);
    const answer = await connection.transport.request<any>("resume/drop", { retry: 50 });
    expect(answer).toEqual({ resumed: true });
  });
});

describe("P3 session expiry", () => {
  const posted = (f: Awaited<ReturnType<typeof fixture>>) =>
    f.received.filter((r) => r.method === "POST").map((r) => [r.body.method ?? "answer", r.headers["mcp-session-id"] ?? null]);

  it("P3: a 404 on the session repeats initialize (same params) and initialized, then the request, transparently", async () => {
    const f = await fixture({ session: "s1" });
    const t = await connect({ url: f.url });
    const params = { ...init, clientInfo: { name: "reinit-test", version: "9" } };
    await t.request("initialize", params);
    await t.notify("notifications/initialized");
    await t.request("session/expire");
    expect(await t.request("json/echo", { n: 1 })).toEqual({ params: { n: 1 } });
    expect(t.sessionId).toBe("s1-2");
    expect(posted(f)).toEqual([
      ["initialize", null],
      ["notifications/initialized", "s1"],
      ["session/expire", "s1"],
      ["json/echo", "s1"],
      ["initialize", null],
      ["notifications/initialized", "s1-2"],
      ["json/echo", "s1-2"],
    ]);
    const inits = f.received.filter((r) => r.body?.method === "initialize").map((r) => r.body.params);
    expect(inits[1]).toEqual(inits[0]);
  });

  it("P3: concurrent requests share one re-initialization", async () => {
    const f = await fixture({ session: "s1" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    await t.request("session/expire");
    const numbers = Array.from({ length: 20 }, (_, n) => n);
    const answers = await Promise.all(numbers.map((n) => t.request("json/echo", { n })));
    expect(answers).toEqual(numbers.map((n) => ({ params: { n } })));
    expect(f.received.filter((r) => r.body?.method === "initialize")).toHaveLength(2);
  });

  it("P3: a notification that meets the 404 re-initializes too", async () => {
    const f = await fixture({ session: "s1" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    await t.request("session/expire");
    await t.notify("notifications/roots/list_changed");
    expect(posted(f).slice(-3)).toEqual([
      ["initialize", null],
      ["notifications/initialized", "s1-2"],
      ["notifications/roots/list_changed", "s1-2"],
    ]);
  });

  it("P3: when the new session is refused too, the request rejects with H4's error", async () => {
    const f = await fixture({ session: "s1" });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    await t.request("session/expire", { forever: true });
    const error: any = await t.request("json/echo", {}).catch((e) => e);
    expect(error.message).toBe('HTTP 404: {"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
    expect(error.status).toBe(404);
    expect(f.received.filter((r) => r.body?.method === "initialize")).toHaveLength(2);
  });

  it("P3/P2: a listener whose session expired renews it and listens on the new one", async () => {
    const f = await fixture({ session: "s1", get: "stream", getPriming: 50 });
    const t = await connect({ url: f.url });
    await t.request("initialize", init);
    const seen: string[] = [];
    t.onNotification = (method) => seen.push(method);
    const listening = t.startSSEListener();
    expect(await waitFor(() => f.getStreamCount() === 1)).toBe(true);
    await t.request("session/expire");
    expect(await waitFor(() => t.sessionId === "s1-2" && f.getStreamCount() === 1)).toBe(true);
    const listens = gets(f).map((g) => [g.headers["mcp-session-id"], g.headers["last-event-id"] ?? null]);
    expect(listens).toEqual([
      ["s1", null],
      ["s1", "get-1"],
      ["s1-2", null],
    ]);
    await t.request("get/push", { message: { jsonrpc: "2.0", method: "notifications/tools/list_changed" } });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    await t.close();
    await listening;
  });

  it("H4: a 404 to a request that carried no session id is not retried", async () => {
    const f = await fixture({ session: "s1" });
    const t = await connect({ url: f.url });
    const error: any = await t.request("json/echo", {}).catch((e) => e);
    expect(error.status).toBe(404);
    expect(f.received.filter((r) => r.body?.method === "initialize")).toHaveLength(0);
  });
});
