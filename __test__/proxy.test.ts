// H10: the proxy variables docs/api.md ("Proxies and trust") lists, against a forward proxy
// on 127.0.0.1 that records what passes through it: HTTP_PROXY is used for an http URL,
// NO_PROXY sends a host it names around it, and ALL_PROXY stands in for an unset one.
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpTestScope, native } from "./helpers";

const { fixture, cleanup } = httpTestScope();
const VARIABLES = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
afterEach(() => {
  for (const name of VARIABLES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

/** A forward proxy: absolute-form requests are recorded and passed on. */
async function startProxy() {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    const upstream = request(req.url!, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function listTools(url: string) {
  const t = await native.createHttpTransport({ type: "http", url });
  cleanup(() => t.close());
  await t.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "proxy-test", version: "1" } });
  return t.request<any>("tools/list", {});
}

describe("H10 proxies", () => {
  it("H10: HTTP_PROXY carries an http server's requests; NO_PROXY naming the host goes around it", async () => {
    const server = await fixture();
    const proxy = await startProxy();
    for (const name of VARIABLES) delete process.env[name];
    process.env.HTTP_PROXY = proxy.url;
    expect((await listTools(server.url)).tools).toBeDefined();
    expect(proxy.seen).toEqual([`POST ${server.url}`, `POST ${server.url}`]);
    process.env.NO_PROXY = "127.0.0.1";
    await listTools(server.url);
    expect(proxy.seen).toHaveLength(2);
  });

  it("H10: ALL_PROXY (lowercase too) stands in when the scheme's own variable is unset", async () => {
    const server = await fixture();
    const proxy = await startProxy();
    for (const name of VARIABLES) delete process.env[name];
    process.env.all_proxy = proxy.url;
    await listTools(server.url);
    expect(proxy.seen.length).toBeGreaterThanOrEqual(2);
  });
});
