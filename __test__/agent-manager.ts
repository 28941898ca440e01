// SPEC §8.1 (W1–W9): the agent's `manager.ts` as it becomes after the switch to mcp-native —
// a short subclass of MCPManager that passes in its own tool class, tool cache, logger and
// config discovery. Used by __test__/agent-manager.test.ts (Vitest on Node) and
// __test__/bun/agent-manager.bun.test.ts (bun test), and type-checked by
// `tsc -p __test__/types/tsconfig.json` (W2: getTools() is MyTool[] without casts).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  MCPManager,
  callMCP,
  callTool,
  createMCPToolName,
  type JsonRpcResponse,
  type MCPDiscoverOptions,
  type MCPLoadResult,
  type MCPLoadedConfigs,
  type MCPLogger,
  type MCPServerConfig,
  type MCPServerConnection,
  type MCPToolCache,
  type MCPToolCallResult,
  type MCPToolDefinition,
  type MCPToolFactory,
  type SourceMeta,
} from "../index.js";

/** The agent's own tool class (stands in for its CustomTool / MCPTool / DeferredMCPTool). */
export class MyTool {
  readonly name: string;
  constructor(
    readonly serverName: string,
    readonly definition: MCPToolDefinition,
    readonly deferred: boolean,
    private readonly connection: () => Promise<MCPServerConnection>,
    readonly source?: SourceMeta,
  ) {
    this.name = createMCPToolName(serverName, definition.name);
  }

  /** Calls the tool on its server (a deferred tool first waits for the connection). */
  async run(args: Record<string, unknown> = {}, signal?: AbortSignal): Promise<MCPToolCallResult> {
    const connection = await this.connection();
    return callTool(connection, this.definition.name, args, { signal });
  }
}

/** The agent's tool cache (SQLite there): an in-memory map that records every call. */
export class MemoryToolCache implements MCPToolCache {
  readonly entries = new Map<string, MCPToolDefinition[]>();
  readonly gets: Array<{ serverName: string; config: MCPServerConfig }> = [];
  readonly sets: Array<{ serverName: string; config: MCPServerConfig; tools: MCPToolDefinition[] }> = [];

  static key(serverName: string, config: MCPServerConfig): string {
    return `${serverName}\u0000${JSON.stringify(config)}`;
  }

  async get(serverName: string, config: MCPServerConfig): Promise<MCPToolDefinition[] | null> {
    this.gets.push({ serverName, config });
    return this.entries.get(MemoryToolCache.key(serverName, config)) ?? null;
  }

  async set(serverName: string, config: MCPServerConfig, tools: MCPToolDefinition[]): Promise<void> {
    this.sets.push({ serverName, config, tools });
    this.entries.set(MemoryToolCache.key(serverName, config), tools);
  }
}

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  message: string;
  context?: Record<string, unknown>;
}

/** Where the agent's discovery reads its servers: `<cwd>/.agent/mcp.json`. */
export const agentConfigPath = (cwd: string) => join(cwd, ".agent", "mcp.json");

/**
 * The agent's config discovery (its loadAllMCPConfigs): project-level servers from
 * `<cwd>/.agent/mcp.json`; `enableProjectConfig: false` drops them; `enabled: false` is
 * skipped; with `filterExa` (default on) a server named "exa" is left out and its
 * `EXA_API_KEY` is returned in `exaApiKeys`.
 */
export async function loadAgentConfigs(cwd: string, options: MCPDiscoverOptions): Promise<MCPLoadedConfigs> {
  const path = agentConfigPath(cwd);
  const loaded: MCPLoadedConfigs = { configs: {}, sources: {}, exaApiKeys: [] };
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return loaded;
    throw error;
  }
  if (options.enableProjectConfig === false) return loaded;
  const file = JSON.parse(text) as { mcpServers?: Record<string, MCPServerConfig> };
  for (const [name, config] of Object.entries(file.mcpServers ?? {})) {
    if (config.enabled === false) continue;
    if (options.filterExa !== false && name === "exa") {
      const key = "env" in config ? config.env?.EXA_API_KEY : undefined;
      if (key) loaded.exaApiKeys!.push(key);
      continue;
    }
    loaded.configs[name] = config;
    loaded.sources[name] = { provider: "agent", providerName: "Agent config", path, level: "project" };
  }
  return loaded;
}

