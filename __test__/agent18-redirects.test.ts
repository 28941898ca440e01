// SPEC-AGENT18 A24: mcpFetch and `headerPolicy: "origin-locked"` in both HTTP transports:
// redirects followed by hand (at most 5), a non-GET's 301/302/303 refused, configured headers
// only sent to the configured origin. Two 127.0.0.1 servers on different ports are two origins.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { native } from "./helpers";
import { startHttpFixture } from "./fixtures/http-server";

interface Hit {
  method: string;
  path: string;
  key: string | null;
  session: string | null;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

/** A server whose `/r/<status>/<n>?to=<url>` answers `status` to `/r/<status>/<n-1>`, and at 0 to `to`. */
async function redirector() {
  const hits: Hit[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    hits.push({
      method: req.method ?? "",
      path: url.pathname,
      key: (req.headers["x-key"] as string) ?? null,
      session: (req.headers["mcp-session-id"] as string) ?? null,
    });
    req.resume();
    const [, kind, status, n] = url.pathname.split("/");
    if (kind === "r") {
      const left = Number(n);
      const to = url.searchParams.get("to") ?? "/done";
      const location = left > 0 ? `/r/${status}/${left - 1}?to=${encodeURIComponent(to)}` : to;
      res.writeHead(Number(status), { Location: location });
      return res.end("moved");
    }
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end(`arrived ${req.method} ${url.pathname}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  cleanups.push(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { base: `http://127.0.0.1:${port}`, hits };
}

const sources = { generated: { Accept: "text/plain", "Mcp-Session-Id": "s-1" }, configured: { "X-Key": "secret", accept: "ignored" } };

describe("A24 mcpFetch", () => {
  it("A24: unlocked, fetch follows the redirects itself, with the merged headers", async () => {
    const a = await redirector();
    const response = await native.mcpFetch(`${a.base}/r/302/1`, { method: "GET" }, sources, false);
    expect(await response.text()).toBe("arrived GET /done");
    expect(a.hits.map((h) => h.key)).toEqual(["secret", "secret", "secret"]);
  });

  it("A24: origin-locked, a redirect to another origin gets the generated headers only", async () => {
    const a = await redirector();
    const b = await redirector();
    const url = `${a.base}/r/307/1?to=${encodeURIComponent(`${b.base}/landed`)}`;
    const response = await native.mcpFetch(url, { method: "POST", body: "{}" }, sources, true);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("arrived POST /landed");
    expect(a.hits).toEqual([
      { method: "POST", path: "/r/307/1", key: "secret", session: "s-1" },
      { method: "POST", path: "/r/307/0", key: "secret", session: "s-1" },
    ]);
    expect(b.hits).toEqual([{ method: "POST", path: "/landed", key: null, session: "s-1" }]);
  });

  it("A24: origin-locked, a 301/302/303 answering a POST is refused", async () => {
    const a = await redirector();
    for (const status of [301, 302, 303]) {
      const error: any = await native.mcpFetch(`${a.base}/r/${status}/0`, { method: "POST", body: "{}" }, sources, true).catch((e) => e);
      expect(error.message).toBe(`HTTP ${status}: server redirected a POST request; refusing to follow`);
    }
    const followed = await native.mcpFetch(`${a.base}/r/303/0`, { method: "GET" }, sources, true);
    expect(await followed.text()).toBe("arrived GET /done");
  });

  it("A24: origin-locked, five hops are followed and a sixth is 'Too many redirects (> 5) fetching <url>'", async () => {
    const a = await redirector();
    const five = await native.mcpFetch(`${a.base}/r/302/4`, { method: "GET" }, sources, true);
    expect(await five.text()).toBe("arrived GET /done");
    const url = `${a.base}/r/302/5`;
    const error: any = await native.mcpFetch(url, { method: "GET" }, sources, true).catch((e) => e);
    expect(error.message).toBe(`Too many redirects (> 5) fetching ${url}`);
    expect(a.hits.filter((h) => h.path !== "/done")).toHaveLength(5 + 6);
  });
});

describe("A24 origin-locked transports", () => {
  it("A24: an HttpTransport follows a 307 to another origin without the configured headers", async () => {
    const target = await startHttpFixture();
    cleanups.push(target.close);
    const a = await redirector();
    const url = `${a.base}/r/307/0?to=${encodeURIComponent(target.url)}`;
    const t = await native.createHttpTransport({ type: "http", url, headers: { "X-Key": "secret" }, headerPolicy: "origin-locked" });
    cleanups.push(() => t.close());
    expect(await t.request("json/echo", { n: 1 })).toEqual({ params: { n: 1 } });
    expect(a.hits).toEqual([{ method: "POST", path: "/r/307/0", key: "secret", session: null }]);
    expect(target.received.map((r) => [r.method, r.headers["x-key"] ?? null])).toEqual([["POST", null]]);
  });

  it("A24: an HttpTransport refuses a 302 answering its POST; without the policy it is followed as fetch would", async () => {
    const target = await startHttpFixture();
    cleanups.push(target.close);
    const a = await redirector();
    const url = `${a.base}/r/302/0?to=${encodeURIComponent(target.url)}`;
    const locked = await native.createHttpTransport({ type: "http", url, headerPolicy: "origin-locked" });
    cleanups.push(() => locked.close());
    const error: any = await locked.request("json/echo", {}).catch((e) => e);
    expect(error.message).toBe("HTTP 302: server redirected a POST request; refusing to follow");
    expect(target.received).toEqual([]);
    const open = await native.createHttpTransport({ type: "http", url });
    cleanups.push(() => open.close());
    // The POST became a GET, which the fixture does not serve.
    const followed: any = await open.request("json/echo", {}).catch((e) => e);
    expect(followed.message).toMatch(/^HTTP 405/);
    expect(target.received.map((r) => r.method)).toEqual(["GET"]);
  });

  it("A24: a LegacySseTransport's GET follows a redirect to another origin, the configured headers staying home", async () => {
    // The legacy stream's target: records what it was sent and names an endpoint.
    const seen: (string | null)[] = [];
    const target = createServer((req, res) => {
      seen.push((req.headers["x-key"] as string) ?? null);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write("event: endpoint\ndata: /messages\n\n");
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => {
      target.closeAllConnections();
      target.close(() => resolve());
    }));
    const a = await redirector();
    const to = `http://127.0.0.1:${(target.address() as AddressInfo).port}/sse`;
    const url = `${a.base}/r/302/0?to=${encodeURIComponent(to)}`;
    const t = new native.LegacySseTransport({ type: "sse", url, headers: { "X-Key": "secret" }, headerPolicy: "origin-locked" });
    cleanups.push(() => t.close());
    await t.connect();
    expect(a.hits).toEqual([{ method: "GET", path: "/r/302/0", key: "secret", session: null }]);
    expect(seen).toEqual([null]);
  });

  it("A24: a headerPolicy other than origin-locked is a TypeError", async () => {
    const error: any = await native.createHttpTransport({ type: "http", url: "http://127.0.0.1:9/mcp", headerPolicy: "open" as any }).catch((e) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('The "headerPolicy" field must be "origin-locked"');
  });
});
