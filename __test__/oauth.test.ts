// SPEC-PROTOCOL O1–O4: our OAuth flow against the fixture authorization server on 127.0.0.1,
// for what the conformance suite (`npm run conformance`) does not cover.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { memoryStore, native, oauthTestScope } from "./helpers";

const { fixture, connect, cleanups } = oauthTestScope();

const whoami = async (client: any) => (await client.callTool("whoami", {})).content[0].text;

describe("O1/O2 the authorization-code flow", () => {
  it("O2: discovers, registers (SEP-837), sends PKCE S256, state and resource, then retries with the token", async () => {
    const f = await fixture({ scope: "mcp:tools" });
    const opened: string[] = [];
    const client = await connect({
      url: f.url,
      oauth: {
        redirect: async (url: string) => (opened.push(url), f.redirect(url)),
        redirectUri: "http://127.0.0.1:8123/callback",
        clientName: "oauth test",
        store: memoryStore(),
      },
    });
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
    expect(opened).toHaveLength(1);
    expect(f.registrations).toEqual([
      expect.objectContaining({
        client_name: "oauth test",
        redirect_uris: ["http://127.0.0.1:8123/callback"],
        application_type: "native",
        token_endpoint_auth_method: "none",
      }),
    ]);
    const [authorization] = f.authorizations;
    expect(authorization).toMatchObject({
      response_type: "code",
      client_id: "client-1",
      code_challenge_method: "S256",
      resource: f.url,
      scope: "mcp:tools",
    });
    expect(authorization.state).toMatch(/^[\w-]{43}$/);
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code"]);
    // The first POST (MCPClient's era probe, N2) went without a token, every one after the
    // flow with it.
    expect(f.mcpRequests[0]).toEqual({ method: "server/discover", authorization: undefined });
    expect(f.mcpRequests.slice(1).every((r) => r.authorization?.startsWith("Bearer at-"))).toBe(true);
  });

  it("O2: an authorization server that does not advertise PKCE S256 is refused before the user agent opens", async () => {
    const f = await fixture({ pkce: false });
    let opened = 0;
    const t = await native.createHttpTransport({
      type: "http",
      url: f.url,
      oauth: { redirect: async (url: string) => (opened++, f.redirect(url)), store: memoryStore() },
    } as any);
    cleanups.push(() => t.close());
    await expect(t.request("tools/list", {}).catch((e: any) => ({ message: e.message, code: e.code }))).resolves.toEqual({
      message: `OAuth: authorization server metadata discovery failed: ${f.base}/as does not offer PKCE with S256`,
      code: "OAUTH_METADATA",
    });
    expect(opened).toBe(0);
    expect(f.registrations).toEqual([]);
  });

  it("O1: config.oauth is checked: redirect is required, store needs its methods", async () => {
    const f = await fixture();
    await expect(native.createHttpTransport({ type: "http", url: f.url, oauth: { scope: "a", store: memoryStore() } } as any)).rejects.toThrow(
      new TypeError('The "oauth.redirect" field must be a function'),
    );
    await expect(
      native.createHttpTransport({ type: "http", url: f.url, oauth: { redirect: f.redirect, store: {} } } as any),
    ).rejects.toThrow(new TypeError('The "oauth.store" field must have get, set and delete methods'));
  });

  it("O1: the time spent in the user agent does not count against the request timeout", async () => {
    const f = await fixture();
    const client = await connect({
      url: f.url,
      timeout: 300,
      oauth: {
        redirect: async (url: string) => (await new Promise((r) => setTimeout(r, 600)), f.redirect(url)),
        store: memoryStore(),
      },
    });
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
  });

  it("O5: client_credentials with a pre-registered client (client_secret_basic)", async () => {
    const f = await fixture();
    f.preRegister("machine", "machine-secret");
    const client = await connect({
      url: f.url,
      oauth: { grantType: "client_credentials", clientId: "machine", clientSecret: "machine-secret", store: memoryStore() },
    });
    expect(await whoami(client)).toBe(`machine via ${f.base}/as`);
    expect(f.authorizations).toEqual([]);
    const [request] = f.tokenRequests;
    expect(request.grant).toBe("client_credentials");
    expect(request.authorization).toBe(`Basic ${Buffer.from("machine:machine-secret").toString("base64")}`);
    expect(request.form.resource).toBe(f.url);
  });
});

