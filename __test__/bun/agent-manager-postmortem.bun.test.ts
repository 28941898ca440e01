// The v18 agent's own manager check, replayed on Bun against mcp-native (A38/A39, W5): its
// client module's connectToServer is mocked to hand back a connection over a real stdio
// child that never speaks MCP; the manager still records it as connected, and
// disconnectAll() (what the agent's exit hook runs) stops the child.
import { afterEach, describe, expect, it, setDefaultTimeout, spyOn } from "bun:test";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MCPServerConnection } from "../../index.js";
import * as client from "../agent18-client";
import { AgentMCPManager } from "../agent18-manager-subclass";
import { alive, native, sleep } from "./support";

setDefaultTimeout(20_000);
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

describe("the agent's disconnect-on-exit check on Bun", () => {
  it("A38/W5: a mocked connectToServer's connection counts as connected, and disconnectAll() kills its child", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-postmortem-")));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const pidFile = join(dir, "child.pid");
    const childScript = `require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); process.stdin.resume();`;
    const config = { type: "stdio" as const, command: "node", args: ["-e", childScript], cwd: dir };
    const transport = new native.StdioTransport(config);
    await transport.connect();
    let pid = 0;
    for (let i = 0; i < 200 && !pid; i++) {
      try {
        pid = Number(readFileSync(pidFile, "utf8"));
      } catch {
        await sleep(10);
      }
    }
    expect(alive(pid)).toBe(true);
    const connection: MCPServerConnection = {
      name: "fake",
      config,
      transport,
      serverInfo: { name: "test", version: "1.0" },
      capabilities: { tools: {} },
    };
    const spy = spyOn(client, "connectToServer").mockResolvedValue(connection);
    cleanups.push(() => spy.mockRestore());
    const manager = new AgentMCPManager(dir);
    cleanups.push(() => manager.disconnectAll());
    await manager.connectServers({ fake: config }, { fake: { provider: "mcp", providerName: "MCP", path: join(dir, ".mcp.json"), level: "project" } as any });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(manager.getConnectionStatus("fake")).toBe("connected");
    await manager.disconnectAll();
    for (let i = 0; i < 200 && alive(pid); i++) await sleep(10);
    expect(alive(pid)).toBe(false);
  });
});
