// SPEC-PROTOCOL O1–O3 on Bun (the agent runs on Bun): the flow's host calls (redirect, a
// caller's store) cross Bun's event loop, timers leave the user's wait out, and
// FileTokenStore writes a private file, as the Vitest suite checks on Node.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOAuthFixture } from "../fixtures/oauth-server";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);

const cleanups = cleanupsAfterEach();

describe("OAuth on Bun", () => {
  it("O2/O3: the flow, a refresh on 401, and FileTokenStore reused by a new client", async () => {
    const f = await startOAuthFixture();
    cleanups.push(f.close);
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-bun-tokens-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "tokens.json");
    let opened = 0;
    const oauth = {
      // The user takes longer than the timeout: it must not count.
      redirect: async (url: string) => (opened++, await Bun.sleep(400), f.redirect(url)),
      store: new native.FileTokenStore(path),
    };
    const first = await native.MCPClient.connect("bun-oauth", { type: "http", url: f.url, timeout: 250, oauth } as any);
    cleanups.push(() => first.close());
    const text = async (client: any) => (await client.callTool("whoami", {})).content[0].text;
    expect(await text(first)).toBe(`client-1 via ${f.base}/as`);
    f.revoke();
    expect(await text(first)).toBe(`client-1 via ${f.base}/as`);
    expect(f.tokenRequests.map((t) => t.grant)).toEqual(["authorization_code", "refresh_token"]);
    await first.close();
    const second = await native.MCPClient.connect("bun-oauth", { type: "http", url: f.url, oauth } as any);
    cleanups.push(() => second.close());
    expect(await text(second)).toBe(`client-1 via ${f.base}/as`);
    expect(opened).toBe(1);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("SEP-1933/SEP-990: tokens from Bun's process.env (set in JS), a rotating file and a function", async () => {
    const f = await startOAuthFixture({ lifetime: 1, refreshTokens: false });
    cleanups.push(f.close);
    f.preRegister("agent", "agent-secret");
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-bun-wif-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const text = async (client: any) => (await client.callTool("whoami", {})).content[0].text;
    const memory = () => {
      const entries = new Map();
      return { get: async (k: string) => entries.get(k), set: async (k: string, v: unknown) => void entries.set(k, v), delete: async (k: string) => void entries.delete(k) };
    };
    // Bun keeps process.env apart from the C environment: only a JS-side read sees this.
    process.env.MCP_BUN_WORKLOAD = f.workloadToken("bun-env");
    cleanups.push(() => delete process.env.MCP_BUN_WORKLOAD);
    const fromEnv = await native.MCPClient.connect("bun-wif", { type: "http", url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { env: "MCP_BUN_WORKLOAD" }, store: memory() } } as any);
    cleanups.push(() => fromEnv.close());
    expect(await text(fromEnv)).toBe(`bun-env via ${f.base}/as`);
    const path = join(dir, "token");
    writeFileSync(path, f.workloadToken("bun-file-1"));
    const fromFile = await native.MCPClient.connect("bun-wif", { type: "http", url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { file: path }, store: memory() } } as any);
    cleanups.push(() => fromFile.close());
    expect(await text(fromFile)).toBe(`bun-file-1 via ${f.base}/as`);
    writeFileSync(path, f.workloadToken("bun-file-2"));
    await Bun.sleep(1100);
    expect(await text(fromFile)).toBe(`bun-file-2 via ${f.base}/as`);
    const oauth = {
      grantType: "enterprise_managed",
      clientId: "agent",
      clientSecret: "agent-secret",
      idp: { issuer: f.idpIssuer(), clientId: "agent-at-idp", clientSecret: "idp-secret", assertion: async () => (await Bun.sleep(10), f.idToken("erin")) },
      store: memory(),
    };
    const enterprise = await native.MCPClient.connect("bun-xaa", { type: "http", url: f.url, oauth } as any);
    cleanups.push(() => enterprise.close());
    expect(await text(enterprise)).toBe(`erin (agent) via ${f.base}/as`);
  });
});
