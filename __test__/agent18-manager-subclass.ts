// SPEC-AGENT18 A39: the v18 agent's `manager.ts` as it becomes after the switch to mcp-native —
// a short subclass of MCPManager. The agent keeps (A38) its tool bridge, its AuthStorage and
// credential refresh, its config discovery, its logger and value resolution, and its
// `timeout.ts`; the manager reaches its `client` module through `clientApi`, looked up at each
// call. Used by __test__/agent18-manager-subclass.test.ts (Vitest on Node) and
// __test__/bun/agent18-manager-subclass.bun.test.ts (bun test), and type-checked by
// `tsc -p __test__/types/tsconfig.json`.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  MCPManager,
  createMCPToolName,
  setGeneratedHeader,
  setTimeoutResolver,
  type MCPAuthChallenge,
  type MCPClientApi,
  type MCPConfigFile,
  type MCPDiscoverOptions as NativeMCPDiscoverOptions,
  type MCPLoadResult as NativeMCPLoadResult,
  type MCPLoadedConfigs,
  type MCPLogger,
  type MCPReconnect,
  type MCPServerConfig,
  type MCPServerConnection,
  type MCPToolCache,
  type MCPToolCallResult,
  type MCPToolDefinition,
  type MCPToolFactory,
  type McpConnectionStatusEvent,
  type SourceMeta,
} from "../index.js";
import * as client from "./agent18-client";

// A30, re-exported for the agent's other modules.
export {
  resolveSubscriptionPostAction,
  sortMCPToolsByName,
  type MCPAuthHandler,
  type McpConnectionStatusEvent,
} from "../index.js";

// ---- timeout.ts and its shim (A9) ----

/**
 * The agent's `resolveMCPTimeoutMs`: `OMP_MCP_TIMEOUT_MS` (a non-negative integer; `0` = no
 * timeout) wins over every server's `timeout`; an invalid value is ignored; then the
 * server's `timeout`, then 30 s.
 */
export function resolveMCPTimeoutMs(configTimeout?: number): number {
  const raw = process.env.OMP_MCP_TIMEOUT_MS?.trim();
  if (raw) {
    const fromEnv = Number(raw);
    if (Number.isInteger(fromEnv) && fromEnv >= 0) return fromEnv;
  }
  if (typeof configTimeout === "number" && Number.isFinite(configTimeout) && configTimeout >= 0) return configTimeout;
  return 30_000;
}

// The shim: every transport of the process reads its timeouts through the agent's rule.
setTimeoutResolver(resolveMCPTimeoutMs);

// ---- tool-bridge.ts (stays in the agent) ----

const MAX_TOOL_NAME = 64;

/**
 * A33: `mcp__<server>_<tool>` from the sanitized parts `createMCPToolName` makes; a name over
 * 64 characters keeps its first 55, then `_` and 8 base-36 characters of a stable hash.
 */
export function agentToolName(serverName: string, toolName: string): string {
  const name = `mcp__${createMCPToolName(serverName, toolName).slice("mcp_".length)}`;
  if (name.length <= MAX_TOOL_NAME) return name;
  const hash = createHash("sha256").update(name).digest().readBigUInt64BE(0).toString(36).slice(0, 8);
  return `${name.slice(0, MAX_TOOL_NAME - hash.length - 1)}_${hash}`;
}

/** A1: the challenge a tool result carries in `_meta["mcp/www_authenticate"]`, if any. */
export function authChallengeOf(result: MCPToolCallResult): MCPAuthChallenge | undefined {
  const values = result._meta?.["mcp/www_authenticate"];
  if (!Array.isArray(values) || values.length === 0) return undefined;
  return { wwwAuthenticate: values.filter((v): v is string => typeof v === "string") };
}

/** The agent's tool object (its MCPTool / DeferredMCPTool). */
export class AgentMCPTool {
  readonly name: string;
  readonly label: string;
  readonly description: string;
  readonly parameters: MCPToolDefinition["inputSchema"];

  constructor(
    readonly mcpServerName: string,
    readonly definition: MCPToolDefinition,
    readonly deferred: boolean,
    private readonly connection: () => Promise<MCPServerConnection>,
    /** A33: `this.reconnectServer(server, options)` of the manager that made the tool. */
    readonly reconnect: MCPReconnect | undefined,
    readonly source?: SourceMeta,
  ) {
    this.name = agentToolName(mcpServerName, definition.name);
    this.label = `${mcpServerName}/${definition.name}`;
    this.description = definition.description ?? "";
    this.parameters = definition.inputSchema;
  }

  get mcpToolName(): string {
    return this.definition.name;
  }

