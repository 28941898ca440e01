// SPEC-AGENT18 A39 on Bun, where the v18 agent runs: its manager.ts as a subclass of MCPManager
// (__test__/agent18-manager-subclass.ts) against real stdio fixture processes — connect with
// status events, the bridge's sorted `mcp__` tools, a reconnect after the server process dies,
// spies on the agent's client module, disconnectAll. Vitest runs the fuller Node version
// (__test__/agent18-manager-subclass.test.ts).
import { afterEach, beforeAll, describe, expect, it, setDefaultTimeout, spyOn } from "bun:test";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { McpConnectionStatusEvent, MCPToolDefinition } from "../../index.js";
import * as client from "../agent18-client";
import { AgentMCPManager, AgentMCPTool } from "../agent18-manager-subclass";
import { alive, native } from "./support";

setDefaultTimeout(20_000);
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const fx = (...flags: string[]) => ({ command: "node", args: [server, ...flags] });

async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await Bun.sleep(20);
  }
  return check();
}
type Event = McpConnectionStatusEvent;
const settled = (events: Event[], name: string) =>
  events.some((e) => (e.type === "connected" || e.type === "failed") && e.serverName === name);
const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});
function setUp() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-bun-a39-")));
  const manager = new AgentMCPManager(dir);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => manager.disconnectAll());
  const pids = join(dir, "pids");
  const pidList = () => {
    try {
      return readFileSync(pids, "utf8").trim().split("\n").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  return { manager, pidFlag: `--pid-file=${pids}`, pidList };
}

let fixtureTools: MCPToolDefinition[] = [];
beforeAll(async () => {
  const connection = await native.connectToServer("probe", fx());
  fixtureTools = await native.listTools(connection);
  await connection.transport.close();
});
const expectedNames = (serverName: string) => fixtureTools.map((t) => `mcp__${serverName}_${t.name}`).sort();

describe("A39 the v18 agent's subclass on Bun", () => {
  it("A31: connecting (config order, invalid included), failed for the invalid one, then connected / failed with sourcePath", async () => {
    const { manager } = setUp();
    const events: Event[] = [];
    const source = { provider: "omp", providerName: "OMP", path: "/p/.omp/mcp.json", level: "project" as const };
    const result = await manager.connectServers(
      { zeta: fx(), bad: {} as any, broken: fx("--init-error") },
      { broken: source },
      (e: Event) => events.push(e),
    );
    expect(events[0]).toEqual({ type: "connecting", serverNames: ["zeta", "bad", "broken"] });
    expect(events[1]).toEqual({ type: "failed", serverName: "bad", error: expect.stringContaining('Server "bad"') });
    for (const name of result.connectedServers) expect(events).toContainEqual({ type: "connected", serverName: name });
    expect(await waitFor(() => settled(events, "zeta") && settled(events, "broken"), 8000)).toBe(true);
    expect(events).toHaveLength(4);
    expect(events).toContainEqual({ type: "connected", serverName: "zeta" });
    expect(events).toContainEqual({ type: "failed", serverName: "broken", error: expect.stringContaining("Initialization refused"), sourcePath: source.path });
  });

  it("A30/A33: the bridge's tools are sorted, owned by server name, named mcp__<server>_<tool>, and call their server", async () => {
    const { manager } = setUp();
    const events: Event[] = [];
    await manager.connectServers({ docs_extra: fx(), docs: fx() }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "docs") && settled(events, "docs_extra"), 8000)).toBe(true);
    const names = manager.getTools().map((t) => t.name);
    expect(names).toEqual([...names].sort());
    expect(manager.getTools().every((t) => t instanceof AgentMCPTool)).toBe(true);
    expect(manager.toolsOf("docs").map((t) => t.name).sort()).toEqual(expectedNames("docs"));
    expect(manager.toolsOf("docs_extra").map((t) => t.name).sort()).toEqual(expectedNames("docs_extra"));
    const echo = manager.toolsOf("docs").find((t) => t.mcpToolName === "echo")!;
    expect(text(await echo.execute({ text: "hello from bun" }))).toBe("hello from bun");
    await manager.disconnectServer("docs");
    expect(manager.getTools().map((t) => t.name).sort()).toEqual(expectedNames("docs_extra"));
  });

  it("A34: a server process that dies is reconnected through this.reconnectServer with a new connection and rebuilt tools", async () => {
    const { manager, pidFlag, pidList } = setUp();
    const changes: string[][] = [];
    manager.setOnToolsChanged((tools) => void changes.push(tools.map((t) => t.name)));
    const events: Event[] = [];
    await manager.connectServers({ s: fx(pidFlag, "--exit-after-tools=150", "--exit-times=1") }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    const first = manager.getConnection("s")!;
    const names = manager.getTools().map((t) => t.name);
    expect(await waitFor(() => manager.reconnects.length > 0, 5000)).toBe(true);
    expect(manager.reconnects[0]).toEqual({ name: "s" });
    const second = await manager.waitForConnection("s");
    expect(second).not.toBe(first);
    expect(pidList()).toHaveLength(2);
    expect(alive(pidList()[0])).toBe(false);
    expect(manager.getTools().map((t) => t.name)).toEqual(names);
    expect(await waitFor(() => changes.length >= 2, 3000)).toBe(true);
    const echo = manager.toolsOf("s").find((t) => t.mcpToolName === "echo")!;
    expect(text(await echo.execute({ text: "reconnected" }))).toBe("reconnected");
    expect(manager.logged.some((e) => e.level === "warn" && e.message === 'MCP server "s" disconnected unexpectedly; reconnecting')).toBe(true);
  });

  it("A38: spies on the agent's client module see the manager's calls; disconnectAll stops every server", async () => {
    const { manager, pidFlag, pidList } = setUp();
    const connect = spyOn(client, "connectToServer");
    const listTools = spyOn(client, "listTools");
    const disconnect = spyOn(client, "disconnectServer");
    cleanups.push(() => {
      connect.mockRestore();
      listTools.mockRestore();
      disconnect.mockRestore();
    });
    const events: Event[] = [];
    await manager.connectServers({ s: fx(pidFlag) }, {}, (e: Event) => events.push(e));
    expect(await waitFor(() => settled(events, "s"), 8000)).toBe(true);
    expect(connect).toHaveBeenCalledTimes(1);
    expect(connect.mock.calls[0][0]).toBe("s");
    expect(listTools).toHaveBeenCalledTimes(1);
    const [pid] = pidList();
    await manager.disconnectAll();
    expect(disconnect).toHaveBeenCalledTimes(1);
    expect(manager.getConnectedServers()).toEqual([]);
    expect(manager.getTools()).toEqual([]);
    expect(await waitFor(() => !alive(pid), 3000)).toBe(true);
    expect(manager.reconnects).toEqual([]);
  });
});
