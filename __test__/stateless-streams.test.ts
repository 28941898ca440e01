// SPEC-PROTOCOL N3/N6/N7 over stdio and N5/N7 over HTTP (the 2026-07-28 era): the stdio
// fixture in --stateless mode, and a stateless HTTP server of ours whose streams break,
// idle, or stay open as subscriptions.
import { createServer, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { history, native, server, waitFor } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

const META = "io.modelcontextprotocol/";
const SUBSCRIPTION = `${META}subscriptionId`;

async function connect(config: any, options: any = {}) {
  const client = await native.MCPClient.connect("stateless", config, { client: { protocolVersion: "2026-07-28" }, ...options });
  cleanups.push(() => client.close());
  return client;
}

const statelessStdio = { command: process.execPath, args: [server, "--stateless"] };

describe("N3/N6/N7 the stateless era over stdio", () => {
  it("N3: server/discover fills the connection, every request carries the envelope; N7: a subscription to what the server announces", async () => {
    const client = await connect(statelessStdio);
    const { connection } = client;
    expect(connection.protocolVersion).toBe("2026-07-28");
    expect(connection.serverInfo).toEqual({ name: "fixture-stateless", version: "2.0.0" });
    expect(connection.instructions).toBe("stateless stdio");
    const seen: { method: string; params: any }[] = [];
    connection.transport.onNotification = (method, params) => seen.push({ method, params });
    await expect(client.callTool("echo", { text: "hi" })).resolves.toMatchObject({ content: [{ text: "hi" }] });
    const received = await history(connection.transport as any);
    const requests = received.filter((m: any) => m.method && m.id !== undefined);
    expect(requests.map((m: any) => m.method)).toEqual(["server/discover", "subscriptions/listen", "tools/call", "tools/call"]);
    for (const request of requests) expect(request.params._meta[`${META}protocolVersion`]).toBe("2026-07-28");
    // Tools and prompts announce list changes; resources only updates, so not asked for.
    expect(requests[1].params.notifications).toEqual({ toolsListChanged: true, promptsListChanged: true });
    await client.callTool("toggle_extra", {});
    await client.callTool("announce_changes", { uri: "fixture://r/1" });
    // The acknowledgement is ours; the changes are the caller's, tagged with the subscription.
    expect(seen.map((n) => n.method)).toEqual(["notifications/tools/list_changed", "notifications/prompts/list_changed"]);
    expect(seen[0].params._meta[SUBSCRIPTION]).toBe(requests[1].id);
  });

  it("N7: startSSEListener(filter) opens one more subscription; it ends with the connection and never rejects", async () => {
    const client = await connect(statelessStdio);
    const transport = client.connection.transport as any;
    const seen: string[] = [];
    transport.onNotification = (method: string, params: any) => seen.push(`${method} ${params.uri ?? ""}`.trim());
    const listening = transport.startSSEListener({ resourceSubscriptions: ["fixture://r/1"] });
    const open = async () => JSON.parse((await client.callTool("subscriptions", {}) as any).content[0].text);
    expect((await open()).map((s: any) => s.filter)).toEqual([
      { toolsListChanged: true, promptsListChanged: true },
      { resourceSubscriptions: ["fixture://r/1"] },
    ]);
    await client.callTool("announce_changes", { uri: "fixture://r/1" });
    await client.callTool("announce_changes", { uri: "fixture://r/2" });
    expect(seen).toEqual([
      "notifications/prompts/list_changed",
      "notifications/resources/updated fixture://r/1",
      "notifications/prompts/list_changed",
    ]);
    let ended = false;
    void listening.then(() => (ended = true));
    await client.close();
    await expect(listening).resolves.toBeUndefined();
    expect(ended).toBe(true);
  });

  it("N7/A28: subscribeToResources opens a subscription for the URIs (no resources/subscribe in this era)", async () => {
    const client = await connect(statelessStdio);
    const seen: string[] = [];
    client.connection.transport.onNotification = (method: string, params: any) => seen.push(`${method} ${params.uri ?? ""}`.trim());
    await native.subscribeToResources(client.connection, ["fixture://r/1"]);
    await client.callTool("announce_changes", { uri: "fixture://r/1" });
    expect(seen).toContain("notifications/resources/updated fixture://r/1");
    const received = await history(client.connection.transport as any);
    expect(received.some((m: any) => m.method === "resources/subscribe")).toBe(false);
    expect(received.filter((m: any) => m.method === "subscriptions/listen").at(-1).params.notifications).toEqual({ resourceSubscriptions: ["fixture://r/1"] });
  });

  it("N6: an input-required result over stdio is fulfilled by the elicitation handler and retried", async () => {
    const asked: string[] = [];
    const client = await connect(statelessStdio, {
      elicitation: async (params: any) => (asked.push(params.message), { action: "accept", content: { sure: true } }),
    });
    const result: any = await client.callTool("confirm", {});
    expect(JSON.parse(result.content[0].text)).toEqual({
      responses: { ok: { action: "accept", content: { sure: true } } },
      state: '{"n": 1,  "spaced":true}',
    });
    expect(asked).toEqual(["Sure?"]);
    const calls = (await history(client.connection.transport as any)).filter((m: any) => m.params?.name === "confirm");
    expect(calls).toHaveLength(2);
    expect(calls[1].id).not.toBe(calls[0].id);
  });

  it("N2: auto finds a stateless stdio server by the probe; N9: ping is server/discover, and abort still sends notifications/cancelled (T9)", async () => {
    const config = { ...statelessStdio, env: { N2_CASE: `stdio-stateless-${Date.now()}` } };
    const client = await native.MCPClient.connect("auto", config, { client: { protocolVersion: "auto" } } as any);
    cleanups.push(() => client.close());
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    expect(client.connection.eraDetection).toBe("probe");
    await expect(client.ping()).resolves.toEqual({});
    const controller = new AbortController();
    const call = client.callTool("slow", { ms: 5000 }, { signal: controller.signal } as any);
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toThrow();
    const received = await history(client.connection.transport as any);
    expect(received.filter((m: any) => m.method === "server/discover")).toHaveLength(2);
    expect(received.some((m: any) => m.method === "notifications/cancelled")).toBe(true);
  });
});

/** A stateless HTTP server whose tool calls answer over SSE streams it can break, and
 *  which keeps `subscriptions/listen` streams open, with keep-alive comments. */
async function streamingServer() {
  const posts: { body: any; closed: boolean }[] = [];
  const listens = new Map<number, ServerResponse>();
  let flakyCalls = 0;
  let listenBreaks = 0;
  const http = createServer(async (req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405);
      return res.end();
    }
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    const post = { body, closed: false };
    posts.push(post);
    res.on("close", () => (post.closed = !res.writableFinished));
    const json = (message: object) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, ...message }));
    };
    const sse = () => (res.writeHead(200, { "Content-Type": "text/event-stream" }), res.flushHeaders());
    const event = (to: ServerResponse, message: object) => to.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", ...message })}\n\n`);
    if (body.id === undefined) {
      res.writeHead(202);
      return res.end();
    }
    const { method, params } = body;
    if (method === "server/discover") {
      return json({ result: { supportedVersions: ["2026-07-28"], capabilities: { tools: { listChanged: true } }, _meta: { [`${META}serverInfo`]: { name: "streams", version: "1" } } } });
    }
    if (method === "subscriptions/listen") {
      sse();
      res.write("retry: 50\n\n");
      event(res, { method: "notifications/subscriptions/acknowledged", params: { notifications: params.notifications, _meta: { [SUBSCRIPTION]: body.id } } });
      if (listenBreaks++ === 0) return setTimeout(() => res.destroy(), 20);
      listens.set(body.id, res);
      const alive = setInterval(() => res.write(": keepalive\n\n"), 100);
      res.on("close", () => (clearInterval(alive), listens.delete(body.id)));
      return;
    }
    if (method === "tools/call" && params.name === "flaky") {
      if (flakyCalls++ === 0) {
        sse();
        event(res, { method: "notifications/message", params: { level: "info", data: "working" } });
        return setTimeout(() => res.destroy(), 20);
      }
      return json({ result: { content: [{ type: "text", text: `flaky ${params.arguments.n}` }] } });
    }
    if (method === "tools/call" && params.name === "broken") {
      sse();
      return setTimeout(() => res.destroy(), 20);
    }
    if (method === "tools/call" && params.name === "slow") {
      sse();
      return;
    }
    if (method === "tools/call" && params.name === "change") {
      for (const [id, stream] of listens) event(stream, { method: "notifications/tools/list_changed", params: { _meta: { [SUBSCRIPTION]: id } } });
      return json({ result: { content: [{ type: "text", text: "changed" }] } });
    }
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "Method not found" } }));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((r) => (http.closeAllConnections(), http.close(r))));
  return { url: `http://127.0.0.1:${(http.address() as any).port}/mcp`, posts, listens };
}

