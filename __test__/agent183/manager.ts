// src/mcp/manager.ts of the agent at 18.3.4, after the switch: a short subclass (A55–A63).
// The agent keeps its tool bridge, AuthStorage and OAuth refresh, config discovery, logger,
// value resolution and timeout rule (A38); the manager's decisions are the package's.
// Type-checked inside the published agent by scripts/agent183-typecheck.mjs (A66).
import type { TSchema } from "@oh-my-pi/pi-ai";
import type { MCPToolDetails } from "@oh-my-pi/pi-tui/tools/mcp";
import { logger } from "@oh-my-pi/pi-utils";
import {
  MCPManager as NativeMCPManager,
  setGeneratedHeader,
  setTimeoutResolver,
  type MCPDiscoverOptions as NativeMCPDiscoverOptions,
  type MCPLoadResult as NativeMCPLoadResult,
  type MCPReconnectPolicy,
  type MCPServerConfig,
  type MCPToolCache,
  type McpConnectionStatusEvent,
  type SourceMeta,
} from "mcp-native";
import type { EffectiveExtensionRoots } from "../capability/types";
import { resolveConfigValue } from "../config/resolve-config-value";
import type { CustomTool } from "../extensibility/custom-tools/types";
import type { AuthStorage } from "../session/auth-storage";
import * as client from "./client";
import { type LoadMCPConfigsOptions, type LoadMCPConfigsResult, loadAllMCPConfigs } from "./config";
import { lookupMcpOAuthCredential, refreshStoredManagedMcpOAuthCredential } from "./oauth-credentials";
import { resolveMCPStartupTimeoutMs, resolveMCPTimeoutMs } from "./timeout";
import { DeferredMCPTool, MCPTool } from "./tool-bridge";

export {
  resolveSubscriptionPostAction,
  sortMCPToolsByName,
  type MCPAuthHandler,
  type McpCatalogChangeEvent,
  type MCPReconnectPolicy,
  type MCPStartupStatus,
} from "mcp-native";

export type MCPConfigLoader = (cwd: string, options?: LoadMCPConfigsOptions) => Promise<LoadMCPConfigsResult>;
export type MCPLoadResult = NativeMCPLoadResult<CustomTool<TSchema, MCPToolDetails>>;
export interface MCPDiscoverOptions extends NativeMCPDiscoverOptions {
  /** Session-local extension roots, handed to the agent's config discovery. */
  extensionRoots?: EffectiveExtensionRoots;
}

// Every transport of the process takes its timeouts from the agent's rule (OMP_MCP_TIMEOUT_MS).
setTimeoutResolver(resolveMCPTimeoutMs);

export class MCPManager extends NativeMCPManager<CustomTool<TSchema, MCPToolDetails>> {
  #authStorage: AuthStorage | null = null;

  constructor(
    cwd: string,
    toolCache: MCPToolCache | null = null,
    loadConfigs: MCPConfigLoader = loadAllMCPConfigs,
    reconnectPolicy?: MCPReconnectPolicy,
  ) {
    super(cwd, toolCache, {
      compat: "v18",
      reconnectPolicy,
      toolFactory: {
        live: (connection, tools, reconnect) => MCPTool.fromTools(connection, tools, reconnect),
        deferred: (serverName, tools, getConnection, source, reconnect) =>
          DeferredMCPTool.fromTools(serverName, tools, getConnection, source, reconnect),
      },
      loadConfigs: (dir, options) =>
        loadConfigs(dir, {
          enableProjectConfig: options.enableProjectConfig,
          filterExa: options.filterExa,
          filterBrowser: options.filterBrowser,
          extensionRoots: (options as MCPDiscoverOptions).extensionRoots,
        }),
      resolveConfigValue,
      logger,
      // Looked up on ./client at each call, so spies on that module see every call.
      clientApi: {
        connectToServer: (...args) => client.connectToServer(...args),
        disconnectServer: (...args) => client.disconnectServer(...args),
        listTools: (...args) => client.listTools(...args),
        listResources: (...args) => client.listResources(...args),
        listResourceTemplates: (...args) => client.listResourceTemplates(...args),
        listPrompts: (...args) => client.listPrompts(...args),
        readResource: (...args) => client.readResource(...args),
        getPrompt: (...args) => client.getPrompt(...args),
        subscribeToResources: (...args) => client.subscribeToResources(...args),
        unsubscribeFromResources: (...args) => client.unsubscribeFromResources(...args),
      },
    });
  }

  /** The startup window as the agent resolves it: OMP_MCP_STARTUP_TIMEOUT_MS, else the call's, else 250 ms. */
  override connectServers(
    configs: Record<string, MCPServerConfig>,
    sources: Record<string, SourceMeta>,
    onStatus?: (event: McpConnectionStatusEvent) => void,
    startupTimeoutMs?: number,
  ): Promise<MCPLoadResult> {
    return super.connectServers(configs, sources, onStatus, resolveMCPStartupTimeoutMs(startupTimeoutMs));
  }

  override setAuthStorage(authStorage: AuthStorage): void {
    this.#authStorage = authStorage;
  }

  /** The stored OAuth credential, refreshed when forced or about to expire. */
  override async resolveCredentials<T extends MCPServerConfig>(config: T, options?: { forceRefresh?: boolean }): Promise<T> {
    const lookup = lookupMcpOAuthCredential(this.#authStorage, config);
    if (!lookup || !this.#authStorage) return config;
    const { credentialId } = lookup;
    try {
      const refreshed = await refreshStoredManagedMcpOAuthCredential(this.#authStorage, credentialId, {
        serverUrl: config.type === "http" || config.type === "sse" ? config.url : undefined,
        auth: config.auth,
        forceRefresh: options?.forceRefresh,
        keepCredentialOnRefreshFailure: true,
        onRefreshFailure: (error: unknown) => logger.warn("MCP OAuth refresh failed, using existing token", { credentialId, error }),
      });
      const credential = refreshed.credential;
      if (!credential) return config;
      if (config.type === "http" || config.type === "sse") {
        const headers = { ...config.headers };
        setGeneratedHeader(headers, "Authorization", `Bearer ${credential.access}`);
        return { ...config, headers };
      }
      return { ...config, env: { ...config.env, OAUTH_ACCESS_TOKEN: credential.access } };
    } catch (error) {
      logger.warn("Failed to resolve OAuth credential", { credentialId, error });
      return config;
    }
  }

  /** Whether a 401 can be answered by a refresh. */
  override hasRefreshableCredential(config: MCPServerConfig): boolean {
    const credential: object | undefined = lookupMcpOAuthCredential(this.#authStorage, config)?.credential;
    return credential !== undefined && "refresh" in credential && Boolean(credential.refresh);
  }
}

/** A manager, then `discoverAndConnect(options)`. */
export async function createMCPManager(
  cwd: string,
  options?: MCPDiscoverOptions,
): Promise<{ manager: MCPManager; result: MCPLoadResult }> {
  const manager = new MCPManager(cwd);
  const result = await manager.discoverAndConnect(options);
  return { manager, result };
}
