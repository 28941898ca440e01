// SEP-1933 (workload identity federation) and SEP-990 (enterprise-managed authorization)
// against the fixture authorization server, its enterprise IdP and a platform's workload
// keys on 127.0.0.1: the failure paths the conformance suite's two scenarios do not cover.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { memoryStore, native, oauthTestScope } from "./helpers";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const { fixture, connect, cleanups } = oauthTestScope();

function tokenFile(text: string) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-wif-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "token");
  writeFileSync(path, `${text}\n`);
  return path;
}

const whoami = async (client: any) => (await client.callTool("whoami", {})).content[0].text;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: any) => e);

describe("SEP-1933 workload identity federation (jwt_bearer)", () => {
  it("SEP-1933: the workload's JWT from a file, re-read for every token request as it rotates", async () => {
    const f = await fixture({ lifetime: 1, refreshTokens: false });
    const path = tokenFile(f.workloadToken("workload-a"));
    const client = await connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { file: path }, store: memoryStore() } });
    expect(await whoami(client)).toBe(`workload-a via ${f.base}/as`);
    // The platform rotates the projected token; the access token expires.
    writeFileSync(path, f.workloadToken("workload-b"));
    await sleep(1100);
    expect(await whoami(client)).toBe(`workload-b via ${f.base}/as`);
    expect(f.registrations).toEqual([]);
    expect(f.authorizations).toEqual([]);
    expect(f.tokenRequests.map((r) => r.grant)).toEqual([JWT_BEARER, JWT_BEARER]);
    const [first] = f.tokenRequests;
    // No client id, no client authentication: the JWT is the workload's identity.
    expect(Object.keys(first.form).sort()).toEqual(["assertion", "grant_type", "resource"]);
    expect(first.form.resource).toBe(f.url);
    expect(first.authorization).toBeUndefined();
  });

  it("SEP-1933: the token from process.env, read when it is needed, or from a function", async () => {
    const f = await fixture();
    process.env.MCP_TEST_WORKLOAD_TOKEN = f.workloadToken("from-env");
    cleanups.push(() => delete process.env.MCP_TEST_WORKLOAD_TOKEN);
    const fromEnv = await connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { env: "MCP_TEST_WORKLOAD_TOKEN" }, store: memoryStore() } });
    expect(await whoami(fromEnv)).toBe(`from-env via ${f.base}/as`);
    let calls = 0;
    const workloadToken = async () => (calls++, f.workloadToken("from-function"));
    const fromFunction = await connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken, clientId: "ci-runner", store: memoryStore() } });
    expect(await whoami(fromFunction)).toBe(`from-function via ${f.base}/as`);
    expect(calls).toBe(1);
    // A client id, when given, is sent (a public client: no secret).
    expect(f.tokenRequests[1].form.client_id).toBe("ci-runner");
  });

  it("SEP-1933: an expired workload token is refused before it is sent; the token never appears", async () => {
    const f = await fixture();
    const expired = f.workloadToken("stale", -60);
    const path = tokenFile(expired);
    const error = await failure(connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { file: path }, store: memoryStore() } }));
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(error.message).toMatch(new RegExp(`^OAuth: the workload token from the file ${path.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")} has expired \\(6\\d s ago\\); it was not sent$`));
    expect(f.tokenRequests).toEqual([]);
    expect(JSON.stringify({ m: error.message, s: error.stack })).not.toContain(expired.split(".")[1]);
  });

  it("SEP-1933: a refused JWT fails with the server's words, once: no retry, no other grant", async () => {
    const f = await fixture();
    const wrongAudience = f.workloadToken("elsewhere", 3600, "https://wrong.example");
    const error = await failure(connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: wrongAudience, store: memoryStore() } }));
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(error.message).toBe("OAuth: token request failed: invalid_grant: JWT assertion verification failed");
    expect(f.tokenRequests.map((r) => r.grant)).toEqual([JWT_BEARER]);
    expect(error.message + error.stack).not.toContain(wrongAudience.split(".")[1]);
  });

  it("SEP-1933: a token file that disappears fails the next token request and names the file", async () => {
    const f = await fixture({ lifetime: 1, refreshTokens: false });
    const path = tokenFile(f.workloadToken("short-lived"));
    const client = await connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { file: path }, store: memoryStore() } });
    expect(await whoami(client)).toBe(`short-lived via ${f.base}/as`);
    rmSync(path);
    await sleep(1100);
    const error = await failure(client.callTool("whoami", {}));
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(error.message).toMatch(/^OAuth: the workload token cannot be read from the file .+token: /);
    expect(f.tokenRequests).toHaveLength(1);
  });

  it("SEP-1933: an unset variable is a precise error", async () => {
    const f = await fixture();
    const unset = await failure(connect({ url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { env: "MCP_TEST_UNSET_TOKEN" }, store: memoryStore() } }));
    expect(unset.message).toBe("OAuth: the workload token is not set: the environment variable MCP_TEST_UNSET_TOKEN is not set");
    expect(unset.code).toBe("OAUTH_TOKEN");
  });
});

