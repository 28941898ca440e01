// SPEC-AGENT18 A20, A24 and A26 on Bun, where the v18 agent runs: when startSSEListener()
// settles and what its end does, connectToServer's wait for it, and mcpFetch's origin-locked
// redirects over Bun's own fetch, as __test__/agent18-http-rules.test.ts and
// __test__/agent18-redirects.test.ts check on Node.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native, sleep, waitFor } from "./support";

setDefaultTimeout(20_000);
const cleanups = cleanupsAfterEach();

async function fixture(options: Parameters<typeof startHttpFixture>[0] = {}) {
  const f = await startHttpFixture(options);
  cleanups.push(f.close);
  return f;
}

describe("the GET listener on Bun", () => {
  it("A20/§0: a Bun script awaiting startSSEListener() lives until the GET is answered, then ends with the stream open", async () => {
    const f = await fixture({ get: "stream", getDelay: 300 });
    const script = `
      const { createHttpTransport } = require(${JSON.stringify(require.resolve("../.."))});
      const t = await createHttpTransport({ type: "http", url: ${JSON.stringify(f.url)} });
      await t.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "s", version: "1" } });
      const started = Date.now();
      await t.startSSEListener();
      console.log("answered after " + (Date.now() - started) + " ms");`;
    const started = Date.now();
    const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
    const code = await proc.exited;
    const out = await new Response(proc.stdout).text();
    expect({ code, out }).toMatchObject({ code: 0, out: expect.stringMatching(/^answered after \d+ ms\n$/) });
    expect(Number(out.match(/\d+/)![0])).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("A20: startSSEListener() resolves once the GET is answered; the stream's end fires onClose, connected stays true", async () => {
    const f = await fixture({ get: "stream" });
    const t = await native.createHttpTransport({ type: "http", url: f.url });
    cleanups.push(() => t.close());
    let closes = 0;
    t.onClose = () => closes++;
    await t.startSSEListener();
    expect(f.getStreamCount()).toBe(1);
    await t.request("get/end");
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(t.connected).toBe(true);
  });

  it("A20: a GET unanswered after resolveSSEConnectTimeoutMs(timeout) is dropped", async () => {
    const f = await fixture({ get: "stream", getDelay: 400 });
    const t = await native.createHttpTransport({ type: "http", url: f.url, timeout: 400 });
    cleanups.push(() => t.close());
    const started = performance.now();
    await t.startSSEListener();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(350);
    await sleep(500);
    expect(f.getStreamCount()).toBe(0);
  });

  it("A26/A40: connectToServer waits for the listener; with compat v12 it starts none", async () => {
    const f = await fixture({ get: "stream", getDelay: 200 });
    const started = performance.now();
    const connection = await native.connectToServer("bun", { type: "http", url: f.url, timeout: 8000 });
    cleanups.push(() => connection.transport.close());
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(f.getStreamCount()).toBe(1);
    const g = await fixture({ get: "stream" });
    const old = await native.connectToServer("bun-v12", { type: "http", url: g.url }, { compat: "v12" });
    cleanups.push(() => old.transport.close());
    await sleep(100);
    expect(g.received.filter((r) => r.method === "GET")).toEqual([]);
  });
});

describe("mcpFetch on Bun", () => {
  it("A24: origin-locked, Bun's fetch is driven hop by hop: the other origin gets the generated headers only; a POST's 302 is refused", async () => {
    const keys: Record<string, (string | null)[]> = { a: [], b: [] };
    const serve = async (name: "a" | "b", handle: (path: string, res: any) => void) => {
      const server = createServer((req, res) => {
        keys[name].push((req.headers["x-key"] as string) ?? null);
        req.resume();
        handle(new URL(req.url ?? "/", "http://127.0.0.1").pathname, res);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    };
    const b = await serve("b", (_path, res) => res.writeHead(200).end("landed"));
    const a = await serve("a", (path, res) => {
      const status = path === "/found" ? 302 : 307;
      res.writeHead(status, { Location: `${b}/landed` }).end();
    });
    const sources = { generated: { "Mcp-Session-Id": "s" }, configured: { "X-Key": "secret" } };
    const response = await native.mcpFetch(`${a}/moved`, { method: "POST", body: "{}" }, sources, true);
    expect(await response.text()).toBe("landed");
    expect(keys).toEqual({ a: ["secret"], b: [null] });
    const error: any = await native.mcpFetch(`${a}/found`, { method: "POST", body: "{}" }, sources, true).catch((e) => e);
    expect(error.message).toBe("HTTP 302: server redirected a POST request; refusing to follow");
    expect(keys.b).toEqual([null]);
  });
});

describe("the agent's own HTTP check on Bun", () => {
  it("A20/A26: a GET listener Bun.serve never answers does not stop the connect; close() does not hang", async () => {
    let gets = 0;
    let initialized = 0;
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        if (request.method === "GET") {
          gets++;
          return new Promise<Response>(() => {});
        }
        if (request.method === "DELETE") return new Response(null, { status: 204 });
        const body = (await request.json()) as { id?: number; method?: string };
        if (body.method === "initialize") {
          const result = { protocolVersion: "2025-03-26", capabilities: { tools: {} }, serverInfo: { name: "stalled-get", version: "0" } };
          return Response.json({ jsonrpc: "2.0", id: body.id, result }, { headers: { "Mcp-Session-Id": "s-1" } });
        }
        if (body.method === "notifications/initialized") {
          initialized++;
          return new Response(null, { status: 202 });
        }
        return Response.json({ jsonrpc: "2.0", id: body.id, result: {} });
      },
    });
    cleanups.push(() => server.stop(true));
    const started = performance.now();
    const connection = await native.connectToServer("stalled", { type: "http", url: String(server.url), timeout: 1000 });
    expect(performance.now() - started).toBeLessThan(900);
    expect(connection.serverInfo.name).toBe("stalled-get");
    expect(gets).toBe(1);
    expect(initialized).toBe(1);
    await connection.transport.close();
  });
});
