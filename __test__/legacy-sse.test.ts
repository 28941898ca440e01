// SPEC-AGENT18 A22/A23 (with A7, A9, A10, A17): LegacySseTransport and createSseTransport, the
// 2024-11-05 HTTP+SSE protocol, against 127.0.0.1 servers: the scriptable fixture in legacy
// mode, and small inline servers for what it does not do.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpTestScope, init, native, sleep, waitFor } from "./helpers";

const { fixture, cleanup } = httpTestScope();
afterEach(() => native.setTimeoutResolver(null));

type Transport = import("../index.js").LegacySseTransport;

interface Hit {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
}

interface LegacyServer {
  url: string;
  origin: string;
  hits: Hit[];
  gets: () => Hit[];
  posts: () => any[];
  /** GET streams the client has dropped. */
  dropped: () => number;
  /** One event on the newest stream: `data` as JSON unless it is a string. */
  send: (data: unknown, event?: string) => void;
  answer: (message: any, result: unknown) => void;
  end: () => void;
}

const openStream = (res: ServerResponse) => {
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  res.flushHeaders();
};

/**
 * A legacy server: by default the GET stream opens with `endpoint` = /messages?sessionId=s1,
 * and a POST gets 202, then (a request) its answer on the stream: `{tools: [...]}` for
 * tools/list, `{echo: params}` else, nothing for methods starting `hang`.
 */