describe("O5 private_key_jwt", () => {
  it("O5: client_credentials authenticated by an ES256 client assertion (RFC 7523), no secret sent", async () => {
    const { generateKeyPairSync } = await import("node:crypto");
    const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const f = await fixture();
    f.preRegisterKey("signed", publicKey.export({ type: "spki", format: "pem" }) as string);
    const client = await connect({
      url: f.url,
      oauth: {
        grantType: "client_credentials",
        clientId: "signed",
        privateKey: privateKey.export({ type: "pkcs8", format: "pem" }),
        store: memoryStore(),
      },
    });
    expect(await whoami(client)).toBe(`signed via ${f.base}/as`);
    const [request] = f.tokenRequests;
    expect(request.authorization).toBeUndefined();
    expect(request.form.client_secret).toBeUndefined();
    expect(request.form.client_assertion.split(".")).toHaveLength(3);
    // A key that is not PKCS#8 PEM is a clear OAUTH_TOKEN error.
    const t = await native.createHttpTransport({
      type: "http",
      url: f.url,
      oauth: { grantType: "client_credentials", clientId: "signed", privateKey: "not a key", store: memoryStore() },
    } as any);
    cleanups.push(() => t.close());
    await expect(t.request("tools/list", {}).catch((e: any) => ({ message: e.message, code: e.code }))).resolves.toEqual({
      message: "OAuth: token request failed: the private key is not a PKCS#8 PEM",
      code: "OAUTH_TOKEN",
    });
  });
});

describe("O5 DPoP", () => {
  it("O5: dpop binds the token to our key: DPoP scheme, a fresh proof per request, the server's nonce honoured", async () => {
    const f = await fixture({ dpopNonce: "n-1" });
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, dpop: true, store: memoryStore() } });
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
    const presented = f.mcpRequests.filter((r) => r.authorization);
    expect(presented.length).toBeGreaterThan(2);
    expect(presented.every((r) => r.authorization!.startsWith("DPoP at-"))).toBe(true);
    // One flow; the nonce challenge was answered by a retry, not by another authorization.
    expect(f.authorizations).toHaveLength(1);
  });
});

