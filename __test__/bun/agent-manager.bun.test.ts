// SPEC §8.1 W1 on Bun (the agent runs on Bun): the agent's MCPManager subclass
// (__test__/agent-manager.ts) against real fixture servers, run by `bun test ./__test__/bun/`.
// Vitest does not pick this file up (vitest.config.mts excludes __test__/bun/).
import { afterEach, beforeAll, beforeEach, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentManager, MemoryToolCache, MyTool, agentConfigPath } from "../agent-manager";
import { native } from "./support";

setDefaultTimeout(20_000);

const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const fx = (...flags: string[]) => ({ command: process.execPath, args: [server, ...flags] });

async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

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
  cwd = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-bun-agent-")));
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  rmSync(cwd, { recursive: true, force: true });
});
function agent(cache = new MemoryToolCache(), startupTimeoutMs?: number): AgentManager {
  const manager = new AgentManager(cwd, cache, { startupTimeoutMs });
  managers.push(manager);
  return manager;
}

describe("W1 on Bun", () => {
  it("W1/W2/W4: the subclass discovers, connects and hands out MyTool objects that call their server", async () => {
    const path = agentConfigPath(cwd);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify({ mcpServers: { alpha: fx(), exa: { command: "exa-mcp", env: { EXA_API_KEY: "bun-exa" } } } }));
    const cache = new MemoryToolCache();
    const m = agent(cache);
    expect(m).toBeInstanceOf(AgentManager);
    expect(m).toBeInstanceOf(native.MCPManager);
    expect(m.discoverCalls).toEqual([]);

    const result = await m.discoverAndConnect({ filterExa: true });
    expect(m.discoverCalls).toEqual([{ filterExa: true }]);
    expect(result.exaApiKeys).toEqual(["bun-exa"]);
    expect(result.connectedServers).toEqual(["alpha"]);
    expect(result.errors.size).toBe(0);
    expect(namesOf(result.tools)).toEqual(expectedNames("alpha"));
    expect(result.tools.every((t) => t instanceof MyTool && !t.deferred)).toBe(true);

    const echo = m.toolsOf("alpha").find((t) => t.definition.name === "echo")!;
    expect(await echo.run({ text: "hello from bun" })).toEqual({ content: [{ type: "text", text: "hello from bun" }] });
    expect(m.getConnection("alpha")!._source).toEqual({ provider: "agent", providerName: "Agent config", path, level: "project" });
    expect(m.getConnection("alpha")!.config).toBe(m.loaded[0].configs.alpha);
    expect(await waitFor(() => cache.sets.length === 1)).toBe(true);
    expect(cache.sets[0].config).toBe(m.loaded[0].configs.alpha);

    await m.disconnectServer("alpha");
    expect(m.getConnectionStatus("alpha")).toBe("disconnected");
    expect(m.getTools()).toEqual([]);
  });

  it("W2/W5: deferred MyTools from the agent's cache go live once their server connects", async () => {
    const cache = new MemoryToolCache();
    const config = fx("--init-delay=800");
    cache.entries.set(MemoryToolCache.key("later", config), [{ name: "echo", inputSchema: { type: "object" } }]);
    const m = agent(cache, 100);
    const result = await m.connectServers({ later: config }, {});
    expect(result.connectedServers).toEqual([]);
    expect(result.tools.map((t) => [t.name, t.deferred])).toEqual([["mcp_later_echo", true]]);
    expect(cache.gets[0].config).toBe(config);
    expect(await result.tools[0].run({ text: "waited" })).toEqual({ content: [{ type: "text", text: "waited" }] });
    expect(await waitFor(() => m.getTools().length === fixtureToolNames.length && m.getTools().every((t) => !t.deferred), 8000)).toBe(true);
    expect(namesOf(m.getTools())).toEqual(expectedNames("later"));
    expect(m.getConnectionStatus("later")).toBe("connected");
  });

  it("W7: a late failure is logged through the agent's logger; the deferred tool then fails", async () => {
    const cache = new MemoryToolCache();
    const config = fx("--init-delay=600", "--init-error");
    cache.entries.set(MemoryToolCache.key("broken", config), [{ name: "echo", inputSchema: { type: "object" } }]);
    const m = agent(cache, 100);
    const result = await m.connectServers({ broken: config }, {});
    expect(result.errors.size).toBe(0);
    expect(await waitFor(() => m.logged.some((e) => e.level === "error"), 8000)).toBe(true);
    expect(m.logged.find((e) => e.level === "error")!.message).toContain("broken");
    const error = await result.tools[0].run({}).then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP server not connected: broken");
  });
});

// M3 on Bun: `process.env` assignments and `.env` variables live only in Bun's JS view of the
// environment, never in the C one, so values must resolve through `process.env`.
describe("M3 value resolution on Bun", () => {
  it("M3: a variable assigned at run time resolves a header value and reaches a !command", async () => {
    const name = `MCP_NATIVE_BUN_RUNTIME_${process.pid}`;
    process.env[name] = "assigned-at-run-time";
    try {
      const m = new native.MCPManager(cwd);
      const http = await m.prepareConfig({ type: "http", url: "http://127.0.0.1:1/mcp", headers: { Authorization: name } });
      expect(http.headers).toEqual({ Authorization: "assigned-at-run-time" });
      const stdio = await m.prepareConfig({ command: "srv", env: { FROM_SHELL: `!printf %s "$${name}"` } });
      expect(stdio.env).toEqual({ FROM_SHELL: "assigned-at-run-time" });
    } finally {
      delete process.env[name];
    }
  });

  it("M3: a variable Bun loaded from a .env file resolves too", () => {
    writeFileSync(join(cwd, ".env"), "MCP_NATIVE_BUN_DOTENV=loaded-from-dotenv\n");
    const script = join(cwd, "resolve.mjs");
    const addon = fileURLToPath(new URL("../../index.js", import.meta.url));
    writeFileSync(
      script,
      `import { createRequire } from "node:module";
const { MCPManager } = createRequire(import.meta.url)(${JSON.stringify(addon)});
const m = new MCPManager(process.cwd());
const config = await m.prepareConfig({ type: "sse", url: "http://127.0.0.1:1/sse", headers: { "X-Key": "MCP_NATIVE_BUN_DOTENV" } });
console.log(JSON.stringify(config.headers));`,
    );
    const run = Bun.spawnSync([process.execPath, script], { cwd, env: { PATH: process.env.PATH ?? "" } });
    expect(run.stderr.toString()).toBe("");
    expect(JSON.parse(run.stdout.toString())).toEqual({ "X-Key": "loaded-from-dotenv" });
  });
});