async function legacyServer(
  options: {
    path?: string;
    get?: (req: IncomingMessage, res: ServerResponse, server: LegacyServer) => void;
    post?: (message: any, req: IncomingMessage, res: ServerResponse, server: LegacyServer) => void;
  } = {},
): Promise<LegacyServer> {
  const hits: Hit[] = [];
  const streams: ServerResponse[] = [];
  let dropped = 0;
  const http = createServer(async (req, res) => {
    const path = req.url ?? "/";
    if (req.method === "GET") {
      hits.push({ method: "GET", path, headers: req.headers, body: null });
      req.on("close", () => dropped++);
      streams.push(res);
      if (options.get) return options.get(req, res, server);
      openStream(res);
      res.write("event: endpoint\ndata: /messages?sessionId=s1\n\n");
      return;
    }
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    hits.push({ method: req.method ?? "", path, headers: req.headers, body });
    if (options.post) return options.post(body, req, res, server);
    res.writeHead(202).end("Accepted");
    if (body.id === undefined || body.method === undefined || body.method.startsWith("hang")) return;
    const tools = [{ name: "legacy-tool", inputSchema: { type: "object" } }];
    server.answer(body, body.method === "tools/list" ? { tools } : { echo: body.params });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  const server: LegacyServer = {
    url: `http://127.0.0.1:${port}${options.path ?? "/sse"}`,
    origin: `http://127.0.0.1:${port}`,
    hits,
    gets: () => hits.filter((h) => h.method === "GET"),
    posts: () => hits.filter((h) => h.method === "POST").map((h) => h.body),
    dropped: () => dropped,
    send: (data, event) => {
      const text = typeof data === "string" ? data : JSON.stringify(data);
      streams.at(-1)?.write(`${event ? `event: ${event}\n` : ""}data: ${text}\n\n`);
    },
    answer: (message, result) => server.send({ jsonrpc: "2.0", id: message.id, result }),
    end: () => streams.at(-1)?.end(),
  };
  cleanup(
    () =>
      new Promise<void>((resolve) => {
        for (const stream of streams) stream.destroy();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  );
  return server;
}

async function connect(config: Record<string, unknown>): Promise<Transport> {
  const t = await native.createSseTransport({ type: "sse", ...config } as any);
  cleanup(() => t.close());
  return t;
}

/** A transport whose connect is expected to fail: closed after the test all the same. */
function unconnected(config: Record<string, unknown>): Transport {
  const t = new native.LegacySseTransport({ type: "sse", ...config } as any);
  cleanup(() => t.close());
  return t;
}

describe("A22 connect: the GET and its endpoint event", () => {
  it("A22/A23: createSseTransport connects; requests, notifications and answers over the stream", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ url: f.url });
    expect(t).toBeInstanceOf(native.LegacySseTransport);
    expect(t.connected).toBe(true);
    expect(t.url).toBe(f.url);
    const seen: unknown[] = [];
    t.onNotification = (method, params: any) => seen.push([method, params.data]);
    const initResult: any = await t.request("initialize", init);
    expect(initResult.serverInfo.name).toBe("fixture-legacy");
    await expect(t.notify("notifications/initialized")).resolves.toBeUndefined();
    // T3: the notification the server sent before the answer is delivered first.
    await expect(t.request("sse/echo", { n: 1 })).resolves.toEqual({ params: { n: 1 } });
    expect(seen).toEqual([["notifications/message", "legacy note"]]);
    expect(f.received.map((r) => r.path)).toEqual(Array(3).fill("/messages?sessionId=legacy-1"));
    expect(f.posted()).toEqual([
      { jsonrpc: "2.0", id: 1, method: "initialize", params: init },
      { jsonrpc: "2.0", method: "notifications/initialized", params: {} },
      { jsonrpc: "2.0", id: 2, method: "sse/echo", params: { n: 1 } },
    ]);
  });

  it("A22/A17: the GET asks for text/event-stream; generated headers win, session headers are never sent", async () => {
    const s = await legacyServer();
    const headers = { "X-Api-Key": "k", accept: "*/*", "CONTENT-TYPE": "text/plain", "Mcp-Session-Id": "forged", "MCP-Protocol-Version": "1999-01-01" };
    const t = await connect({ url: s.url, headers });
    await t.request("tools/list");
    await t.notify("notifications/initialized");
    const [get, ...posts] = s.hits;
    expect(get.headers.accept).toBe("text/event-stream");
    expect(get.headers["x-api-key"]).toBe("k");
    for (const post of posts) {
      expect(post.path).toBe("/messages?sessionId=s1");
      expect(post.headers["content-type"]).toBe("application/json");
      expect(post.headers.accept).toBe("application/json, text/event-stream");
      expect(post.headers["x-api-key"]).toBe("k");
    }
    // A23: no session or version header, on any request.
    for (const hit of s.hits) {
      expect(hit.headers["mcp-session-id"]).toBeUndefined();
      expect(hit.headers["mcp-protocol-version"]).toBeUndefined();
    }
  });

  it("A22: the endpoint is resolved against the configured URL", async () => {
    const s = await legacyServer({
      path: "/base/sse?team=a",
      get: (_req, res) => {
        openStream(res);
        res.write("event: endpoint\ndata: messages?sessionId=rel\n\n");
      },
    });
    const t = await connect({ url: s.url });
    await expect(t.request("tools/list")).resolves.toMatchObject({ tools: [{ name: "legacy-tool" }] });
    expect(s.hits[1].path).toBe("/base/messages?sessionId=rel");
  });

  it("A22: an endpoint on another origin is refused, and nothing is POSTed", async () => {
    let port = 0;
    const s = await legacyServer({
      get: (_req, res) => {
        openStream(res);
        res.write(`event: endpoint\ndata: http://localhost:${port}/messages\n\n`);
      },
    });
    port = Number(new URL(s.url).port);
    const t = unconnected({ url: s.url });
    await expect(t.connect()).rejects.toThrow(
      `Legacy SSE endpoint origin mismatch: expected ${s.origin}, received http://localhost:${port}`,
    );
    expect(t.connected).toBe(false);
    await expect(t.request("tools/list")).rejects.toThrow("Transport not connected");
    expect(s.posts()).toEqual([]);
    // The refused stream is not kept open.
    expect(await waitFor(() => s.dropped() === 1)).toBe(true);
  });

  it("A22: a non-2xx answer rejects with HTTP <status>: <body>", async () => {
    const s = await legacyServer({ get: (_req, res) => res.writeHead(404).end("no sse here") });
    const error: any = await native.createSseTransport({ type: "sse", url: s.url }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("HTTP 404: no sse here");
    expect(error.status).toBe(404);
  });

  it("A22: a 2xx answer without a body rejects", async () => {
    const s = await legacyServer({ get: (_req, res) => res.writeHead(204).end() });
    await expect(native.createSseTransport({ type: "sse", url: s.url })).rejects.toThrow(
      "Legacy SSE response did not include a body",
    );
  });

  it("A22: a stream that ends before its endpoint event rejects", async () => {
    const s = await legacyServer({
      get: (_req, res) => {
        openStream(res);
        res.end('data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n');
      },
    });
    await expect(native.createSseTransport({ type: "sse", url: s.url })).rejects.toThrow(
      "Legacy SSE endpoint event not received",
    );
  });

  it("A22: no endpoint within config.timeout rejects; it covers an unanswered GET too", async () => {
    const s = await legacyServer({
      get: (req, res) => {
        if (req.headers["x-case"] === "silent") return; // never even answers the GET
        openStream(res);
        res.write(": no endpoint yet\n\n");
      },
    });
    for (const headers of [{}, { "X-Case": "silent" }]) {
      const started = performance.now();
      const t = unconnected({ url: s.url, timeout: 200, headers });
      const error: any = await t.connect().catch((e) => e);
      expect(error.message).toBe("Legacy SSE endpoint timeout after 200ms");
      // A47: the agent's class, a transport failure too (A45).
      expect(error).toBeInstanceOf(native.LegacySseConnectionTimeoutError);
      expect(error).toBeInstanceOf(native.MCPTransportError);
      expect([error.name, error.transport, error.failure, error.retryable]).toEqual(["LegacySseConnectionTimeoutError", "http", "timeout", false]);
      expect(performance.now() - started).toBeLessThan(2000);
      expect(t.connected).toBe(false);
    }
  });

  it("A22/A9: the connect timeout comes from the timeout resolver; 0 means none", async () => {
    const s = await legacyServer({
      get: (req, res) => {
        openStream(res);
        if (req.headers["x-case"] === "late") {
          setTimeout(() => res.write("event: endpoint\ndata: /messages\n\n"), 300);
        }
      },
    });
    const inputs: unknown[] = [];
    native.setTimeoutResolver((configTimeout) => {
      inputs.push(configTimeout);
      return 120;
    });
    await expect(unconnected({ url: s.url, timeout: 30_000 }).connect()).rejects.toThrow(
      "Legacy SSE endpoint timeout after 120ms",
    );
    expect(inputs).toEqual([30_000]);
    native.setTimeoutResolver(null);
    const t = await connect({ url: s.url, timeout: 0, headers: { "X-Case": "late" } });
    expect(t.connected).toBe(true);
  });

  it("A22: connect() while connecting returns the same promise; while connected it is a no-op", async () => {
    const s = await legacyServer();
    const t = unconnected({ url: s.url });
    expect(t.connected).toBe(false);
    const first = t.connect();
    expect(t.connect()).toBe(first);
    await first;
    expect(t.connected).toBe(true);
    await t.connect();
    await expect(t.request("tools/list")).resolves.toMatchObject({ tools: [{ name: "legacy-tool" }] });
    expect(s.gets()).toHaveLength(1);
  });

  it("A22/A21: after a failed connect close() is a no-op without onClose, and connect() may try again", async () => {
    let refuse = true;
    const s = await legacyServer({
      get: (_req, res) => {
        if (refuse) return void res.writeHead(503).end("starting");
        openStream(res);
        res.write("event: endpoint\ndata: /messages\n\n");
      },
    });
    const t = unconnected({ url: s.url });
    let closes = 0;
    t.onClose = () => closes++;
    await expect(t.connect()).rejects.toThrow("HTTP 503: starting");
    await t.close();
    refuse = false;
    await t.connect();
    expect(t.connected).toBe(true);
    expect(closes).toBe(0);
    await t.close();
    expect(closes).toBe(1);
  });

  it("A22: close() while connecting stops the GET and rejects the connect with Transport closed", async () => {
    const s = await legacyServer({ get: (_req, res) => openStream(res) }); // no endpoint, ever
    const t = unconnected({ url: s.url });
    const connecting = t.connect().catch((e: Error) => e);
    await waitFor(() => s.gets().length === 1);
    await t.close();
    expect(((await connecting) as Error).message).toBe("Transport closed");
    expect(t.connected).toBe(false);
    expect(await waitFor(() => s.dropped() === 1)).toBe(true);
    await t.connect();
    expect(t.connected).toBe(false);
  });

  it("E2: configs without a usable url, or of another type, reject with TypeErrors; type may be left out", async () => {
    const cases: [unknown, string][] = [
      [{ type: "sse" }, "url"],
      [{ type: "sse", url: "" }, "url"],
      [{ type: "sse", url: "not a url" }, "url"],
      [{ type: "sse", url: "ftp://x/" }, "url"],
      [{ type: "http", url: "http://127.0.0.1/" }, "type"],
      [{ type: "sse", url: "http://127.0.0.1/", headers: 3 }, "headers"],
      [{ type: "sse", url: "http://127.0.0.1/", requestIdFormat: "uuid" }, "requestIdFormat"],
    ];
    for (const [config, field] of cases) {
      const error: any = await native.createSseTransport(config as any).catch((e) => e);
      expect(error, JSON.stringify(config)).toBeInstanceOf(TypeError);
      expect(error.message).toContain(`"${field}"`);
      expect(() => new native.LegacySseTransport(config as any)).toThrow(TypeError);
    }
    const s = await legacyServer();
    const t = await connect({ type: undefined, url: s.url });
    expect(t.connected).toBe(true);
  });
});

describe("A23 requests and the stream", () => {
  it("A23: concurrent requests each get their own answer", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ url: f.url });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => t.request("sse/echo", { i })));
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => ({ params: { i } })));
  });

  it("A23/A8: an event holding a batch settles each request; empty and [DONE] events are skipped", async () => {
    const held: any[] = [];
    const s = await legacyServer({
      post: (message, _req, res, server) => {
        res.writeHead(202).end();
        held.push(message);
        if (held.length < 2) return;
        server.send("");
        server.send("[DONE]");
        server.send(held.map((m) => ({ jsonrpc: "2.0", id: m.id, result: { got: m.params.n } })));
      },
    });
    const t = await connect({ url: s.url });
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    await expect(Promise.all([t.request("a", { n: 1 }), t.request("b", { n: 2 })])).resolves.toEqual([{ got: 1 }, { got: 2 }]);
    expect(errors).toEqual([]);
    expect(t.connected).toBe(true);
  });

  it("A23/T11: a server request on the stream is answered by POST with onRequest's value; ping by itself", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ url: f.url });
    const asked: unknown[] = [];
    t.onRequest = (method, params) => {
      asked.push([method, params]);
      return { roots: [{ uri: "file:///work", name: "work" }] };
    };
    const answer: any = await t.request("sse/server-request", { method: "roots/list", params: { a: 1 } });
    expect(asked).toEqual([["roots/list", { a: 1 }]]);
    expect(answer.clientSaid).toEqual({ jsonrpc: "2.0", id: "srv-1", result: { roots: [{ uri: "file:///work", name: "work" }] } });
    const ping: any = await t.request("sse/server-request", { method: "ping" });
    expect(ping.clientSaid).toEqual({ jsonrpc: "2.0", id: "srv-2", result: {} });
    t.onRequest = undefined;
    const unhandled: any = await t.request("sse/server-request", { method: "sampling/createMessage" });
    expect(unhandled.clientSaid.error.code).toBe(-32601);
    // The answers went to the endpoint like everything else.
    expect(f.received.every((r) => r.path === "/messages?sessionId=legacy-1")).toBe(true);
  });

  it("A23: a non-2xx POST rejects the request or notify with HTTP <status>: <body>", async () => {
    const s = await legacyServer({ post: (_m, _req, res) => res.writeHead(500).end("boom") });
    const t = await connect({ url: s.url });
    const error: any = await t.request("tools/list").catch((e) => e);
    expect(error.message).toBe("HTTP 500: boom");
    expect(error.status).toBe(500);
    await expect(t.notify("notifications/initialized")).rejects.toThrow("HTTP 500: boom");
    expect(t.connected).toBe(true);
  });

  it("A23: the POST is bounded by the timeout: Request timeout / Notify timeout", async () => {
    const s = await legacyServer({ post: () => {} }); // never answers the POST
    const t = await connect({ url: s.url, timeout: 200 });
    const started = performance.now();
    await expect(t.request("tools/list")).rejects.toThrow("Request timeout after 200ms");
    await expect(t.notify("notifications/initialized")).rejects.toThrow("Notify timeout after 200ms");
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("A23/T9: an accepted POST whose answer never comes: Legacy SSE response timeout, then notifications/cancelled", async () => {
    const s = await legacyServer();
    const t = await connect({ url: s.url, timeout: 200 });
    await expect(t.request("hang/forever")).rejects.toThrow("Legacy SSE response timeout after 200ms");
    expect(await waitFor(() => s.posts().some((m) => m.method === "notifications/cancelled"))).toBe(true);
    const cancelled = s.posts().find((m) => m.method === "notifications/cancelled");
    expect(cancelled.params.requestId).toBe(1);
    // The transport is fine afterwards.
    await expect(t.request("tools/list")).resolves.toMatchObject({ tools: [{ name: "legacy-tool" }] });
  });

  it("A23/A9: the timeout resolver times requests and notifies as they start", async () => {
    const s = await legacyServer();
    const t = await connect({ url: s.url, timeout: 30_000 });
    native.setTimeoutResolver(() => 150);
    await expect(t.request("hang/1")).rejects.toThrow("Legacy SSE response timeout after 150ms");
  });

  it("A23/T8: an abort rejects with the signal's reason", async () => {
    const s = await legacyServer();
    const t = await connect({ url: s.url });
    const controller = new AbortController();
    const pending = t.request("hang/abort", {}, { signal: controller.signal });
    await waitFor(() => s.posts().length === 1);
    controller.abort(new Error("user gave up"));
    await expect(pending).rejects.toThrow("user gave up");
  });

  it("A23: non-JSON data goes to onError and rejects what is pending; the stream is over", async () => {
    const s = await legacyServer({
      post: (message, _req, res, server) => {
        res.writeHead(202).end();
        if (message.method === "garble") server.send("{oops");
      },
    });
    const t = await connect({ url: s.url });
    const errors: string[] = [];
    let closes = 0;
    t.onError = (e) => errors.push(e.message);
    t.onClose = () => closes++;
    const waiting = t.request("hang/pending");
    await waitFor(() => s.posts().length === 1);
    const garbled = t.request("garble");
    const message = "Legacy SSE message event contained non-JSON data: {oops";
    const outcomes = await Promise.allSettled([waiting, garbled]);
    expect(outcomes.map((o) => o.status === "rejected" && o.reason.message)).toEqual([message, message]);
    expect(errors).toEqual([message]);
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(t.connected).toBe(false);
  });

  it("A23: the server ending the stream rejects pending requests, disconnects and fires onClose once", async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ url: f.url });
    let closes = 0;
    t.onClose = () => closes++;
    // In legacy mode the fixture's slow/json answer never reaches the stream: it stays pending.
    const pending = t.request("slow/json", { ms: 1 });
    const ending = t.request("legacy/end");
    const outcomes = await Promise.allSettled([pending, ending]);
    const closed = "Transport closed: legacy SSE stream closed";
    expect(outcomes.map((o) => o.status === "rejected" && o.reason.message)).toEqual([closed, closed]);
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(t.connected).toBe(false);
    await expect(t.request("tools/list")).rejects.toThrow("Transport not connected");
    await expect(t.notify("notifications/x")).rejects.toThrow("Transport not connected");
    await t.close();
    await sleep(50);
    expect(closes).toBe(1);
  });

  it("A23/A21/A48: close() rejects pending with an AbortError, drops the stream, fires onClose once, then unsets it", async () => {
    const s = await legacyServer();
    const t = await connect({ url: s.url });
    let closes = 0;
    const onClose = () => closes++;
    t.onClose = onClose;
    expect(t.onClose).toBe(onClose);
    const pending = t.request("hang/until-close").catch((e: Error) => e);
    await waitFor(() => s.posts().length === 1);
    await t.close();
    const aborted = (await pending) as Error;
    expect(aborted).toBeInstanceOf(DOMException);
    expect([aborted.name, aborted.message]).toEqual(["AbortError", "MCP legacy SSE transport closed"]);
    expect(closes).toBe(1);
    expect(t.onClose).toBeUndefined();
    expect(t.connected).toBe(false);
    expect(await waitFor(() => s.dropped() === 1)).toBe(true);
    await t.close();
    expect(closes).toBe(1);
    await expect(t.request("tools/list")).rejects.toThrow("Transport not connected");
  });

  it("A23/A10: a 401 to a POST asks onAuthError; its headers replace config.headers and the POST is retried once", async () => {
    const s = await legacyServer({
      post: (message, req, res, server) => {
        if (req.headers.authorization !== "Bearer new") return void res.writeHead(401).end("token expired");
        res.writeHead(202).end();
        if (message.id !== undefined) server.answer(message, { ok: true });
      },
    });
    const t = await connect({ url: s.url, headers: { Authorization: "Bearer old", "X-Old": "1" } });
    let asked = 0;
    t.onAuthError = async () => {
      asked++;
      return { Authorization: "Bearer new" };
    };
    expect(typeof t.onAuthError).toBe("function");
    await expect(t.request("tools/list")).resolves.toEqual({ ok: true });
    await expect(t.notify("notifications/initialized")).resolves.toBeUndefined();
    expect(asked).toBe(1);
    const posts = s.hits.filter((h) => h.method === "POST");
    expect(posts.map((p) => p.headers.authorization)).toEqual(["Bearer old", "Bearer new", "Bearer new"]);
    expect(posts.map((p) => p.headers["x-old"])).toEqual(["1", undefined, undefined]);
    // The GET was never retried.
    expect(s.gets()).toHaveLength(1);

    // `null`: the original error.
    const other = await connect({ url: s.url, headers: { Authorization: "Bearer old" } });
    other.onAuthError = async () => null;
    const error: any = await other.request("tools/list").catch((e) => e);
    expect(error.message).toBe("HTTP 401: token expired");
    expect(error.status).toBe(401);
  });

  it('A23/A7: requestIdFormat "string" sends unique 16-digit hex ids and matches their answers', async () => {
    const f = await fixture({ legacy: true });
    const t = await connect({ url: f.url, requestIdFormat: "string" });
    await expect(t.request("sse/echo", { a: 1 })).resolves.toEqual({ params: { a: 1 } });
    await expect(t.request("sse/echo", { a: 2 })).resolves.toEqual({ params: { a: 2 } });
    const ids = f.posted().map((m) => m.id);
    expect(ids.every((id) => /^[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
  });

  it("A22: works wherever a transport is expected: listTools over a connection built by hand", async () => {
    const s = await legacyServer();
    const transport = await connect({ url: s.url });
    const connection = {
      name: "legacy",
      config: { type: "sse" as const, url: s.url },
      transport,
      serverInfo: { name: "legacy", version: "1" },
      capabilities: { tools: {} },
    };
    const tools = await native.listTools(connection);
    expect(tools.map((tool) => tool.name)).toEqual(["legacy-tool"]);
  });
});
