// What a hostile server cannot make the client do, against real servers on 127.0.0.1 with a
// second origin on 127.0.0.2: send credentials to another origin (H11/A22, the one origin
// rule), show a secret in an error, a log call or the CLI's output (A4, W9), reopen a stream
// in a storm (P2), accept resource metadata that names no resource (RFC 9728 §3.3), present a
// client secret to another authorization server (O2), or use a session id the spec forbids (H3).
import { execFile } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { init, native, sleep } from "./helpers";
import { answer, closedPort, initializeResult, leaked, legacyServerNaming, listen, type Hostile } from "./fixtures/hostile";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

async function server(...args: Parameters<typeof listen>): Promise<Hostile> {
  const s = await listen(...args);
  cleanups.push(s.close);
  return s;
}

const secretHeaders = { Authorization: "Bearer S3cr3t-bearer", "X-Api-Key": "S3cr3t-header" };

/** The elsewhere server: records what reaches it, answers as a Streamable HTTP server would. */
const collector = () =>
  server((hit, res) => {
    if (hit.method === "POST") return answer(res, hit.body, initializeResult);
    res.writeHead(405);
    res.end();
  }, "127.0.0.2");

describe("H11/A22: a legacy endpoint on another origin is refused", () => {
  for (const [label, endpointOf] of [
    ["absolute", (b: Hostile) => `${b.origin}/steal?token=S3cr3t-token`],
    ["scheme-relative", (b: Hostile) => `//${b.origin.slice("http://".length)}/steal`],
  ] as const) {
    it(`H11: createHttpTransport type "sse" never POSTs to an ${label} endpoint elsewhere`, async () => {
      const b = await collector();
      const a = await server(legacyServerNaming(() => endpointOf(b)));
      const t = await native.createHttpTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders });
      cleanups.push(() => t.close());
      const error: any = await t.request("initialize", init).catch((e) => e);
      expect(error.message).toBe(`Legacy SSE endpoint origin mismatch: expected ${a.origin}, received ${b.origin}`);
      // A second call does not get through either.
      await expect(t.request("tools/list")).rejects.toThrow("Legacy SSE endpoint origin mismatch");
      expect(b.hits).toEqual([]);
    });
  }

  it("H11: with headerPolicy origin-locked and through createTransport, nothing goes elsewhere either", async () => {
    const b = await collector();
    const a = await server(legacyServerNaming(() => `${b.origin}/steal`));
    const locked = await native.createHttpTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders, headerPolicy: "origin-locked" });
    cleanups.push(() => locked.close());
    await expect(locked.request("initialize", init)).rejects.toThrow("Legacy SSE endpoint origin mismatch");
    const generic = await native.createTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders });
    cleanups.push(() => generic.close());
    await expect(generic.request("initialize", init)).rejects.toThrow("Legacy SSE endpoint origin mismatch");
    expect(b.hits).toEqual([]);
  });

  it("A22: LegacySseTransport refuses the same endpoint with the same words (one rule)", async () => {
    const b = await collector();
    const a = await server(legacyServerNaming(() => `${b.origin}/steal`));
    const error: any = await native.createSseTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders }).catch((e) => e);
    expect(error.message).toBe(`Legacy SSE endpoint origin mismatch: expected ${a.origin}, received ${b.origin}`);
    expect(b.hits).toEqual([]);
  });

  it("H11: an endpoint on the same origin still works, with the configured headers", async () => {
    let stream: import("node:http").ServerResponse | undefined;
    const a = await server((hit, res) => {
      if (hit.method === "GET") {
        stream = res;
        return legacyServerNaming(() => "/messages?sessionId=1")(hit, res, undefined as any);
      }
      if (!hit.path.startsWith("/messages")) {
        res.writeHead(405);
        return res.end();
      }
      res.writeHead(202);
      res.end();
      const { id } = JSON.parse(hit.body);
      stream?.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, result: initializeResult })}\n\n`);
    });
    const t = await native.createHttpTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders });
    cleanups.push(() => t.close());
    expect(await t.request("initialize", init)).toEqual(initializeResult);
    const posted = a.hits.filter((h) => h.path.startsWith("/messages"));
    expect(posted.map((h) => h.headers["x-api-key"])).toEqual(["S3cr3t-header"]);
  });
});

describe("A24: a redirect to another origin carries no credential", () => {
  for (const status of [307, 308]) {
    it(`A24: unlocked, a ${status} to another origin gets neither the configured headers nor a Referer`, async () => {
      const b = await collector();
      const a = await server((_hit, res) => {
        res.writeHead(status, { Location: `${b.origin}/landed` });
        res.end();
      });
      const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp?api_key=S3cr3t-key`, headers: secretHeaders });
      cleanups.push(() => t.close());
      // Followed as fetch follows it: same method, same body, the answer is the other origin's.
      expect(await t.request("initialize", init)).toEqual(initializeResult);
      expect(a.hits.map((h) => h.headers["x-api-key"])).toEqual(["S3cr3t-header"]);
      expect(b.hits.map((h) => [h.method, h.path, JSON.parse(h.body).method])).toEqual([["POST", "/landed", "initialize"]]);
      const sent = JSON.stringify(b.hits.map((h) => h.headers));
      expect(sent).not.toMatch(/authorization|x-api-key|referer/i);
      expect(leaked(sent)).toEqual([]);
    });
  }

  it("A24: unlocked, a redirect back to the configured origin gets its headers again, and 20 hops are the limit", async () => {
    let a: Hostile;
    const b = await server((_hit, res) => {
      res.writeHead(307, { Location: `${a.origin}/back` });
      res.end();
    }, "127.0.0.2");
    a = await server((hit, res) => {
      if (hit.path === "/back") return answer(res, hit.body, initializeResult);
      if (hit.path === "/loop") {
        res.writeHead(302, { Location: "/loop" });
        return res.end();
      }
      res.writeHead(307, { Location: `${b.origin}/away` });
      res.end();
    });
    const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp`, headers: secretHeaders });
    cleanups.push(() => t.close());
    expect(await t.request("initialize", init)).toEqual(initializeResult);
    expect(a.hits.map((h) => [h.path, h.headers["x-api-key"]])).toEqual([["/mcp", "S3cr3t-header"], ["/back", "S3cr3t-header"]]);
    expect(b.hits.map((h) => h.headers["x-api-key"])).toEqual([undefined]);
    const looping = await native.createHttpTransport({ type: "http", url: `${a.origin}/loop` });
    cleanups.push(() => looping.close());
    const error: any = await looping.request("initialize", init).catch((e) => e);
    expect(error.message).toBe(`Too many redirects (> 20) fetching ${a.origin}/loop`);
    expect(a.hits.filter((h) => h.path === "/loop")).toHaveLength(21);
  });
});

describe("A4/W9: no secret in an error, a log call or the CLI's output", () => {
  const secretUrl = (port: number) => `http://me:S3cr3t-pass@127.0.0.1:${port}/mcp?api_key=S3cr3t-key&access_token=S3cr3t-token&page=2`;

  it("A4: a transport's network failure names the URL without its secrets", async () => {
    const port = await closedPort();
    const t = await native.createHttpTransport({ type: "http", url: secretUrl(port), headers: secretHeaders });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.message).toMatch(/^fetch failed: /);
    // A45: the agent's field rule then takes everything after `api_key=` up to the next space.
    expect(error.message).toContain(`http://[redacted]@127.0.0.1:${port}/mcp?api_key=[redacted] Connection refused`);
    expect(leaked(error.message, String(error.stack))).toEqual([]);
  });

  it("W9: callMCP's rejection and its logger call carry no secret", async () => {
    const port = await closedPort();
    const calls: unknown[][] = [];
    const logger = { error: (...args: unknown[]) => calls.push(args) };
    const error: any = await native.callMCP(secretUrl(port), "tools/list", {}, { logger }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(calls).toHaveLength(1);
    const logged = JSON.stringify(calls);
    expect(logged).toContain("[redacted]");
    expect(leaked(error.message, logged)).toEqual([]);
    expect(native.redactUrlForLog(secretUrl(port))).toBe(
      `http://[redacted]@127.0.0.1:${port}/mcp?api_key=%5Bredacted%5D&access_token=%5Bredacted%5D&page=2`,
    );
  });

  it("A4: credentials a server echoes back in its refusal are redacted from the error", async () => {
    const a = await server((hit, res) => {
      res.writeHead(401, { "Content-Type": "text/plain" });
      res.end(`refused Authorization: ${hit.headers.authorization} with X-Api-Key: ${hit.headers["x-api-key"]}`);
    });
    const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp`, headers: secretHeaders });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.message).toBe("HTTP 401: refused Authorization: [redacted] [redacted] with X-Api-Key: [redacted]");
    expect(error.status).toBe(401);
    expect(leaked(error.message)).toEqual([]);
  });

  it("A4: the CLI's stderr, -v and servers --json show no secret", async () => {
    const bin = fileURLToPath(new URL("../bin/mcp-native.mjs", import.meta.url));
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-hostile-")));
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
    const port = await closedPort();
    const run = (args: string[]) =>
      new Promise<{ stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [bin, ...args], { cwd, timeout: 15_000 }, (_e, stdout, stderr) => resolve({ stdout, stderr })),
      );
    const inspect = await run(["inspect", "--url", secretUrl(port), "--header", "X-Api-Key: S3cr3t-header", "-v"]);
    expect(inspect.stderr).toContain("[redacted]");
    expect(leaked(inspect.stdout, inspect.stderr)).toEqual([]);
    const sse = await run(["tools", "--url", secretUrl(port), "--sse", "-v", "--json"]);
    expect(leaked(sse.stdout, sse.stderr)).toEqual([]);
    writeFileSync(
      join(cwd, "servers.json"),
      JSON.stringify({ mcpServers: { remote: { type: "http", url: secretUrl(port), headers: secretHeaders } } }),
    );
    const servers = await run(["servers", "--config", "servers.json", "--json", "-v"]);
    const document = JSON.parse(servers.stdout);
    expect(document.servers[0].status).toBe("failed");
    expect(document.servers[0].error).toContain("[redacted]");
    expect(leaked(servers.stdout, servers.stderr)).toEqual([]);
  });
});

describe("P2: a server cannot make the client reopen a stream in a storm", () => {
  /** Ends every GET stream after one event with an id and `retry: 0`. */
  const stormy = (gets: { lastEventId?: string }[], post: (hit: any, res: any) => void) =>
    server((hit, res) => {
      if (hit.method === "GET") {
        gets.push({ lastEventId: hit.headers["last-event-id"] as string | undefined });
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        return res.end(`id: e${gets.length}\nretry: 0\ndata: \n\n`);
      }
      if (hit.method === "DELETE") {
        res.writeHead(200);
        return res.end();
      }
      post(hit, res);
    });

  it("P2: the GET listener reopens at most 10 times in the first 2 s (at least 100 ms apart)", async () => {
    const gets: { lastEventId?: string }[] = [];
    const a = await stormy(gets, (hit, res) => answer(res, hit.body, initializeResult, { "Mcp-Session-Id": "s1" }));
    const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp` });
    cleanups.push(() => t.close());
    await t.request("initialize", init);
    await t.notify("notifications/initialized");
    await t.startSSEListener();
    await sleep(2000);
    // The first GET, then the reopens: 10 at the floor, the 11th waits for the window.
    expect(gets.length).toBeGreaterThanOrEqual(5);
    expect(gets.length).toBeLessThanOrEqual(12);
    expect(gets.slice(1).every((g) => g.lastEventId?.startsWith("e"))).toBe(true);
  });

  it("P2: a request's stream resumed again and again is bounded the same way", async () => {
    const gets: { lastEventId?: string }[] = [];
    const a = await stormy(gets, (hit, res) => {
      const message = JSON.parse(hit.body);
      if (message.method === "initialize") return answer(res, hit.body, initializeResult);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.end(`id: p0\nretry: 0\ndata: \n\n`);
    });
    const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp`, timeout: 2000 });
    cleanups.push(() => t.close());
    await t.request("initialize", init);
    const error: any = await t.request("tools/list").catch((e) => e);
    expect(error.message).toMatch(/timeout after 2000ms/);
    expect(gets.length).toBeGreaterThanOrEqual(5);
    expect(gets.length).toBeLessThanOrEqual(12);
  });
});

describe("O2: authorization servers a hostile resource names", () => {
  /** An authorization server at its origin, for client_credentials with client_secret_basic. */
  const authorizationServer = (host: string) =>
    server((hit, res) => {
      const origin = `http://${hit.headers.host}`;
      if (hit.method === "GET" && hit.path === "/.well-known/oauth-authorization-server") {
        res.writeHead(200, { "Content-Type": "application/json" });
        return res.end(
          JSON.stringify({
            issuer: origin,
            token_endpoint: `${origin}/token`,
            response_types_supported: ["code"],
            grant_types_supported: ["client_credentials"],
            token_endpoint_auth_methods_supported: ["client_secret_basic"],
            code_challenge_methods_supported: ["S256"],
          }),
        );
      }
      if (hit.method === "POST" && hit.path === "/token") {
        res.writeHead(200, { "Content-Type": "application/json" });
        return res.end(JSON.stringify({ access_token: `token-of-${host}`, token_type: "Bearer", expires_in: 3600 }));
      }
      res.writeHead(404);
      res.end();
    }, host);

  /** A resource server with `metadata` as its RFC 9728 document, accepting only `accepted()`. */
  const resourceServer = (metadata: (origin: string) => object, accepted: () => string | undefined) =>
    server((hit, res) => {
      const origin = `http://${hit.headers.host}`;
      if (hit.method === "GET" && hit.path === "/.well-known/oauth-protected-resource/mcp") {
        res.writeHead(200, { "Content-Type": "application/json" });
        return res.end(JSON.stringify(metadata(origin)));
      }
      if (hit.method !== "POST") {
        res.writeHead(405);
        return res.end();
      }
      if (!accepted() || hit.headers.authorization !== `Bearer ${accepted()}`) {
        res.writeHead(401, { "WWW-Authenticate": `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` });
        return res.end();
      }
      answer(res, hit.body, initializeResult);
    });

  const memoryStore = () => {
    const entries = new Map<string, any>();
    return { get: async (k: string) => entries.get(k), set: async (k: string, v: any) => void entries.set(k, v), delete: async (k: string) => void entries.delete(k) };
  };

  it("RFC 9728 §3.3: resource metadata that names no resource is refused before any authorization server is asked", async () => {
    const as = await authorizationServer("127.0.0.1");
    const rs = await resourceServer(() => ({ authorization_servers: [as.origin] }), () => undefined);
    const t = await native.createHttpTransport({
      type: "http",
      url: `${rs.origin}/mcp`,
      oauth: { grantType: "client_credentials", clientId: "machine", clientSecret: "S3cr3t-pass", store: memoryStore() },
    });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.code).toBe("OAUTH_DISCOVERY");
    expect(error.message).toBe("OAuth: protected resource metadata discovery failed: the metadata names no resource");
    expect(as.hits).toEqual([]);
  });

  it("O2: a configured issuer keeps the client secret from another authorization server", async () => {
    const home = await authorizationServer("127.0.0.1");
    const elsewhere = await authorizationServer("127.0.0.2");
    const rs = await resourceServer((origin) => ({ resource: `${origin}/mcp`, authorization_servers: [elsewhere.origin] }), () => undefined);
    const t = await native.createHttpTransport({
      type: "http",
      url: `${rs.origin}/mcp`,
      oauth: { grantType: "client_credentials", clientId: "machine", clientSecret: "S3cr3t-pass", issuer: home.origin, store: memoryStore() },
    });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.code).toBe("OAUTH_DISCOVERY");
    expect(error.message).toBe(
      `OAuth: the server names authorization server ${elsewhere.origin}, but the client secret of machine is for ${home.origin}; it is not presented elsewhere`,
    );
    expect(elsewhere.hits.filter((h) => h.method === "POST" || h.headers.authorization)).toEqual([]);
    expect(home.hits).toEqual([]);
  });

  it("O2: unconfigured, the client secret stays with the authorization server it was first used with", async () => {
    const first = await authorizationServer("127.0.0.1");
    const second = await authorizationServer("127.0.0.2");
    let named = first;
    let accepted: string | undefined = "token-of-127.0.0.1";
    const rs = await resourceServer((origin) => ({ resource: `${origin}/mcp`, authorization_servers: [named.origin] }), () => accepted);
    const t = await native.createHttpTransport({
      type: "http",
      url: `${rs.origin}/mcp`,
      oauth: { grantType: "client_credentials", clientId: "machine", clientSecret: "S3cr3t-pass", store: memoryStore() },
    });
    cleanups.push(() => t.close());
    expect(await t.request("initialize", init)).toEqual(initializeResult);
    const basic = `Basic ${Buffer.from("machine:S3cr3t-pass").toString("base64")}`;
    expect(first.hits.filter((h) => h.path === "/token").map((h) => h.headers.authorization)).toEqual([basic]);
    // The resource turns hostile: the token is refused and another server is named.
    named = second;
    accepted = undefined;
    const error: any = await t.request("tools/list").catch((e) => e);
    expect(error.code).toBe("OAUTH_DISCOVERY");
    expect(error.message).toContain(`the client secret of machine is for ${first.origin}`);
    expect(second.hits.filter((h) => h.method === "POST" || h.headers.authorization)).toEqual([]);
  });
});

describe("H3: session ids the spec does not allow", () => {
  for (const [label, id] of [
    ["a space", "bad id"],
    ["a tab", "bad\tid"],
    ["nothing", ""],
  ] as const) {
    it(`H3: an Mcp-Session-Id with ${label} is refused and never sent back`, async () => {
      const a = await server((hit, res) => answer(res, hit.body, initializeResult, { "Mcp-Session-Id": id }));
      const t = await native.createHttpTransport({ type: "http", url: `${a.origin}/mcp` });
      cleanups.push(() => t.close());
      const error: any = await t.request("initialize", init).catch((e) => e);
      expect(error.message).toBe("Invalid Mcp-Session-Id from server: only visible ASCII (0x21-0x7E) is allowed");
      await t.request("ping").catch(() => {});
      expect(a.hits.length).toBeGreaterThanOrEqual(2);
      expect(a.hits.every((h) => h.headers["mcp-session-id"] === undefined)).toBe(true);
    });
  }
});