describe("O3 tokens", () => {
  it("O3: a token about to expire is refreshed before it is sent", async () => {
    const f = await fixture({ lifetime: 2 });
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, store: memoryStore() } });
    await whoami(client);
    // 2 s lifetime: refreshed once a tenth of it (0.2 s) is left.
    await new Promise((r) => setTimeout(r, 1900));
    await whoami(client);
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code", "refresh_token"]);
    expect(f.authorizations).toHaveLength(1);
    expect(f.mcpRequests.filter((r) => r.authorization === undefined)).toHaveLength(1);
  });

  it("O3: a 401 is answered with one refresh, shared by concurrent requests", async () => {
    const f = await fixture();
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, store: memoryStore() } });
    await whoami(client);
    f.revoke();
    const answers = await Promise.all(Array.from({ length: 8 }, () => whoami(client)));
    expect(new Set(answers)).toEqual(new Set([`client-1 via ${f.base}/as`]));
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code", "refresh_token"]);
    expect(f.authorizations).toHaveLength(1);
  });

  it("O3: a refused refresh clears the tokens and runs the whole flow again", async () => {
    const f = await fixture();
    const store = memoryStore();
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, store } });
    await whoami(client);
    f.revoke(true);
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code", "refresh_token", "authorization_code"]);
    // The registration is kept: one client, two authorizations.
    expect(f.registrations).toHaveLength(1);
    expect(f.authorizations).toHaveLength(2);
  });

  it("O3: a refresh that fails for a passing reason fails the request, and says so", async () => {
    const f = await fixture({ refreshFailure: "server_error" });
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, store: memoryStore() } });
    await whoami(client);
    f.revoke();
    const error: any = await client.callTool("whoami", {}).catch((e: unknown) => e);
    expect(error.message).toBe("OAuth: token refresh failed: temporarily_unavailable");
    expect(error.code).toBe("OAUTH_REFRESH");
  });

  it("O3: a new authorization server means a new registration; nothing of the old one is reused", async () => {
    const f = await fixture();
    const store = memoryStore();
    const client = await connect({ url: f.url, oauth: { redirect: f.redirect, store } });
    expect(await whoami(client)).toBe(`client-1 via ${f.base}/as`);
    f.moveIssuer("/as2");
    expect(await whoami(client)).toBe(`client-2 via ${f.base}/as2`);
    expect(f.registrations).toHaveLength(2);
    expect(f.authorizations.map((a) => a.client_id)).toEqual(["client-1", "client-2"]);
    expect([...store.entries.values()]).toEqual([expect.objectContaining({ issuer: `${f.base}/as2`, resource: f.url })]);
  });

  it("O3: FileTokenStore keeps the credential across processes, in a file only its owner can read", async () => {
    const f = await fixture();
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-tokens-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "tokens.json");
    const script = `
      const { MCPClient, FileTokenStore } = require(${JSON.stringify(join(__dirname, "..", "index.js"))});
      let opened = 0;
      const redirect = async (url) => {
        opened++;
        const r = await fetch(url, { redirect: "manual" });
        return new URL(r.headers.get("location"), url).toString();
      };
      (async () => {
        const client = await MCPClient.connect("oauth", { type: "http", url: process.argv[1], oauth: { redirect, store: new FileTokenStore(process.argv[2]) } });
        const result = await client.callTool("whoami", {});
        await client.close();
        console.log(JSON.stringify({ opened, text: result.content[0].text }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    // Asynchronously: the fixture server runs in this process.
    const run = async () => {
      const child = await promisify(execFile)(process.execPath, ["-e", script, f.url, path], { timeout: 20_000 });
      expect(child.stderr).toBe("");
      return JSON.parse(child.stdout);
    };
    expect(await run()).toEqual({ opened: 1, text: `client-1 via ${f.base}/as` });
    expect(await run()).toEqual({ opened: 0, text: `client-1 via ${f.base}/as` });
    expect(f.registrations).toHaveLength(1);
    if (process.platform !== "win32") expect(statSync(path).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(path, "utf8"));
    expect(Object.keys(saved.entries)).toEqual([f.url]);
    const store = new native.FileTokenStore(path);
    await expect(store.get(f.url)).resolves.toMatchObject({ issuer: `${f.base}/as`, client: { clientId: "client-1" } });
    await store.delete(f.url);
    await expect(store.get(f.url)).resolves.toBeUndefined();
  });
});

describe("O4 errors", () => {
  it("O4: a failing token endpoint rejects the request with OAUTH_TOKEN and the server's words, no secret", async () => {
    const f = await fixture({ codeFailure: "server_error" });
    f.preRegister("known", "s3cret-value");
    const errors: Error[] = [];
    const transport = await native.createHttpTransport({
      type: "http",
      url: f.url,
      oauth: { redirect: f.redirect, clientId: "known", clientSecret: "s3cret-value", store: memoryStore() },
    } as any);
    cleanups.push(() => transport.close());
    transport.onError = (e) => errors.push(e);
    const error: any = await transport.request("tools/list", {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("OAuth: token request failed: server_error: token endpoint is down");
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(JSON.stringify({ m: error.message, s: error.stack, errors: errors.map(String) })).not.toContain("s3cret");
  });

  it("O4: requests that waited for a flow that failed share its error: the user agent opens once", async () => {
    const f = await fixture();
    let opened = 0;
    const t = await native.createHttpTransport({
      type: "http",
      url: f.url,
      oauth: { redirect: async () => (opened++, Promise.reject(new Error("denied"))), store: memoryStore() },
    } as any);
    cleanups.push(() => t.close());
    const errors = await Promise.all(Array.from({ length: 5 }, () => t.request("tools/list", {}).catch((e: any) => e.message)));
    expect(new Set(errors)).toEqual(new Set(["OAuth: authorization failed: redirect() failed: denied"]));
    expect(opened).toBe(1);
    // A later request is a new attempt.
    await t.request("tools/list", {}).catch(() => {});
    expect(opened).toBe(2);
  });

  it("O4/N2: a failed sign-in ends MCPClient.connect's era probe: no handshake, no second user agent", async () => {
    const f = await fixture();
    let opened = 0;
    const redirect = async () => (opened++, Promise.reject(new Error("denied")));
    const error: any = await native.MCPClient.connect("oauth", { type: "http", url: f.url, oauth: { redirect, store: memoryStore() } } as any).catch((e) => e);
    expect(error.code).toBe("OAUTH_AUTHORIZATION");
    expect(error.message).toBe("OAuth: authorization failed: redirect() failed: denied");
    expect(opened).toBe(1);
    expect(f.mcpRequests.map((r) => r.method)).not.toContain("initialize");
  });

  it("O4: a slow token endpoint counts against the request timeout", async () => {
    const f = await fixture({ tokenDelay: 800 });
    const transport = await native.createHttpTransport({
      type: "http",
      url: f.url,
      timeout: 300,
      oauth: { redirect: f.redirect, store: memoryStore() },
    } as any);
    cleanups.push(() => transport.close());
    await expect(transport.request("tools/list", {})).rejects.toThrow("Request timeout after 300ms");
  });

  it("O4: a callback with another state, a failing redirect, and no way to register", async () => {
    const f = await fixture();
    const attempt = async (oauth: Record<string, unknown>) => {
      const t = await native.createHttpTransport({ type: "http", url: f.url, oauth: { store: memoryStore(), ...oauth } } as any);
      cleanups.push(() => t.close());
      return t.request("tools/list", {}).catch((e: any) => ({ message: e.message, code: e.code }));
    };
    const forged = async (url: string) => (await f.redirect(url)).replace(/state=[^&]+/, "state=forged");
    await expect(attempt({ redirect: forged })).resolves.toEqual({
      message: "OAuth: authorization failed: the callback's state does not match the request's",
      code: "OAUTH_AUTHORIZATION",
    });
    await expect(attempt({ redirect: async () => Promise.reject(new Error("the user closed the window")) })).resolves.toEqual({
      message: "OAuth: authorization failed: redirect() failed: the user closed the window",
      code: "OAUTH_AUTHORIZATION",
    });
    const closed = await fixture({ registration: false });
    const t = await native.createHttpTransport({ type: "http", url: closed.url, oauth: { redirect: closed.redirect, store: memoryStore() } } as any);
    cleanups.push(() => t.close());
    await expect(t.request("tools/list", {}).catch((e: any) => ({ message: e.message, code: e.code }))).resolves.toEqual({
      message: `OAuth: client registration failed: ${closed.base}/as offers no dynamic client registration; configure a clientId`,
      code: "OAUTH_REGISTRATION",
    });
  });
});

describe("O6 the agent's seam: onAuthError", () => {
  /** An MCP server that accepts one bearer token, which the test can change. */
  async function guarded() {
    const { createServer } = await import("node:http");
    const seen: (string | undefined)[] = [];
    const state = { accepted: "Bearer fresh" };
    const server = createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      seen.push(req.headers.authorization);
      if (req.headers.authorization !== state.accepted) {
        res.writeHead(401, { "Content-Type": "application/json", "WWW-Authenticate": 'Bearer error="invalid_token"' });
        return res.end('{"error":"invalid_token"}');
      }
      const message = JSON.parse(text);
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { tools: [] } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const url = `http://127.0.0.1:${(server.address() as any).port}/mcp`;
    return { url, seen, state };
  }

  it("O6/A10: the hook's headers replace config.headers, and that fetch is retried once", async () => {
    const g = await guarded();
    const transport = await native.createHttpTransport({ type: "http", url: g.url, headers: { Authorization: "Bearer stale" } });
    cleanups.push(() => transport.close());
    let asked = 0;
    transport.onAuthError = async () => (asked++, { Authorization: "Bearer fresh" });
    await expect(transport.request("tools/list", {})).resolves.toEqual({ tools: [] });
    await expect(transport.request("tools/list", {})).resolves.toEqual({ tools: [] });
    expect(asked).toBe(1);
    expect(g.seen).toEqual(["Bearer stale", "Bearer fresh", "Bearer fresh"]);
  });

  it("O6/A10: null gives up with the original error; headers that fail again are not retried twice", async () => {
    const g = await guarded();
    const transport = await native.createHttpTransport({ type: "http", url: g.url });
    cleanups.push(() => transport.close());
    transport.onAuthError = async () => null;
    await expect(transport.request("tools/list", {})).rejects.toMatchObject({
      message: expect.stringMatching(/^HTTP 401: \{"error":"invalid_token"\}/),
      status: 401,
    });
    let asked = 0;
    transport.onAuthError = async () => (asked++, { Authorization: "Bearer wrong" });
    await expect(transport.request("tools/list", {})).rejects.toMatchObject({ status: 401 });
    expect(asked).toBe(1);
    expect(g.seen).toEqual([undefined, undefined, "Bearer wrong"]);
  });

  it("O6: with config.oauth, our flow answers and onAuthError is not asked", async () => {
    const f = await fixture();
    const transport = await native.createHttpTransport({
      type: "http",
      url: f.url,
      oauth: { redirect: f.redirect, store: memoryStore() },
    } as any);
    cleanups.push(() => transport.close());
    let asked = 0;
    transport.onAuthError = async () => (asked++, null);
    await transport.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } });
    expect(asked).toBe(0);
    expect(f.tokenRequests).toHaveLength(1);
  });
});

