// H10 on Bun: the trust conventions Bun's own fetch follows (a server's `ca`,
// NODE_EXTRA_CA_CERTS, NODE_TLS_REJECT_UNAUTHORIZED=0), as __test__/tls-trust.test.ts on Node.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { fileURLToPath } from "node:url";
// @ts-ignore a fixture in plain JS
import { makeCa, startHttps } from "../fixtures/tls-ca.mjs";
import { native } from "./support";

setDefaultTimeout(20_000);
let ca: any;
let server: { url: string; close: () => Promise<void> };
beforeAll(async () => {
  ca = makeCa();
  server = await startHttps(ca);
});
afterAll(() => server?.close());

const ping = async (config: Record<string, unknown>) => {
  const t = await native.createHttpTransport({ type: "http", url: server.url, timeout: 5000, ...config } as any);
  try {
    return await t.request("ping");
  } finally {
    await t.close();
  }
};

describe("H10 trust on Bun", () => {
  it("H10: refused without trust; trusted through the server's `ca`", async () => {
    await expect(ping({})).rejects.toThrow(/invalid peer certificate: UnknownIssuer/);
    await expect(ping({ ca: ca.caPath })).resolves.toEqual({});
  });

  it("H10: NODE_TLS_REJECT_UNAUTHORIZED=0 in Bun's process.env turns the checks off", async () => {
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
    try {
      await expect(ping({})).resolves.toEqual({});
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    }
    await expect(ping({})).rejects.toThrow(/invalid peer certificate/);
  });

  it("H10: NODE_EXTRA_CA_CERTS is trusted by us as by Bun's fetch", async () => {
    const index = fileURLToPath(new URL("../../index.js", import.meta.url));
    const script = `
      const native = require(${JSON.stringify(index)});
      const url = ${JSON.stringify(server.url)};
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
      const viaFetch = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } }).then((r) => r.status);
      const answer = await native.callMCP(url, "ping");
      console.log(JSON.stringify({ viaFetch, answer: answer.result }));`;
    const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caPath }, stdout: "pipe" });
    const out = await new Response(child.stdout).text();
    await child.exited;
    expect(JSON.parse(out)).toEqual({ viaFetch: 200, answer: {} });
  });

  it("H10: transports made as the addon loads (the trust store still loading) trust NODE_EXTRA_CA_CERTS, repeated in `ca` or not", async () => {
    const index = fileURLToPath(new URL("../../index.js", import.meta.url));
    const script = `
      const native = require(${JSON.stringify(index)});
      const url = ${JSON.stringify(server.url)};
      const init = { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } };
      const call = async (config) => {
        const transport = await native.createHttpTransport({ type: "http", url, timeout: 5000, ...config });
        try { return (await transport.request("initialize", init)).serverInfo.name; } finally { await transport.close(); }
      };
      const names = await Promise.all([call({}), call({ ca: ${JSON.stringify(ca.caPath)} }), call({})]).catch((e) => String(e && e.message));
      console.log(JSON.stringify({ names }));`;
    const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caPath }, stdout: "pipe" });
    const out = await new Response(child.stdout).text();
    await child.exited;
    expect(JSON.parse(out).names).toHaveLength(3);
  });
});