describe("SEP-990 enterprise-managed authorization", () => {
  const enterprise = (f: Awaited<ReturnType<typeof fixture>>, idp: Record<string, unknown> = {}) => ({
    grantType: "enterprise_managed",
    clientId: "agent",
    clientSecret: "agent-secret",
    idp: { issuer: f.idpIssuer(), clientId: "agent-at-idp", clientSecret: "idp-secret", assertion: f.idToken("alice"), ...idp },
    store: memoryStore(),
  });

  it("SEP-990: the ID token is exchanged at the IdP for an ID-JAG, presented with the JWT-bearer grant", async () => {
    const f = await fixture();
    f.preRegister("agent", "agent-secret");
    const client = await connect({ url: f.url, oauth: enterprise(f) });
    expect(await whoami(client)).toBe(`alice (agent) via ${f.base}/as`);
    const [exchange] = f.exchanges;
    expect(exchange.form).toMatchObject({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      requested_token_type: "urn:ietf:params:oauth:token-type:id-jag",
      subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
      audience: `${f.base}/as`,
      resource: f.url,
      client_id: "agent-at-idp",
    });
    // The IdP's secret goes to the IdP (its metadata asks for client_secret_post), the
    // authorization server's to the authorization server.
    const [grant] = f.tokenRequests;
    expect(grant.grant).toBe(JWT_BEARER);
    expect(grant.authorization).toBe(`Basic ${Buffer.from("agent:agent-secret").toString("base64")}`);
    expect(JSON.stringify(grant)).not.toContain("idp-secret");
    expect(JSON.stringify(exchange)).not.toContain("agent-secret");
    expect(f.authorizations).toEqual([]);
  });

  it("SEP-990: an IdP that refuses the exchange fails with OAUTH_TOKEN and its words, no token or secret", async () => {
    const f = await fixture({ idpRefusal: { status: 400, error: "access_denied", error_description: "policy does not allow this client for alice" } });
    f.preRegister("agent", "agent-secret");
    const options = enterprise(f, { tokenEndpoint: `${f.idpIssuer()}/token` });
    const error = await failure(connect({ url: f.url, oauth: options }));
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(error.message).toBe("OAuth: token exchange at the identity provider failed: access_denied: policy does not allow this client for alice");
    expect(f.tokenRequests).toEqual([]);
    // A configured token endpoint has no metadata to say otherwise: client_secret_basic.
    expect(f.exchanges[0].authorization).toBe(`Basic ${Buffer.from("agent-at-idp:idp-secret").toString("base64")}`);
    const shown = JSON.stringify({ m: error.message, s: error.stack });
    for (const secret of ["idp-secret", "agent-secret", (options.idp.assertion as string).split(".")[1]]) expect(shown).not.toContain(secret);
  });

  it("SEP-990: a function hands out the current ID token; an expired one is not sent", async () => {
    const f = await fixture();
    f.preRegister("agent", "agent-secret");
    const fresh = await connect({ url: f.url, oauth: enterprise(f, { assertion: async () => f.idToken("bob") }) });
    expect(await whoami(fresh)).toBe(`bob (agent) via ${f.base}/as`);
    const error = await failure(connect({ url: f.url, oauth: enterprise(f, { assertion: () => f.idToken("carol", -5) }) }));
    expect(error.code).toBe("OAUTH_TOKEN");
    expect(error.message).toMatch(/^OAuth: the identity assertion from oauth\.idp\.assertion\(\) has expired \(\d+ s ago\); it was not sent$/);
    expect(f.exchanges).toHaveLength(1);
  });

  it("SEP-990/SEP-1933: config.oauth is checked", async () => {
    const f = await fixture();
    const transport = (oauth: Record<string, unknown>) => native.createHttpTransport({ type: "http", url: f.url, oauth } as any);
    await expect(transport({ grantType: "jwt_bearer" })).rejects.toThrow(new TypeError('The "oauth.workloadToken" field is required for jwt_bearer'));
    await expect(transport({ grantType: "jwt_bearer", workloadToken: { path: "/x" } })).rejects.toThrow(
      new TypeError('The "oauth.workloadToken" field must be a string, a function, { file } or { env }'),
    );
    await expect(transport({ grantType: "enterprise_managed" })).rejects.toThrow(new TypeError('The "oauth.idp" field is required for enterprise_managed'));
    await expect(transport({ grantType: "enterprise_managed", idp: { clientId: "a", assertion: "t" } })).rejects.toThrow(
      new TypeError('The "oauth.idp" field needs an "issuer" or a "tokenEndpoint"'),
    );
    await expect(transport({ grantType: "enterprise_managed", idp: { issuer: "https://idp", assertion: "t" } })).rejects.toThrow(
      new TypeError('The "oauth.idp.clientId" field is required'),
    );
    await expect(transport({ grantType: "password" })).rejects.toThrow(
      new TypeError('The "oauth.grantType" field must be "authorization_code", "client_credentials", "jwt_bearer" or "enterprise_managed", got "password"'),
    );
  });
});
