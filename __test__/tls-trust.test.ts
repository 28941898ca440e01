// H10: whom the HTTP transports trust, as Node's and Bun's own fetch do: the system's roots,
// NODE_EXTRA_CA_CERTS (read once per process), a server's own `ca`, and nothing checked
// only with NODE_TLS_REJECT_UNAUTHORIZED=0. A CA and a leaf it signed, made for the test.
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-ignore a fixture in plain JS
import { loadTimeTransportsScript, makeCa, startHttps } from "./fixtures/tls-ca.mjs";
import { startOAuthFixture } from "./fixtures/oauth-server";
import { init, native } from "./helpers";

let ca: any;
let server: { url: string; close: () => Promise<void> };

beforeAll(async () => {
  ca = makeCa();
  server = await startHttps(ca);
});
afterAll(async () => {
  await server?.close();
  if (ca) rmSync(ca.dir, { recursive: true, force: true });
});

const echo = async (config: Record<string, unknown>) => {
  const connection = await native.connectToServer("tls", { type: "http", url: server.url, ...config });
  try {
    const result: any = await native.callTool(connection, "echo", { text: "over TLS" });
    return result.content[0].text;
  } finally {
    await native.disconnectServer(connection);
  }
};

describe("H10 trust", () => {
  it("H10: a certificate from an unknown CA is refused, naming the problem and the URL without its secrets", async () => {
    const connection: any = await native
      .connectToServer("tls", { type: "http", url: `${server.url}?token=s3cret`, timeout: 5000 })
      .catch((e: unknown) => e);
    expect(connection).toBeInstanceOf(Error);
    expect(connection.message).toMatch(/invalid peer certificate: UnknownIssuer/);
    expect(connection.message).toContain("https://127.0.0.1:");
    expect(connection.message).not.toContain("s3cret");
  });

  it("H10: the server's own `ca`, as PEM text, a path, or a list, is trusted for that server", async () => {
    await expect(echo({ ca: ca.ca })).resolves.toBe("over TLS");
    await expect(echo({ ca: ca.caPath })).resolves.toBe("over TLS");
    await expect(echo({ ca: [ca.caPath] })).resolves.toBe("over TLS");
    const legacy = new native.LegacySseTransport({ type: "sse", url: server.url, ca: ca.ca, timeout: 2000 });
    // A JSON endpoint is no event stream: the handshake got past TLS to say so.
    await expect(legacy.connect()).rejects.toThrow(/Legacy SSE|HTTP 405/);
  });

  it("H10: a `ca` that is neither PEM nor a readable file is a TypeError naming the field", async () => {
    const missing: any = await native.createHttpTransport({ type: "http", url: server.url, ca: "/no/such/ca.pem" }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TypeError);
    expect(missing.message).toContain('"ca"');
    const wrong: any = await native.createHttpTransport({ type: "http", url: server.url, ca: 42 } as any).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(TypeError);
  });

  it("H10: NODE_EXTRA_CA_CERTS is trusted (read at start, as Node reads it), by us and by Node's fetch alike", async () => {
    const script = `
      const native = require(${JSON.stringify(fileURLToPath(new URL("../index.js", import.meta.url)))});
      const url = ${JSON.stringify(server.url)};
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
      (async () => {
        const viaFetch = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } }).then((r) => r.status);
        const answer = await native.callMCP(url, "ping");
        console.log(JSON.stringify({ viaFetch, answer: answer.result }));
      })().catch((e) => { console.log(JSON.stringify({ error: String(e && e.message) })); });`;
    const run = promisify(execFile);
    const trusted = await run(process.execPath, ["-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caPath } });
    expect(JSON.parse(trusted.stdout)).toEqual({ viaFetch: 200, answer: {} });
    const untrusted = await run(process.execPath, ["-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: "" } });
    expect(JSON.parse(untrusted.stdout).error).toMatch(/fetch failed/);
  });

  it("H10: transports made as the addon loads, while it loads the trust store, trust NODE_EXTRA_CA_CERTS, repeated in `ca` or not", async () => {
    // The store starts loading on a thread of its own at require(); these transports are
    // made in the same tick, so they wait for that load (or share the verifier it built).
    const script = loadTimeTransportsScript(fileURLToPath(new URL("../index.js", import.meta.url)), server.url, ca.caPath);
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ["-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caPath } });
    const { names, error } = JSON.parse(stdout);
    expect(error).toBeUndefined();
    expect(names).toHaveLength(3);
    const refused = await run(process.execPath, ["-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: "" } });
    expect(JSON.parse(refused.stdout).error).toMatch(/invalid peer certificate: UnknownIssuer/);
  });

  it("H10: NODE_TLS_REJECT_UNAUTHORIZED=0 turns checks off, with Node's warning once; never by default", async () => {
    const warnings: string[] = [];
    const listener = (warning: Error) => warnings.push(warning.message);
    process.on("warning", listener);
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
    try {
      await expect(echo({})).resolves.toBe("over TLS");
      await expect(echo({})).resolves.toBe("over TLS");
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    }
    await new Promise((resolve) => setImmediate(resolve));
    process.off("warning", listener);
    const ours = warnings.filter((w) => w.includes("NODE_TLS_REJECT_UNAUTHORIZED"));
    expect(ours).toEqual([
      "Setting the NODE_TLS_REJECT_UNAUTHORIZED environment variable to '0' makes TLS connections and HTTPS requests insecure by disabling certificate verification.",
    ]);
    await expect(echo({ timeout: 5000 })).rejects.toThrow(/invalid peer certificate/);
  });
});

describe("H10 trust and OAuth", () => {
  it("H10/O5: the OAuth discovery and token requests trust the server's `ca` as its transport does", async () => {
    const f = await startOAuthFixture({ tls: { key: ca.key, cert: ca.cert } });
    f.preRegister("machine", "machine-secret");
    const entries = new Map<string, unknown>();
    const store = {
      get: async (key: string) => entries.get(key) as any,
      set: async (key: string, value: unknown) => void entries.set(key, value),
      delete: async (key: string) => void entries.delete(key),
    };
    const oauth = { grantType: "client_credentials", clientId: "machine", clientSecret: "machine-secret", store };
    try {
      const refused: any = await native.MCPClient.connect("tls-oauth", { type: "http", url: f.url, timeout: 5000, oauth } as any).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Error);
      expect(refused.message).toMatch(/UnknownIssuer/);
      const client = await native.MCPClient.connect("tls-oauth", { type: "http", url: f.url, ca: ca.caPath, oauth } as any);
      try {
        expect((await client.callTool("whoami", {})).content[0]).toEqual({ type: "text", text: `machine via ${f.base}/as` });
      } finally {
        await client.close();
      }
    } finally {
      await f.close();
    }
  });
});

describe("H10 connections over TLS", () => {
  const calls = async (url: string) => {
    const t = await native.createHttpTransport({ type: "http", url, ca: ca.ca, timeout: 5000 });
    try {
      await t.request("initialize", init);
      const together = await Promise.all(Array.from({ length: 16 }, () => t.request("tools/list", {})));
      expect(together.every((answer: any) => Array.isArray(answer.tools))).toBe(true);
      for (let i = 0; i < 5; i++) await t.request("tools/list", {});
    } finally {
      await t.close();
    }
  };

  it("H10: a server offering HTTP/2 gets every call on one HTTP/2 connection, calls at once included", async () => {
    const h2 = await startHttps(ca, { http2: true });
    try {
      await calls(h2.url);
      expect(new Set(h2.versions())).toEqual(new Set(["2.0"]));
      expect(h2.connections()).toBe(1);
    } finally {
      await h2.close();
    }
  });

  it("H10: a call the HTTP/2 server refuses unprocessed (REFUSED_STREAM) goes again, at most twice, as reqwest retries it", async () => {
    const h2 = await startHttps(ca, { http2: true, refuse: 5 });
    const t = await native.createHttpTransport({ type: "http", url: h2.url, ca: ca.ca, timeout: 5000 });
    const echo = () => t.request("tools/call", { name: "echo", arguments: { text: "again" } });
    try {
      await t.request("initialize", init);
      // Refused three times: the third refusal is the call's error.
      const refused: any = await echo().catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Error);
      expect(refused.message).toMatch(/^fetch failed: https:\/\/127\.0\.0\.1:\d+\/mcp: stream error received: refused stream before processing/);
      expect(h2.calls()).toBe(3);
      // Refused twice more, then answered: one call, on the same connection.
      const answered: any = await echo();
      expect(answered.content[0].text).toBe("again");
      expect(h2.calls()).toBe(6);
      expect(h2.connections()).toBe(1);
    } finally {
      await t.close();
      await h2.close();
    }
  });

  it("H10: a server speaking HTTP/1.1 only gets a connection per call at once, and calls in turn reuse them", async () => {
    const h1 = await startHttps(ca);
    try {
      await calls(h1.url);
      expect(new Set(h1.versions())).toEqual(new Set(["1.1"]));
      expect(h1.connections()).toBeGreaterThan(1);
      expect(h1.connections()).toBeLessThanOrEqual(17);
      const before = h1.connections();
      const t = await native.createHttpTransport({ type: "http", url: h1.url, ca: ca.ca, timeout: 5000 });
      for (let i = 0; i < 5; i++) await t.request("tools/list", {});
      await t.close();
      expect(h1.connections()).toBe(before + 1);
    } finally {
      await h1.close();
    }
  });
});