describe("O1 where the options go", () => {
  it("O1: connectToServer and createHttpTransport take {oauth}; a config's own oauth wins", async () => {
    const f = await fixture();
    const store = memoryStore();
    const config = { type: "http" as const, url: f.url };
    const connection = await native.connectToServer("o1", config, { oauth: { redirect: f.redirect, store } } as any);
    cleanups.push(() => connection.transport.close());
    expect(connection.config).toMatchObject(config);
    expect((config as any).oauth).toBeUndefined();
    expect(f.authorizations).toHaveLength(1);
    // The same store: the credential is reused, no second authorization.
    const transport = await native.createHttpTransport(config, { oauth: { redirect: f.redirect, store } } as any);
    cleanups.push(() => transport.close());
    await transport.request("tools/list", {});
    expect(f.authorizations).toHaveLength(1);
    let ignored = 0;
    const own = await native.createHttpTransport(
      { ...config, oauth: { redirect: f.redirect, store } } as any,
      { oauth: { redirect: async () => (ignored++, ""), store: memoryStore() } } as any,
    );
    cleanups.push(() => own.close());
    await own.request("tools/list", {});
    expect(ignored).toBe(0);
  });

  it("O1: the manager's oauth(serverName, config) option, for HTTP servers only", async () => {
    const f = await fixture();
    const asked: string[] = [];
    const manager = new native.MCPManager(process.cwd(), null, {
      oauth: (serverName: string, config: any) => (asked.push(`${serverName} ${config.type}`), { redirect: f.redirect, store: memoryStore() }),
    } as any);
    cleanups.push(() => manager.disconnectAll());
    const result = await manager.connectServers({ remote: { type: "http", url: f.url } } as any, {});
    expect(result.errors.size).toBe(0);
    expect(result.connectedServers).toEqual(["remote"]);
    expect(asked).toEqual(["remote http"]);
    expect(f.registrations).toHaveLength(1);
  });
});

