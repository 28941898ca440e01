// SPEC-AGENT18 A8 (batches), A18 (JSON answers, a notify's stream), A19 (resumption failures),
// A20 (when startSSEListener() settles, the listener's end) and A26 (connectToServer waits for
// the listener; A40: v12 starts none), against real processes and 127.0.0.1 servers.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { closingAfterEach, history, init, native, sleep, waitFor, httpTestScope } from "./helpers";

const { fixture, connect, cleanup } = httpTestScope();
const gets = (f: Awaited<ReturnType<typeof fixture>>) => f.received.filter((r) => r.method === "GET");

describe("A8 batches", () => {
  const stdio = closingAfterEach();

  it("A8: over stdio, a batch line is its messages in order: a notification, a server request, the answer", async () => {
    const t = await stdio.connect();
    const seen: unknown[] = [];
    t.onNotification = (method, params) => seen.push([method, params]);
    const asked: string[] = [];
    t.onRequest = async (method) => {
      asked.push(method);
      return { roots: [] };
    };
    const line = JSON.stringify([
      { jsonrpc: "2.0", method: "notifications/message", params: { data: "in a batch" } },
      { jsonrpc: "2.0", id: "batch-ask", method: "roots/list" },
      { jsonrpc: "2.0", id: 0, result: { content: [{ type: "text", text: "batched" }] } },
    ]).replace('"id":0', '"id":ID');
    const answer = await t.request<any>("tools/call", { name: "spelled_line", arguments: { line, piece: 4096 } });
    expect(answer).toEqual({ content: [{ type: "text", text: "batched" }] });
    expect(seen).toEqual([["notifications/message", { data: "in a batch" }]]);
    expect(asked).toEqual(["roots/list"]);
    let answered: unknown;
    for (let i = 0; i < 50 && answered === undefined; i++) {
      answered = (await history(t)).find((m: any) => m.id === "batch-ask");
      if (answered === undefined) await sleep(20);
    }
    expect(answered).toEqual({ jsonrpc: "2.0", id: "batch-ask", result: { roots: [] } });
  });

  it("A8: over HTTP, a JSON body and an SSE event may each be a batch", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const seen: unknown[] = [];
    t.onNotification = (method, params: any) => seen.push([method, params.data]);
    expect(await t.request("json/batch")).toEqual({ batched: true });
    expect(await t.request("sse/batch")).toEqual({ batched: "sse" });
    expect(seen).toEqual([
      ["notifications/message", "in a batch"],
      ["notifications/message", "sse batch"],
    ]);
    // The ping inside the SSE batch was answered by POST (T11).
    expect(await waitFor(() => f.posted().some((m) => m.id === "srv-batch"))).toBe(true);
    expect(f.posted().find((m) => m.id === "srv-batch")).toEqual({ jsonrpc: "2.0", id: "srv-batch", result: {} });
  });
});

describe("A18 answers over HTTP", () => {
  it("A18: a JSON answer is the request's, whatever id it names", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    expect(await t.request("json/other-id")).toEqual({ answeredAs: 424242 });
  });

  it("A18: what a notify's event stream carries is delivered in the background", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const seen: unknown[] = [];
    t.onNotification = (method, params: any) => seen.push([method, params.data]);
    await t.notify("notifications/with-stream");
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    expect(seen).toEqual([["notifications/message", "on the notify's stream"]]);
  });

  it("A50: the notify's stream has no deadline of its own: a message after the timeout still arrives", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url, timeout: 200 });
    const seen: unknown[] = [];
    t.onNotification = (method, params: any) => seen.push([method, params.data]);
    await t.notify("notifications/with-stream", { ms: 500 });
    expect(await waitFor(() => seen.length === 1, 3000)).toBe(true);
    expect(seen).toEqual([["notifications/message", "on the notify's stream"]]);
  });
});

