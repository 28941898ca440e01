// SPEC-AGENT18 A7 and A9 on Bun, where the v18 agent runs: its shim installs a timeout
// resolver at import, and its servers may demand string request ids.
import { afterEach, describe, expect, it, setDefaultTimeout } from "bun:test";
import { fileURLToPath } from "node:url";
import { native } from "./support";

setDefaultTimeout(20_000);
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const init = { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "bun", version: "0" } };
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  native.setTimeoutResolver(null);
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

describe("the v18 transports on Bun", () => {
  it("A9: a resolver reading the environment, as the agent's OMP_MCP_TIMEOUT_MS does, times requests", async () => {
    process.env.MCP_NATIVE_TEST_TIMEOUT_MS = "5000";
    native.setTimeoutResolver((configTimeout?: number) => Number(process.env.MCP_NATIVE_TEST_TIMEOUT_MS ?? configTimeout ?? 30_000));
    const t = await native.createStdioTransport({ command: "node", args: [server, "--hang-on-unknown"], timeout: 20_000 });
    cleanups.push(() => t.close());
    await t.request("initialize", init);
    process.env.MCP_NATIVE_TEST_TIMEOUT_MS = "150";
    const started = performance.now();
    await expect(t.request("never/answered")).rejects.toThrow("Request timeout after 150ms");
    expect(performance.now() - started).toBeLessThan(2000);
    delete process.env.MCP_NATIVE_TEST_TIMEOUT_MS;
  });

  it('A7: requestIdFormat "string" ids are 16 lowercase hex digits, numbers are 1, 2, 3…', async () => {
    const hex = await native.createStdioTransport({ command: "node", args: [server], requestIdFormat: "string" });
    const plain = await native.createStdioTransport({ command: "node", args: [server] });
    cleanups.push(() => hex.close(), () => plain.close());
    for (const t of [hex, plain]) {
      await t.request("initialize", init);
      await t.notify("notifications/initialized");
    }
    const ids = async (t: typeof hex) => {
      const result = await t.request<{ content: { text: string }[] }>("tools/call", { name: "history", arguments: {} });
      return (JSON.parse(result.content[0].text) as any[]).filter((m) => m.method && m.id !== undefined).map((m) => m.id);
    };
    const hexIds = await ids(hex);
    expect(hexIds.every((id) => /^[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(new Set(hexIds).size).toBe(2);
    expect(await ids(plain)).toEqual([1, 2]);
  });
});

describe("the v18 manager on Bun", () => {
  it("A31/A32: status events and a gate that does not wait for a stalled uncached server", async () => {
    const manager = new native.MCPManager(process.cwd(), null, { startupTimeoutMs: 1500 });
    cleanups.push(() => manager.disconnectAll());
    const events: string[] = [];
    const started = performance.now();
    const result = await manager.connectServers(
      { quick: { command: "node", args: [server] }, stalled: { command: "node", args: [server, "--init-delay=4000"] } },
      {},
      (e: any) => events.push(`${e.type} ${e.serverName ?? e.serverNames.join(",")}`),
    );
    expect(performance.now() - started).toBeLessThan(3000);
    expect(result.connectedServers).toEqual(["quick"]);
    expect(events).toEqual(["connecting quick,stalled", "connected quick"]);
    expect(manager.getTools().every((t: any) => t.name.startsWith("mcp__quick_"))).toBe(true);
  });
});
