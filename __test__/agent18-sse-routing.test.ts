// SPEC-AGENT18 A25: v18's connectToServer (and manager) open `type: "sse"` with the legacy
// HTTP+SSE transport; a GET answered 400/404/405/406, or not with an event stream, falls back
// once to Streamable HTTP. compat "v12", MCPClient and createTransport keep §5/H11.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpFixture } from "./fixtures/http-server";
import { native } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});
async function fixture(options: Parameters<typeof startHttpFixture>[0] = {}) {
  const f = await startHttpFixture(options);
  cleanups.push(() => f.close());
  return f;
}
async function connect(config: any, options?: any) {
  const connection = await native.connectToServer("s", config, options);
  cleanups.push(() => native.disconnectServer(connection));
  return connection;
}
/** A server whose GET answers `get` and whose POST answers 500. */
async function refusing(get: (res: import("node:http").ServerResponse) => void, methods: string[] = []) {
  const server = createServer((req, res) => {
    req.resume();
    methods.push(req.method ?? "");
    if (req.method === "GET") return get(res);
    res.writeHead(500, { "Content-Type": "text/plain" }).end("not an MCP server");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`;
}

describe("A25 type sse", () => {
  it("A25: a legacy server gets the LegacySseTransport", async () => {
    const f = await fixture({ legacy: true });
    const connection = await connect({ type: "sse", url: f.url });
    expect(connection.transport).toBeInstanceOf(native.LegacySseTransport);
    await expect(connection.transport.request("sse/echo", { n: 1 })).resolves.toEqual({ params: { n: 1 } });
  });

  it("A25: a Streamable HTTP server (GET 405) is reached by the one fallback", async () => {
    const f = await fixture();
    const connection = await connect({ type: "sse", url: f.url });
    expect(connection.transport).toBeInstanceOf(native.HttpTransport);
    expect(f.received[0].method).toBe("GET");
    expect(f.received.filter((r) => r.method === "POST")[0].body.method).toBe("initialize");
  });

  it("A25: a GET answered with JSON is not an event stream: the fallback too", async () => {
    const methods: string[] = [];
    const url = await refusing((res) => res.writeHead(200, { "Content-Type": "application/json" }).end("{}"), methods);
    const legacy: any = await native.createSseTransport({ type: "sse", url }).catch((e) => e);
    expect(legacy.message).toBe("Legacy SSE response is not an event stream: application/json");
    methods.length = 0;
    // The fallback's initialize is refused by this server: its error is the connect's.
    const error: any = await connect({ type: "sse", url }).catch((e) => e);
    expect(error.message).toMatch(/^HTTP 500/);
    expect(methods).toEqual(["GET", "POST"]);
  });

  it("A25: other legacy failures do not fall back", async () => {
    const methods: string[] = [];
    const url = await refusing((res) => res.writeHead(500).end("down"), methods);
    const failure: any = await connect({ type: "sse", url }).catch((e) => e);
    expect(failure.message).toMatch(/^HTTP 500: down/);
    expect(methods).toEqual(["GET"]);
  });

  it('A40: compat "v12" and MCPClient keep §5/H11: the HTTP transport, no legacy GET first', async () => {
    const f = await fixture();
    const v12 = await connect({ type: "sse", url: f.url }, { compat: "v12" });
    expect(v12.transport).toBeInstanceOf(native.HttpTransport);
    expect(f.received[0].method).toBe("POST");
    const transport = await native.createTransport({ type: "sse", url: f.url });
    cleanups.push(() => transport.close());
    expect(transport).toBeInstanceOf(native.HttpTransport);
  });
});