describe("A19 resumption failures", () => {
  it("A19: a refused resuming GET rejects with its status and body", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const refuse = { status: 503, body: "try later", headers: {} };
    const error: any = await t.request("resume/drop", { refuse, retry: 20 }).catch((e) => e);
    expect(error.message).toBe("HTTP 503 resuming MCP SSE stream: try later");
    expect(gets(f)).toHaveLength(1);
    expect(gets(f)[0].headers["last-event-id"]).toMatch(/^r\d+-0$/);
  });

  it("A19: a resuming GET answered with something else than an event stream names its Content-Type", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const refuse = { status: 200, body: "{}", headers: { "Content-Type": "application/json" } };
    const error: any = await t.request("resume/drop", { refuse, retry: 20 }).catch((e) => e);
    expect(error.message).toBe("MCP SSE resume returned unsupported Content-Type: application/json");
    const bare = { status: 200, body: "", headers: {} };
    const missing: any = await t.request("resume/drop", { refuse: bare, retry: 20 }).catch((e) => e);
    expect(missing.message).toBe("MCP SSE resume returned unsupported Content-Type: (missing)");
  });

  it("A19/A10: a resuming GET refused for its credentials asks onAuthError once; null is 'auth refresh failed'", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    let asked = 0;
    t.onAuthError = async () => {
      asked++;
      return null;
    };
    const refuse = { status: 401, body: "expired", headers: {} };
    const error: any = await t.request("resume/drop", { refuse, retry: 20 }).catch((e) => e);
    expect(error.message).toBe("HTTP 401 resuming MCP SSE stream: auth refresh failed");
    expect(asked).toBe(1);
    expect(gets(f)).toHaveLength(1);
  });
});

