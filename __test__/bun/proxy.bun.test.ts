// H10 on Bun: the proxy variables are the runtime's own `process.env` (Bun keeps it apart
// from the C environment), as __test__/proxy.test.ts checks on Node.
import { afterEach, expect, it } from "bun:test";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native } from "./support";

const cleanups = cleanupsAfterEach();
const names = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];
afterEach(() => names.forEach((name) => delete process.env[name]));

it("H10: HTTP_PROXY set in Bun's JS carries the requests; NO_PROXY goes around it", async () => {
  const server = await startHttpFixture();
  cleanups.push(server.close);
  const seen: string[] = [];
  const proxy = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const upstream = request(req.url!, { method: req.method, headers: req.headers }, (answer) => {
        let text = "";
        answer.on("data", (chunk) => (text += chunk));
        answer.on("end", () => res.writeHead(answer.statusCode ?? 502, answer.headers).end(text));
      });
      upstream.on("error", () => res.writeHead(502).end());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => proxy.close());
  process.env.HTTP_PROXY = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const list = async () => {
    const t: any = await native.createHttpTransport({ type: "http", url: server.url });
    cleanups.push(() => t.close());
    await t.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bun-proxy", version: "1" } });
    return t.request("tools/list", {});
  };
  expect((await list()).tools).toBeDefined();
  expect(seen).toEqual([`POST ${server.url}`, `POST ${server.url}`]);
  process.env.NO_PROXY = "127.0.0.1";
  await list();
  expect(seen).toHaveLength(2);
});