  /** Calls the tool; on an auth challenge, reconnects with it (A34) and calls once more. */
  async execute(args: Record<string, unknown> = {}, signal?: AbortSignal): Promise<MCPToolCallResult> {
    const connection = await this.connection();
    const result = await client.callTool(connection, this.definition.name, args, { signal });
    const challenge = authChallengeOf(result);
    if (!challenge || !this.reconnect) return result;
    const fresh = await this.reconnect({ authChallenge: challenge });
    return fresh ? client.callTool(fresh, this.definition.name, args, { signal }) : result;
  }
}

const toolFactory: MCPToolFactory<AgentMCPTool> = {
  live: (connection, tools, reconnect) =>
    tools.map((t) => new AgentMCPTool(connection.name, t, false, async () => connection, reconnect, connection._source)),
  deferred: (serverName, tools, getConnection, source, reconnect) =>
    tools.map((t) => new AgentMCPTool(serverName, t, true, getConnection, reconnect, source)),
};

// ---- config discovery (stays in the agent) ----

/** Where the agent's project servers live: `<cwd>/.omp/mcp.json`. */
export const agentMCPConfigPath = (cwd: string) => join(cwd, ".omp", "mcp.json");

/** Server names `filterBrowser` leaves out (the agent has a browser tool of its own). */
const BROWSER_SERVERS = new Set(["browser", "playwright", "puppeteer"]);

/** The agent's `MCPDiscoverOptions`. */
export type MCPDiscoverOptions = {
  enableProjectConfig?: boolean;
  filterExa?: boolean;
  filterBrowser?: boolean;
  onConnecting?: (serverNames: string[]) => void;
  onStatus?: (event: McpConnectionStatusEvent) => void;
};

/** The agent's `MCPLoadResult`. */
export type MCPLoadResult = NativeMCPLoadResult<AgentMCPTool>;

/**
 * The agent's `loadAllMCPConfigs` (W4 + `filterBrowser`): `mcpServers` of
 * `<cwd>/.omp/mcp.json`, minus `disabledServers` and `enabled: false` (unless listed in
 * `enabledServers`); `filterExa` (default on) moves `exa` out, keeping its `EXA_API_KEY`;
 * `filterBrowser` drops browser servers. A missing file is no servers; a bad one rejects.
 */
export async function loadAgentMCPConfigs(cwd: string, options: MCPDiscoverOptions): Promise<MCPLoadedConfigs> {
  const path = agentMCPConfigPath(cwd);
  const loaded: MCPLoadedConfigs = { configs: {}, sources: {}, exaApiKeys: [] };
  if (options.enableProjectConfig === false) return loaded;
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return loaded;
    throw error;
  }
  const file = JSON.parse(text) as MCPConfigFile;
  const disabled = new Set(file.disabledServers ?? []);
  const enabled = new Set(file.enabledServers ?? []);
  for (const [name, config] of Object.entries(file.mcpServers ?? {})) {
    if (disabled.has(name) || (config.enabled === false && !enabled.has(name))) continue;
    if (options.filterBrowser && BROWSER_SERVERS.has(name)) continue;
    if (options.filterExa !== false && name === "exa") {
      const key = "env" in config ? config.env?.EXA_API_KEY : undefined;
      if (key) loaded.exaApiKeys!.push(key);
      continue;
    }
    loaded.configs[name] = config;
    loaded.sources[name] = { provider: "omp", providerName: "OMP", path, level: "project" };
  }
  return loaded;
}

/** The agent's `resolveConfigValue`: `!command` → its trimmed output; else the environment
 * variable of that name; else the value itself. */
export function resolveConfigValue(value: string): Promise<string | undefined> {
  if (!value.startsWith("!")) return Promise.resolve(process.env[value] || value);
  return new Promise((resolve) => {
    execFile("sh", ["-c", value.slice(1)], { timeout: 10_000 }, (error, stdout) => {
      resolve(error ? undefined : stdout.trim() || undefined);
    });
  });
}

// ---- AuthStorage (stays in the agent) ----

/** What the agent's AuthStorage keeps for an MCP server's OAuth credential. */
export interface StoredMCPCredential {
  type: "oauth";
  access: string;
  refresh?: string;
  /** ms since the epoch. */
  expires?: number;
}

/** The agent's AuthStorage, in memory. */
export class AgentAuthStorage {
  readonly #entries = new Map<string, StoredMCPCredential>();
  get(credentialId: string): StoredMCPCredential | undefined {
    return this.#entries.get(credentialId);
  }
  set(credentialId: string, credential: StoredMCPCredential): void {
    this.#entries.set(credentialId, credential);
  }
  remove(credentialId: string): void {
    this.#entries.delete(credentialId);
  }
}

