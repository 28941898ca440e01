// SPEC §8.1 (W1–W9) on Node: the agent's manager.ts as a subclass of MCPManager
// (__test__/agent-manager.ts) driving real fixture servers. The same subclass runs under
// `bun test` in __test__/bun/agent-manager.bun.test.ts.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { MCPServerConfig, MCPTextContent, MCPToolDefinition } from "../index.js";
import { AgentManager, MemoryToolCache, MyTool, agentConfigPath, listToolsOnce } from "./agent-manager";
import { startHttpFixture } from "./fixtures/http-server";
import { native, server, waitFor } from "./helpers";

const fx = (...flags: string[]) => ({ command: process.execPath, args: [server, ...flags] });

let fixtureToolNames: string[] = [];
beforeAll(async () => {
  const connection = await native.connectToServer("probe", fx());
  fixtureToolNames = (await native.listTools(connection)).map((t) => t.name);
  await connection.transport.close();
});
const expectedNames = (serverName: string) => fixtureToolNames.map((t) => `mcp_${serverName}_${t}`).sort();
const namesOf = (tools: { name: string }[]) => tools.map((t) => t.name).sort();

let cwd = "";
const managers: AgentManager[] = [];
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-agent-")));
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  rmSync(cwd, { recursive: true, force: true });
});

function writeAgentConfig(mcpServers: Record<string, unknown>) {
  const path = agentConfigPath(cwd);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify({ mcpServers }));
  return path;
}
function agent(cache = new MemoryToolCache(), startupTimeoutMs?: number): AgentManager {
  const manager = new AgentManager(cwd, cache, { startupTimeoutMs });
  managers.push(manager);
  return manager;
}

describe("W1–W5 the agent's subclass", () => {
  it("W1/W2/W3/W4/W5: discoverAndConnect (overridden, calling super) loads through the agent's loadConfigs and yields MyTool objects", async () => {
    const path = writeAgentConfig({
      alpha: fx(),
      exa: { command: "exa-mcp", env: { EXA_API_KEY: "exa-secret" } },
      off: { ...fx(), enabled: false },
    });
    const cache = new MemoryToolCache();
    const m = agent(cache);
    expect(m).toBeInstanceOf(AgentManager);
    expect(m).toBeInstanceOf(native.MCPManager);
    expect(m.cwd).toBe(cwd);
    expect(m.discoverCalls).toEqual([]);
    expect(m.cache).toBe(cache);

    const result = await m.discoverAndConnect({ filterExa: true });
    expect(m.discoverCalls).toEqual([{ filterExa: true }]);
    expect(m.loaded).toHaveLength(1);
    expect(Object.keys(m.loaded[0].configs)).toEqual(["alpha"]);
    expect(result.exaApiKeys).toEqual(["exa-secret"]);
    expect(result.connectedServers).toEqual(["alpha"]);
    expect(result.errors.size).toBe(0);
    expect(namesOf(result.tools)).toEqual(expectedNames("alpha"));
    for (const tool of result.tools) {
      expect(tool).toBeInstanceOf(MyTool);
      expect(tool.deferred).toBe(false);
      expect(tool.serverName).toBe("alpha");
    }
    expect(m.getTools()).toHaveLength(result.tools.length);
    expect(m.getTools().every((t) => result.tools.includes(t))).toBe(true);

    const echo = m.toolsOf("alpha").find((t) => t.definition.name === "echo")!;
    const answer = await echo.run({ text: "from the agent" });
    expect((answer.content[0] as MCPTextContent).text).toBe("from the agent");

    const source = { provider: "agent", providerName: "Agent config", path, level: "project" };
    const connection = m.getConnection("alpha")!;
    expect(connection._source).toEqual(source);
    expect(echo.source).toEqual(source);
    expect(m.getSource("alpha")).toEqual(source);
    expect(connection.config).toBe(m.loaded[0].configs.alpha);
    expect(await waitFor(() => cache.sets.length === 1)).toBe(true);
    expect(cache.sets[0].serverName).toBe("alpha");
    expect(cache.sets[0].config).toBe(m.loaded[0].configs.alpha);
    expect(cache.sets[0].tools.map((t) => t.name)).toEqual(fixtureToolNames);
  });

  it("W4: discoverAndConnect's options reach the agent's loadConfigs (enableProjectConfig: false → no servers)", async () => {
    writeAgentConfig({ alpha: fx() });
    const m = agent();
    const connecting: string[][] = [];
    const result = await m.discoverAndConnect({ enableProjectConfig: false, onConnecting: (names) => connecting.push(names) });
    expect(result).toEqual({ tools: [], errors: new Map(), connectedServers: [], exaApiKeys: [] });
    expect(connecting).toEqual([]);
    expect(m.getConnectionStatus("alpha")).toBe("disconnected");
    expect(m.discoverCalls).toHaveLength(1);
  });

  it("W7: getTools() holds the tools of every known server, not only those of the last call", async () => {
    const m = agent();
    const first = await m.connectServers({ one: fx() }, {});
    const second = await m.connectServers({ two: fx() }, {});
    expect(namesOf(first.tools)).toEqual(expectedNames("one"));
    expect(namesOf(second.tools)).toEqual(expectedNames("two"));
    expect(namesOf(m.getTools())).toEqual([...expectedNames("one"), ...expectedNames("two")].sort());
    expect(m.getTools().every((t) => t instanceof MyTool)).toBe(true);
  });

  it("W5/W6/W7: deferred MyTools come from the agent's cache; a late failure goes to the agent's logger and the deferred tools then fail", async () => {
    const cache = new MemoryToolCache();
    const config: MCPServerConfig = fx("--init-delay=800", "--init-error");
    const cached: MCPToolDefinition[] = [{ name: "echo", inputSchema: { type: "object" } }];
    cache.entries.set(MemoryToolCache.key("later", config), cached);
    const m = agent(cache, 100);
    const result = await m.connectServers({ later: config }, {});
    expect(cache.gets.map((g) => [g.serverName, g.config])).toEqual([["later", config]]);
    expect(cache.gets[0].config).toBe(config);
    expect(result.connectedServers).toEqual([]);
    expect(result.tools).toHaveLength(1);
    const [tool] = result.tools;
    expect(tool).toBeInstanceOf(MyTool);
    expect([tool.name, tool.deferred, tool.definition]).toEqual(["mcp_later_echo", true, cached[0]]);

    expect(await waitFor(() => m.logged.some((e) => e.level === "error"), 8000)).toBe(true);
    const logged = m.logged.find((e) => e.level === "error")!;
    expect(logged.message).toContain("later");
    expect(logged.message).toContain("Initialization refused");
    expect(m.getTools()).toEqual([tool]);
    const error = await tool.run({ text: "x" }).then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP server not connected: later");
  });
});

