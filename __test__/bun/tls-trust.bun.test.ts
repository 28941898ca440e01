// H10 on Bun: the trust conventions Bun's own fetch follows (a server's `ca`,
// NODE_EXTRA_CA_CERTS, NODE_TLS_REJECT_UNAUTHORIZED=0), as __test__/tls-trust.test.ts on Node.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { fileURLToPath } from "node:url";
// @ts-ignore a fixture in plain JS
import { loadTimeTransportsScript, makeCa, startHttps } from "../fixtures/tls-ca.mjs";
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
    const script = loadTimeTransportsScript(index, server.url, ca.caPath);
    const run = async (extra: string) => {
      const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: extra }, stdout: "pipe" });
      const out = await new Response(child.stdout).text();
      await child.exited;
      return JSON.parse(out);
    };
    expect((await run(ca.caPath)).names).toHaveLength(3);
    expect((await run("")).error).toMatch(/invalid peer certificate: UnknownIssuer/);
  });
});