/** The OAuth token refresh (RFC 6749 §6) at `auth.tokenUrl`. */
async function refreshAccessToken(
  auth: NonNullable<MCPServerConfig["auth"]>,
  refreshToken: string,
): Promise<StoredMCPCredential> {
  const form = new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken });
  if (auth.clientId) form.set("client_id", auth.clientId);
  if (auth.clientSecret) form.set("client_secret", auth.clientSecret);
  if (auth.resource) form.set("resource", auth.resource);
  const response = await fetch(auth.tokenUrl!, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: form,
  });
  if (!response.ok) throw new Error(`Token refresh failed: HTTP ${response.status}`);
  const body = (await response.json()) as { access_token?: string; refresh_token?: string; expires_in?: number };
  if (!body.access_token) throw new Error("Token refresh failed: no access_token");
  return {
    type: "oauth",
    access: body.access_token,
    refresh: body.refresh_token ?? refreshToken,
    expires: body.expires_in ? Date.now() + body.expires_in * 1000 : undefined,
  };
}

/** A copy of `config` carrying `access`: `Authorization: Bearer …` set by
 * `setGeneratedHeader` (so a configured `authorization` of any case is replaced), or, for
 * stdio, `OAUTH_ACCESS_TOKEN`. */
function withCredential(config: MCPServerConfig, access: string): MCPServerConfig {
  if (config.type === "http" || config.type === "sse") {
    const headers = { ...config.headers };
    setGeneratedHeader(headers, "Authorization", `Bearer ${access}`);
    return { ...config, headers };
  }
  return { ...config, env: { ...config.env, OAUTH_ACCESS_TOKEN: access } };
}

// ---- manager.ts ----

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  message: string;
  context?: Record<string, unknown>;
}

/** The `clientApi` seam (A38): every function looked up on the client module when called. */
function clientModuleApi(): MCPClientApi {
  return {
    connectToServer: (name, config, options) => client.connectToServer(name, config, options),
    disconnectServer: (connection) => client.disconnectServer(connection),
    listTools: (connection, options) => client.listTools(connection, options),
    listResources: (connection, options) => client.listResources(connection, options),
    listResourceTemplates: (connection, options) => client.listResourceTemplates(connection, options),
    listPrompts: (connection, options) => client.listPrompts(connection, options),
    readResource: (connection, uri, options) => client.readResource(connection, uri, options),
    getPrompt: (connection, name, args, options) => client.getPrompt(connection, name, args, options),
    subscribeToResources: (connection, uris, options) => client.subscribeToResources(connection, uris, options),
    unsubscribeFromResources: (connection, uris, options) => client.unsubscribeFromResources(connection, uris, options),
  };
}

/** A39: the v18 agent's manager. */
export class AgentMCPManager extends MCPManager<AgentMCPTool> {
  /** The agent's credentials (A38: AuthStorage stays in the agent). */
  readonly authStorage = new AgentAuthStorage();
  /** Every `resolveCredentials` call: which credential, forced or not, refreshed or not. */
  readonly credentialCalls: Array<{ credentialId: string; forceRefresh: boolean; refreshed: boolean }> = [];
  /** Every `this.reconnectServer` call the manager (or a tool) made. */
  readonly reconnects: Array<{ name: string; options?: { manual?: boolean; authChallenge?: MCPAuthChallenge } }> = [];
  /** Everything logged through the agent's logger. */
  readonly logged: LogEntry[];
  /** What the agent's config discovery was asked. */
  readonly discoverCalls: MCPDiscoverOptions[];
  readonly #refreshing = new Map<string, Promise<StoredMCPCredential>>();

