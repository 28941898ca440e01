// SPEC-AGENT18 A34–A36 on Bun, where the v18 agent runs: a server that exits is reconnected
// with a new connection, a crash loop is stopped by the breaker at the sixth start, early
// notifications wait for the first listener, and the catalog is kept per server.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const cleanups = cleanupsAfterEach();

async function waitFor(check: () => boolean, ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await Bun.sleep(20);
  }
  return check();
}

function setUp(...flags: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-bun-a34-"));
  const pids = join(dir, "pids");
  const errors: string[] = [];
  const manager = new native.MCPManager(dir, null, { startupTimeoutMs: 10_000, logger: { error: (m: string) => errors.push(m) } });
  cleanups.push(async () => {
    await manager.disconnectAll();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = { command: "node", args: [server, `--pid-file=${pids}`, ...flags] };
  const starts = () => readFileSync(pids, "utf8").trim().split("\n").length;
  return { manager, config, starts, errors };
}

describe("A34 reconnectServer on Bun", () => {
  it("A34: a server that exits comes back as a new connection", async () => {
    const { manager, config, starts } = setUp("--exit-after-tools=100", "--exit-times=1");
    await manager.connectServers({ s: config }, {});
    const first = manager.getConnection("s");
    expect(await waitFor(() => manager.getConnection("s") !== first && manager.getConnectionStatus("s") === "connected", 5000)).toBe(true);
    expect(starts()).toBe(2);
    expect(manager.getTools().length).toBeGreaterThan(0);
  });

  it("A34: the breaker stops a crash loop at the sixth start within 30 s", async () => {
    const { manager, config, starts, errors } = setUp("--exit-after-tools=30");
    await manager.connectServers({ s: config }, {});
    expect(await waitFor(() => errors.some((m) => m.includes("automatic reconnects are suspended")), 15_000)).toBe(true);
    await Bun.sleep(300);
    expect(starts()).toBe(6);
    expect(manager.getConnectionStatus("s")).toBe("disconnected");
  });
});

describe("A35/A36 on Bun", () => {
  it("A35: notifications before any listener drain into the first; A36: resources and prompts are kept", async () => {
    const { manager, config } = setUp("--all-capabilities");
    await manager.connectServers({ s: config }, {});
    const connection = manager.getConnection("s")!;
    for (let i = 0; i < 3; i++) {
      await connection.transport.request("tools/call", { name: "send_notification", arguments: { method: "notifications/custom", params: { i } } });
    }
    const heard: number[] = [];
    manager.addNotificationListener((_s, method, params: any) => method === "notifications/custom" && heard.push(params.i));
    expect(heard).toEqual([0, 1, 2]);
    await manager.ensureServerResources("s");
    expect(manager.getServerResources("s")!.resources).toHaveLength(7);
    expect(await waitFor(() => (manager.getServerPrompts("s") ?? []).length === 5, 3000)).toBe(true);
    const prompt = await manager.executePrompt("s", "p0", { who: "bun" });
    expect(prompt?.messages[0].content).toEqual({ type: "text", text: "p0 for bun" });
  });
});