describe("N5/N7 streams over HTTP in the stateless era", () => {
  it("N5: a response stream that breaks before the answer re-sends the request once, under a new id, its params unchanged", async () => {
    const s = await streamingServer();
    const client = await connect({ type: "http", url: s.url });
    await expect(client.callTool("flaky", { n: 7 })).resolves.toMatchObject({ content: [{ text: "flaky 7" }] });
    const calls = s.posts.filter((p) => p.body.params?.name === "flaky").map((p) => p.body);
    expect(calls).toHaveLength(2);
    expect(calls[1].id).not.toBe(calls[0].id);
    expect(calls[1].params).toEqual(calls[0].params);
    // Twice broken: it fails, after one re-send only.
    await expect(client.callTool("broken", {})).rejects.toThrow();
    expect(s.posts.filter((p) => p.body.params?.name === "broken")).toHaveLength(2);
  });

  it("N5: cancelling closes the request's stream; no notifications/cancelled is posted", async () => {
    const s = await streamingServer();
    const client = await connect({ type: "http", url: s.url });
    const controller = new AbortController();
    const call = client.callTool("slow", {}, { signal: controller.signal } as any);
    await waitFor(() => s.posts.some((p) => p.body.params?.name === "slow"));
    controller.abort();
    await expect(call).rejects.toThrow();
    const slow = s.posts.find((p) => p.body.params?.name === "slow")!;
    expect(await waitFor(() => slow.closed)).toBe(true);
    // A timeout cancels the same way.
    await expect(client.callTool("slow", {}, { timeout: 100 } as any)).rejects.toThrow("Request timeout after 100ms");
    expect(await waitFor(() => s.posts.filter((p) => p.body.params?.name === "slow").every((p) => p.closed))).toBe(true);
    expect(s.posts.some((p) => p.body.method === "notifications/cancelled")).toBe(false);
  });

  it("N7: the subscription outlives the request timeout through keep-alive comments, is opened again with a new id when it breaks, and delivers changes", async () => {
    const s = await streamingServer();
    const client = await connect({ type: "http", url: s.url, timeout: 300 });
    const seen: any[] = [];
    client.connection.transport.onNotification = (method, params) => seen.push({ method, params });
    // The first listen stream breaks after its acknowledgement; the second stays.
    expect(await waitFor(() => s.listens.size === 1)).toBe(true);
    const listens = s.posts.filter((p) => p.body.method === "subscriptions/listen").map((p) => p.body);
    expect(listens).toHaveLength(2);
    expect(listens[1].id).not.toBe(listens[0].id);
    expect(listens[1].params.notifications).toEqual({ toolsListChanged: true });
    await new Promise((r) => setTimeout(r, 700));
    expect(s.listens.size).toBe(1);
    await client.callTool("change", {});
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    expect(seen[0].method).toBe("notifications/tools/list_changed");
    expect(seen[0].params._meta[SUBSCRIPTION]).toBe(listens[1].id);
    await client.close();
    expect(await waitFor(() => s.listens.size === 0)).toBe(true);
  });
});