  constructor(cwd: string, toolCache: MCPToolCache | null = null) {
    // Code before super() may not touch `this`: the callbacks share these arrays.
    const logged: LogEntry[] = [];
    const discoverCalls: MCPDiscoverOptions[] = [];
    const log = (level: LogEntry["level"]) => (message: string, context?: Record<string, unknown>) => {
      logged.push({ level, message, context });
    };
    const logger: MCPLogger = { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
    super(cwd, toolCache, {
      compat: "v18",
      toolFactory,
      loadConfigs: (dir: string, options: NativeMCPDiscoverOptions) => {
        discoverCalls.push(options);
        return loadAgentMCPConfigs(dir, options);
      },
      resolveConfigValue,
      logger,
      clientApi: clientModuleApi(),
    });
    this.logged = logged;
    this.discoverCalls = discoverCalls;
  }

  /** A37: the credential from the agent's AuthStorage, refreshed when expired or forced,
   * as `Authorization: Bearer …` (replacing any spelling of it) or `OAUTH_ACCESS_TOKEN`. */
  override async resolveCredentials<T extends MCPServerConfig>(config: T, options?: { forceRefresh?: boolean }): Promise<T> {
    const credentialId = config.auth?.type === "oauth" ? config.auth.credentialId : undefined;
    const stored = credentialId ? this.authStorage.get(credentialId) : undefined;
    if (!credentialId || !stored) return config;
    const forceRefresh = options?.forceRefresh === true;
    const expired = stored.expires !== undefined && stored.expires <= Date.now();
    let credential = stored;
    let refreshed = false;
    if ((forceRefresh || expired) && this.#canRefresh(config, stored)) {
      try {
        credential = await this.#refresh(credentialId, config, stored);
        refreshed = true;
      } catch (error) {
        this.logged.push({ level: "warn", message: `MCP credential refresh failed: ${(error as Error).message}` });
        if (forceRefresh) throw error;
      }
    }
    this.credentialCalls.push({ credentialId, forceRefresh, refreshed });
    return withCredential(config, credential.access) as T;
  }

  /** A37: a 401 can be answered by a refresh when the stored credential has a refresh
   * token and the config names a token endpoint. */
  override hasRefreshableCredential(config: MCPServerConfig): boolean {
    const credentialId = config.auth?.type === "oauth" ? config.auth.credentialId : undefined;
    const stored = credentialId ? this.authStorage.get(credentialId) : undefined;
    return stored !== undefined && this.#canRefresh(config, stored);
  }

  /** W1/A34: every reconnect passes through here (the agent's UI hears of it). */
  override reconnectServer(
    name: string,
    options?: { manual?: boolean; authChallenge?: MCPAuthChallenge },
  ): Promise<MCPServerConnection | null> {
    this.reconnects.push(options === undefined ? { name } : { name, options });
    return super.reconnectServer(name, options);
  }

  /** A helper the agent has: the tools of one server. */
  toolsOf(serverName: string): AgentMCPTool[] {
    return this.getTools().filter((tool) => tool.mcpServerName === serverName);
  }

  #canRefresh(config: MCPServerConfig, stored: StoredMCPCredential): boolean {
    return Boolean(stored.refresh && config.auth?.tokenUrl);
  }

  /** One refresh per credential at a time; the new credential is stored. */
  #refresh(credentialId: string, config: MCPServerConfig, stored: StoredMCPCredential): Promise<StoredMCPCredential> {
    let pending = this.#refreshing.get(credentialId);
    if (!pending) {
      pending = refreshAccessToken(config.auth!, stored.refresh!)
        .then((credential) => {
          this.authStorage.set(credentialId, credential);
          return credential;
        })
        .finally(() => this.#refreshing.delete(credentialId));
      this.#refreshing.set(credentialId, pending);
    }
    return pending;
  }
}

/** The agent's `createMCPManager`: a manager, then `discoverAndConnect(options)`. */
export async function createMCPManager(
  cwd: string,
  options: MCPDiscoverOptions & { toolCache?: MCPToolCache | null } = {},
): Promise<{ manager: AgentMCPManager; result: MCPLoadResult }> {
  const { toolCache = null, ...discover } = options;
  const manager = new AgentMCPManager(cwd, toolCache);
  const result = await manager.discoverAndConnect(discover);
  return { manager, result };
}

// ---- Type-level assertions: checked by tsc, no runtime effect. ----
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}
assertType<Equals<ReturnType<AgentMCPManager["getTools"]>, AgentMCPTool[]>>();
assertType<Equals<Awaited<ReturnType<AgentMCPManager["connectServers"]>>, MCPLoadResult>>();
assertType<Equals<Awaited<ReturnType<typeof createMCPManager>>["result"]["tools"], AgentMCPTool[]>>();
assertType<Equals<Awaited<ReturnType<AgentMCPManager["reconnectServer"]>>, MCPServerConnection | null>>();
// A63: the slot reads as the class it is asked on.
export function instanceSlot() {
  const slot = AgentMCPManager.instance();
  assertType<Equals<typeof slot, AgentMCPManager | undefined>>();
  return slot;
}

/** Compile-time only: the agent's call sites type-check without casts. */
export async function agentCallSites(manager: AgentMCPManager, configs: Record<string, MCPServerConfig>): Promise<string[]> {
  const statuses: string[] = [];
  const result: MCPLoadResult = await manager.connectServers(configs, {}, (event: McpConnectionStatusEvent) => {
    statuses.push(event.type === "connecting" ? event.serverNames.join(",") : event.serverName);
  });
  manager.setOnToolsChanged((tools: AgentMCPTool[]) => void tools.map((t) => t.name));
  const stop: () => void = manager.addNotificationListener((server: string, method: string) => void `${server}${method}`);
  stop();
  const again: MCPServerConnection | null = await manager.reconnectServer("s", { manual: true });
  const viaTool: MCPServerConnection | null | undefined = await result.tools[0]?.reconnect?.();
  const catalog = manager.getServerResources("s");
  return [...statuses, again?.name ?? "", viaTool?.name ?? "", String(catalog?.resources.length ?? 0)];
}
