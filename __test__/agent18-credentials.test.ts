// SPEC-AGENT18 A37: prepareConfig = this.resolveCredentials (skipped by oauth: false), then M3's
// value resolution, except literal env policies and origin-locked headers; a refreshable
// credential wires the transport's onAuthError to prepareConfig with forceRefresh.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { MCPManager, MCPServerConfig } from "../index.js";
import { startHttpFixture } from "./fixtures/http-server";
import { native } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});
function make(Class: typeof native.MCPManager = native.MCPManager) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-a37-"));
  const manager = new Class(dir, null, { startupTimeoutMs: 10_000 }) as MCPManager<any>;
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => manager.disconnectAll());
  return manager;
}
const storage = (access: string) => ({ get: (id: string) => (id === "cred" ? { type: "oauth", access } : undefined) });

describe("A37 prepareConfig", () => {
  it("A37: envPolicy literal keeps env verbatim (empties too); envLiteralKeys keep those keys; origin-locked headers stay as written", async () => {
    const manager = make();
    process.env.MCP_NATIVE_A37 = "from-env";
    cleanups.push(() => delete process.env.MCP_NATIVE_A37);
    const literal = await manager.prepareConfig({ command: "x", env: { A: "MCP_NATIVE_A37", B: "", C: "!echo hi" }, envPolicy: "literal" });
    expect(literal.env).toEqual({ A: "MCP_NATIVE_A37", B: "", C: "!echo hi" });
    const keys = await manager.prepareConfig({ command: "x", env: { A: "MCP_NATIVE_A37", B: "MCP_NATIVE_A37", E: "" }, envLiteralKeys: ["A", "E"] });
    expect(keys.env).toEqual({ A: "MCP_NATIVE_A37", B: "from-env", E: "" });
    const locked = await manager.prepareConfig({ type: "http", url: "https://a", headers: { "X-Key": "MCP_NATIVE_A37" }, headerPolicy: "origin-locked" });
    expect(locked.headers).toEqual({ "X-Key": "MCP_NATIVE_A37" });
    const plain = await manager.prepareConfig({ type: "http", url: "https://a", headers: { "X-Key": "MCP_NATIVE_A37" } });
    expect(plain.headers).toEqual({ "X-Key": "from-env" });
  });

  it("A37: the credential comes from this.resolveCredentials, replaces any spelling of Authorization, and oauth: false skips it", async () => {
    const manager = make();
    manager.setAuthStorage(storage("tok"));
    const config: MCPServerConfig = { type: "http", url: "https://a", headers: { authorization: "old", X: "x" }, auth: { type: "oauth", credentialId: "cred" } } as any;
    expect((await manager.prepareConfig(config)).headers).toEqual({ X: "x", Authorization: "Bearer tok" });
    expect((await manager.prepareConfig(config, { oauth: false })).headers).toEqual({ authorization: "old", X: "x" });
    expect(manager.hasRefreshableCredential(config)).toBe(true);
    expect(manager.hasRefreshableCredential({ type: "http", url: "https://a" })).toBe(false);
    const stdio = await manager.resolveCredentials({ command: "x", auth: { type: "oauth", credentialId: "cred" } } as any);
    expect(stdio.env).toEqual({ OAUTH_ACCESS_TOKEN: "tok" });

    const calls: unknown[] = [];
    class Agent extends native.MCPManager {
      override async resolveCredentials(c: any, options?: { forceRefresh?: boolean }) {
        calls.push(options);
        return { ...c, headers: { ...c.headers, Authorization: "Bearer mine" } };
      }
    }
    const agent = make(Agent);
    expect((await agent.prepareConfig(config)).headers).toEqual({ authorization: "old", X: "x", Authorization: "Bearer mine" });
    await agent.prepareConfig(config, { oauth: false });
    expect(calls).toEqual([{ forceRefresh: false }]);
  });

  it("A37: with a refreshable credential, a 401 asks resolveCredentials with forceRefresh and the call is retried with its headers", async () => {
    const token = { current: "first" };
    const server = await startHttpFixture({ bearer: token });
    cleanups.push(() => server.close());
    const asked: unknown[] = [];
    class Agent extends native.MCPManager {
      override async resolveCredentials(c: any, options?: { forceRefresh?: boolean }) {
        asked.push(options?.forceRefresh);
        const access = options?.forceRefresh ? "second" : "first";
        return { ...c, headers: { Authorization: `Bearer ${access}` } };
      }
      override hasRefreshableCredential() {
        return true;
      }
    }
    const manager = make(Agent);
    const result = await manager.connectServers({ s: { type: "http", url: server.url } }, {});
    expect(result.connectedServers).toEqual(["s"]);
    const connection = manager.getConnection("s")!;
    expect(typeof (connection.transport as any).onAuthError).toBe("function");
    token.current = "second";
    await expect(connection.transport.request("tools/list", {})).resolves.toHaveProperty("tools");
    expect(asked).toEqual([false, true]);
    const auths = server.received.filter((r) => r.method === "POST").map((r) => r.headers.authorization);
    expect(auths.at(-2)).toBe("Bearer first");
    expect(auths.at(-1)).toBe("Bearer second");
    // Without a refreshable credential nothing is wired.
    const plain = make();
    const other = await startHttpFixture();
    cleanups.push(() => other.close());
    await plain.connectServers({ s: { type: "http", url: other.url } }, {});
    expect((plain.getConnection("s")!.transport as any).onAuthError).toBeUndefined();
  });
});

describe("A38 clientApi", () => {
  it("A38: every client call goes through clientApi's functions, read at each call, so spies on the agent's client module see them", async () => {
    const calls: string[] = [];
    const names = [
      "connectToServer",
      "disconnectServer",
      "listTools",
      "listResources",
      "listResourceTemplates",
      "listPrompts",
      "readResource",
      "getPrompt",
      "subscribeToResources",
      "unsubscribeFromResources",
    ] as const;
    const api: Record<string, (...args: any[]) => any> = {};
    for (const name of names) {
      api[name] = (...args: any[]) => {
        calls.push(name);
        return (native as any)[name](...args);
      };
    }
    const { server } = await import("./helpers");
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-a38-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const manager = new native.MCPManager(dir, null, { startupTimeoutMs: 10_000, clientApi: api as any });
    cleanups.push(() => manager.disconnectAll());
    await manager.connectServers({ s: { command: process.execPath, args: [server, "--all-capabilities", "--subscribe"] } }, {});
    expect(calls.slice(0, 2)).toEqual(["connectToServer", "listTools"]);
    await manager.ensureServerResources("s");
    const { waitFor } = await import("./helpers");
    expect(await waitFor(() => calls.includes("listPrompts"), 3000)).toBe(true);
    expect(calls).toEqual(expect.arrayContaining(["listResources", "listResourceTemplates", "listPrompts"]));
    await manager.readServerResource("s", "fixture://r/1");
    await manager.executePrompt("s", "p0", { who: "x" });
    expect(calls.slice(-2)).toEqual(["readResource", "getPrompt"]);
    manager.setNotificationsEnabled(true);
    expect(await waitFor(() => manager.getNotificationState().subscriptions.has("s"), 3000)).toBe(true);
    expect(calls.at(-1)).toBe("subscribeToResources");
    // Read at each call: a spy installed later is the one used.
    let replaced = 0;
    api.listTools = (...args: any[]) => (replaced++, native.listTools(...(args as [any])));
    await manager.refreshServerTools("s");
    expect(replaced).toBe(1);
    await manager.disconnectServer("s");
    expect(calls.slice(-2).sort()).toEqual(["disconnectServer", "unsubscribeFromResources"]);
  });
});