describe("A20 the GET listener", () => {
  it("A20: startSSEListener() resolves once the GET is answered, while the stream stays open", async () => {
    const f = await fixture({ get: "stream" });
    const t = await connect({ url: f.url });
    const seen: string[] = [];
    t.onNotification = (method) => seen.push(method);
    await t.startSSEListener();
    expect(f.getStreamCount()).toBe(1);
    await t.request("get/push", { message: { jsonrpc: "2.0", method: "notifications/tools/list_changed" } });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
  });

  it("A20/§0: a script awaiting startSSEListener() lives until the GET is answered; the open stream then keeps nothing alive", async () => {
    const f = await fixture({ get: "stream", getDelay: 300 });
    const script = [
      `const { createHttpTransport } = require(${JSON.stringify(fileURLToPath(new URL("../index.js", import.meta.url)))});`,
      "(async () => {",
      `  const t = await createHttpTransport({ type: "http", url: ${JSON.stringify(f.url)} });`,
      `  await t.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "s", version: "1" } });`,
      "  const started = Date.now();",
      "  await t.startSSEListener();",
      "  console.log(`answered after ${Date.now() - started} ms`);",
      "})();",
    ].join("\n");
    const { execFile } = await import("node:child_process");
    const started = performance.now();
    const run = await new Promise<{ code: number | null; stdout: string }>((resolve) =>
      execFile(process.execPath, ["-e", script], { timeout: 10_000 }, (error, stdout) => resolve({ code: error ? (error as any).code ?? null : 0, stdout })),
    );
    // The answer came (without the GET keeping the host alive the script ended before it),
    // then the script ended with the stream still open.
    expect(run).toMatchObject({ code: 0, stdout: expect.stringMatching(/^answered after \d+ ms\n$/) });
    expect(Number(run.stdout.match(/\d+/)![0])).toBeGreaterThanOrEqual(250);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("A20: one listener per transport: another startSSEListener() while it runs opens no second GET", async () => {
    const f = await fixture({ get: "stream" });
    const connection = await native.connectToServer("once", { type: "http", url: f.url });
    cleanup(() => connection.transport.close());
    const t = connection.transport as any;
    const seen: string[] = [];
    t.onNotification = (method: string) => seen.push(method);
    await t.startSSEListener();
    await t.startSSEListener();
    expect(gets(f)).toHaveLength(1);
    await t.request("get/push", { message: { jsonrpc: "2.0", method: "notifications/tools/list_changed" } });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    await sleep(50);
    // Heard once: a second stream would have delivered it twice.
    expect(seen).toEqual(["notifications/tools/list_changed"]);
    // Once the stream ended, a new listener may start.
    await t.request("get/end");
    expect(await waitFor(() => f.getStreamCount() === 0)).toBe(true);
    await sleep(50);
    await t.startSSEListener();
    expect(gets(f)).toHaveLength(2);
  });

  it("A20: it resolves at once on 405, with no onError and no onClose", async () => {
    const f = await fixture();
    const t = await connect({ url: f.url });
    const events: string[] = [];
    t.onError = () => events.push("error");
    t.onClose = () => events.push("close");
    await t.startSSEListener();
    await sleep(50);
    expect(gets(f)).toHaveLength(1);
    expect(events).toEqual([]);
  });

  it("A20: a network failure goes to onError and resolves", async () => {
    const f = await fixture();
    const url = f.url;
    await f.close();
    const t = await connect({ url });
    const errors: string[] = [];
    t.onError = (e) => errors.push(e.message);
    await t.startSSEListener();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/ECONNREFUSED/);
  });

  it("A20: a GET not answered within resolveSSEConnectTimeoutMs(timeout) is dropped: resolved, and its late stream unread", async () => {
    const f = await fixture({ get: "stream", getDelay: 400 });
    const t = await connect({ url: f.url, timeout: 400 });
    expect(native.resolveSSEConnectTimeoutMs(400)).toBe(100);
    const seen: string[] = [];
    t.onNotification = (method) => seen.push(method);
    const started = performance.now();
    await t.startSSEListener();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(350);
    await sleep(500);
    // The client dropped the GET: the fixture's late stream found no one there.
    expect(f.getStreamCount()).toBe(0);
    expect(seen).toEqual([]);
  });

  it("A9/A20: the listener's wait follows the timeout resolver, not only the config", async () => {
    const f = await fixture({ get: "stream", getDelay: 2000 });
    const t = await connect({ url: f.url, timeout: 60_000 });
    native.setTimeoutResolver(() => 400);
    try {
      const started = performance.now();
      await t.startSSEListener();
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(90);
      expect(waited).toBeLessThan(1000);
    } finally {
      native.setTimeoutResolver(null);
    }
  });

  it("A20: a stream that ends for good fires onClose while connected stays true", async () => {
    const f = await fixture({ get: "stream" });
    const t = await connect({ url: f.url });
    let closes = 0;
    t.onClose = () => closes++;
    await t.startSSEListener();
    await t.request("get/end");
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(t.connected).toBe(true);
    // Still usable, and a later close() does not fire onClose again (once, H9).
    expect(await t.request("json/echo", { n: 1 })).toEqual({ params: { n: 1 } });
    await t.close();
    expect(closes).toBe(1);
  });

  it("A20: a stream that ends after an event id is resumed instead, with no onClose", async () => {
    const f = await fixture({ get: "stream", getPriming: 30 });
    const t = await connect({ url: f.url });
    let closes = 0;
    t.onClose = () => closes++;
    await t.startSSEListener();
    await t.request("get/end");
    expect(await waitFor(() => gets(f).length === 2)).toBe(true);
    expect(gets(f)[1].headers["last-event-id"]).toBe("get-1");
    expect(closes).toBe(0);
    await t.close();
  });
});

describe("A26 connectToServer and the listener", () => {
  it("A26: connectToServer waits for the GET listener's answer before it resolves", async () => {
    const f = await fixture({ get: "stream", getDelay: 200 });
    const started = performance.now();
    const connection = await native.connectToServer("listening", { type: "http", url: f.url, timeout: 8000 });
    cleanup(() => connection.transport.close());
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(f.getStreamCount()).toBe(1);
  });

  it("A40: with compat v12, connectToServer starts no listener", async () => {
    const f = await fixture({ get: "stream" });
    const connection = await native.connectToServer("v12", { type: "http", url: f.url }, { compat: "v12" } as any);
    cleanup(() => connection.transport.close());
    await sleep(100);
    expect(gets(f)).toEqual([]);
  });

  it("A26: a stalled GET delays the connect by at most resolveSSEConnectTimeoutMs", async () => {
    const f = await fixture({ get: "stream", getDelay: 5000 });
    const started = performance.now();
    const connection = await native.connectToServer("stalled", { type: "http", url: f.url, timeout: 2000 });
    cleanup(() => connection.transport.close());
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(480);
    expect(waited).toBeLessThan(2000);
  });
});