/** Test knobs the real agent would not have. */
export interface AgentManagerTuning {
  startupTimeoutMs?: number;
}

/** The agent's manager.ts after the switch: a subclass of the native MCPManager (W1). */
export class AgentManager extends MCPManager<MyTool> {
  /** An instance field with an initializer (W1). */
  readonly discoverCalls: MCPDiscoverOptions[] = [];
  /** Everything the manager logged through the agent's logger. */
  readonly logged: LogEntry[];
  /** Every result of the agent's config discovery, in order. */
  readonly loaded: MCPLoadedConfigs[];

  constructor(cwd: string, readonly cache: MemoryToolCache, tuning: AgentManagerTuning = {}) {
    // Code before super() may not touch `this`: the callbacks share these arrays instead.
    const logged: LogEntry[] = [];
    const loaded: MCPLoadedConfigs[] = [];
    const log = (level: LogEntry["level"]) => (message: string, context?: Record<string, unknown>) => {
      logged.push({ level, message, context });
    };
    const logger: MCPLogger = { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
    const toolFactory: MCPToolFactory<MyTool> = {
      live: (connection, tools) =>
        tools.map((definition) => new MyTool(connection.name, definition, false, async () => connection, connection._source)),
      deferred: (serverName, tools, getConnection, source) =>
        tools.map((definition) => new MyTool(serverName, definition, true, getConnection, source)),
    };
    super(cwd, cache, {
      // The agent at v12 (A39/A40).
      compat: "v12",
      toolFactory,
      logger,
      loadConfigs: async (dir, options) => {
        const result = await loadAgentConfigs(dir, options);
        loaded.push(result);
        return result;
      },
      startupTimeoutMs: tuning.startupTimeoutMs ?? 250,
    });
    this.logged = logged;
    this.loaded = loaded;
  }

  /** The agent's override: records the call, then the package's discovery does the work. */
  override async discoverAndConnect(options?: MCPDiscoverOptions): Promise<MCPLoadResult<MyTool>> {
    this.discoverCalls.push(options ?? {});
    return super.discoverAndConnect(options);
  }

  /** A helper the agent adds on top: the tools of one server. */
  toolsOf(serverName: string): MyTool[] {
    return this.getTools().filter((tool) => tool.serverName === serverName);
  }
}

/** W9: `callMCP<T>` with a logger, as the agent's web-search code uses it. */
export async function listToolsOnce(url: string, logger: MCPLogger): Promise<JsonRpcResponse<{ tools: MCPToolDefinition[] }>> {
  return callMCP<{ tools: MCPToolDefinition[] }>(url, "tools/list", {}, { logger });
}

// ---- Type-level assertions (W2): checked by tsc, no runtime effect. ----
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}
assertType<Equals<ReturnType<AgentManager["getTools"]>, MyTool[]>>();
assertType<Equals<Awaited<ReturnType<AgentManager["connectServers"]>>["tools"], MyTool[]>>();
assertType<Equals<Awaited<ReturnType<AgentManager["discoverAndConnect"]>>, MCPLoadResult<MyTool>>>();
assertType<Equals<Awaited<ReturnType<typeof listToolsOnce>>["result"], { tools: MCPToolDefinition[] } | undefined>>();

/** Compile-time only: the agent's call sites type-check without casts. */
export async function agentCallSites(manager: AgentManager): Promise<string[]> {
  const tools: MyTool[] = manager.getTools();
  const result: MCPLoadResult<MyTool> = await manager.discoverAndConnect({ enableProjectConfig: true, filterExa: true });
  const first: MyTool | undefined = result.tools[0];
  const connection: MCPServerConnection = await manager.waitForConnection("server");
  const source: SourceMeta | undefined = connection._source ?? manager.getSource("server");
  connection.tools = undefined; // W3: writable
  manager.setAuthStorage({ get: async (id: string) => ({ type: "oauth", access: id }) });
  const error: string | undefined = result.errors.get("server");
  return [...tools.map((t) => t.name), first?.name ?? "", source?.level ?? "", error ?? ""];
}