describe("W8/W9", () => {
  it("W8: a refused connection keeps ECONNREFUSED in its error, a connect timeout says 'timed out'", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const m = agent();
    const result = await m.connectServers(
      {
        refused: { type: "http", url: `http://127.0.0.1:${port}/mcp` },
        silent: { ...fx("--no-init-answer"), timeout: 300 },
        emptyurl: { type: "http", url: "" },
      },
      {},
    );
    expect(result.errors.get("refused")).toContain("ECONNREFUSED");
    expect(result.errors.get("silent")).toBe('Connection to MCP server "silent" timed out after 300ms');
    expect(result.errors.get("emptyurl")).toBe('Server "emptyurl": http server requires "url" field');
    expect(result.connectedServers).toEqual([]);
  });

  it("W9: callMCP<T> with a logger returns the envelope, and its failures are logged", async () => {
    const f = await startHttpFixture();
    try {
      const errors: [string, Record<string, unknown> | undefined][] = [];
      const logger = { error: (message: string, context?: Record<string, unknown>) => errors.push([message, context]) };
      const envelope = await listToolsOnce(f.url, logger);
      expect(envelope.jsonrpc).toBe("2.0");
      expect(envelope.result!.tools.map((t) => t.name)).toEqual(["whoami"]);
      expect(errors).toEqual([]);
      const failure = await native.callMCP(f.url, "http/500", {}, { logger }).then(
        () => null,
        (e) => e,
      );
      expect(failure).toBeInstanceOf(Error);
      expect(failure.message).toBe("MCP request failed: 500 Internal Server Error");
      expect(errors.length).toBeGreaterThan(0);
    } finally {
      await f.close();
    }
  });
});