describe("O1 the TS SDK's OAuthClientProvider", () => {
  /** A provider as an SDK user writes one: everything in memory, the user agent recorded. */
  function sdkProvider(redirectUrl: string) {
    const saved: { tokens?: any; client?: any; verifier?: string; sent: URL[]; invalidated: string[] } = { sent: [], invalidated: [] };
    return {
      saved,
      get redirectUrl() {
        return redirectUrl;
      },
      get clientMetadata() {
        return { client_name: "sdk provider", redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
      },
      clientInformation: () => saved.client,
      saveClientInformation: (info: any) => void (saved.client = info),
      tokens: async () => saved.tokens,
      saveTokens: async (tokens: any) => void (saved.tokens = tokens),
      redirectToAuthorization: (url: URL) => void saved.sent.push(url),
      saveCodeVerifier: (verifier: string) => void (saved.verifier = verifier),
      codeVerifier: () => saved.verifier!,
      invalidateCredentials: (scope: string) => void saved.invalidated.push(scope),
    };
  }

  it("O1: two steps: UnauthorizedError with the user agent sent, then finishAuth(callbackUrl); the provider keeps the tokens", async () => {
    const f = await fixture();
    const provider = sdkProvider("http://localhost:7777/callback");
    const transport = await native.createHttpTransport({ type: "http", url: f.url, authProvider: provider } as any);
    cleanups.push(() => transport.close());
    const first: any = await transport.request("tools/list", {}).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(Error);
    expect(first).toMatchObject({ name: "UnauthorizedError", message: "Unauthorized", code: "OAUTH_UNAUTHORIZED" });
    expect(provider.saved.sent).toHaveLength(1);
    expect(provider.saved.sent[0]).toBeInstanceOf(URL);
    expect(f.registrations[0]).toMatchObject({ client_name: "sdk provider", redirect_uris: ["http://localhost:7777/callback"] });
    expect(provider.saved.client).toMatchObject({ client_id: "client-1" });
    // The user agent comes back; the app hands the callback URL over.
    const callback = await f.redirect(provider.saved.sent[0].toString());
    await transport.finishAuth(callback);
    expect(provider.saved.tokens).toMatchObject({ access_token: expect.stringMatching(/^at-/), token_type: "Bearer", refresh_token: expect.any(String) });
    await expect(transport.request("tools/list", {})).resolves.toEqual({ tools: [{ name: "whoami", inputSchema: { type: "object" } }] });
    // A new transport with the same provider: its tokens are used, no new authorization;
    // revoked, they are refreshed and saved back.
    const next = await native.createHttpTransport({ type: "http", url: f.url, authProvider: provider } as any);
    cleanups.push(() => next.close());
    f.revoke();
    const before = provider.saved.tokens.access_token;
    await expect(next.request("tools/list", {})).resolves.toMatchObject({ tools: [{ name: "whoami" }] });
    expect(provider.saved.tokens.access_token).not.toBe(before);
    expect(f.authorizations).toHaveLength(1);
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code", "refresh_token"]);
  });

  it("O1: finishAuth with a forged state, and the provider/oauth checks", async () => {
    const f = await fixture();
    const provider = sdkProvider("http://localhost:7777/callback");
    const transport = await native.createHttpTransport({ type: "http", url: f.url, authProvider: provider } as any);
    cleanups.push(() => transport.close());
    await transport.request("tools/list", {}).catch(() => {});
    const callback = (await f.redirect(provider.saved.sent[0].toString())).replace(/state=[^&]+/, "state=forged");
    await expect(transport.finishAuth(callback)).rejects.toMatchObject({
      message: "OAuth: authorization failed: the callback's state does not match the request's",
      code: "OAUTH_AUTHORIZATION",
    });
    await expect(
      native.createHttpTransport({ type: "http", url: f.url, authProvider: { tokens() {} } } as any),
    ).rejects.toThrow(new TypeError('The "authProvider" field must have a saveTokens method'));
    await expect(
      native.createHttpTransport({ type: "http", url: f.url, authProvider: provider, oauth: { redirect: f.redirect } } as any),
    ).rejects.toThrow(new TypeError('Give either the "oauth" or the "authProvider" field, not both'));
  });
});
