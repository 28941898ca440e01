// SPEC-AGENT18: what the v18 agent's modules use of mcp-native so far, as they write it.
// Compiled, never run.
import {
  MCPManager,
  MCP_CONFIG_SCHEMA_URL,
  MCP_PROTOCOL_VERSION,
  callMCP,
  getPrompt,
  listPrompts,
  listResources,
  listResourceTemplates,
  readResource,
  serverSupportsPrompts,
  serverSupportsResources,
  serverSupportsResourceSubscriptions,
  subscribeToResources,
  unsubscribeFromResources,
  mergeMCPHeaders,
  redactUrlForLog,
  resolveSSEConnectTimeoutMs,
  resolveSubscriptionPostAction,
  setGeneratedHeader,
  sortMCPToolsByName,
  withoutHeader,
  writeFrame,
  type CallMcpOptions,
  type MCPReconnect,
  type HttpTransport,
  type MCPAuthChallenge,
  type MCPConfigFile,
  type MCPGetPromptParams,
  type MCPPromptMessage,
  type MCPRequestIdFormat,
  type MCPResourceReadResult,
  type MCPResourcesListResult,
  type MCPServerConnection,
  type MCPStdioServerConfig,
  type MCPToolCallResult,
  type MCPToolDefinition,
  type MCPTransport,
  type MCPHttpServerConfig,
  type MCPSseServerConfig,
  type MCPFetchInit,
  mcpFetch,
} from "../../index.js";

export async function helpers(url: string, signal: AbortSignal, tools: MCPToolDefinition[]) {
  const options: CallMcpOptions = { signal, logger: { error: (message) => void message } };
  const envelope = await callMCP<{ tools: MCPToolDefinition[] }>(url, "tools/list", {}, options);
  const listed: MCPToolDefinition[] = sortMCPToolsByName(envelope.result?.tools ?? tools);
  const action: "rollback" | "ignore" | "apply" = resolveSubscriptionPostAction(true, 2, 2);
  const headers = mergeMCPHeaders({ generated: { Accept: "application/json" }, configured: { "X-Team": "a" } });
  setGeneratedHeader(headers, "Authorization", "Bearer token");
  const trimmed: Record<string, string> | undefined = withoutHeader(headers as Record<string, string> | undefined, "accept");
  const wrote: boolean = writeFrame({ write: (chunk: string) => chunk.length, flush: () => undefined }, "{}\n");
  const wait: number = resolveSSEConnectTimeoutMs(30_000);
  return { listed, action, trimmed, wrote, wait, logged: redactUrlForLog(url) };
}

// A2: the v18 fields, each where the agent writes it.
export function types(connection: MCPServerConnection, transport: MCPTransport) {
  const format: MCPRequestIdFormat = "string";
  const config: MCPStdioServerConfig = { command: "srv", requestIdFormat: format, envPolicy: "literal", auth: { type: "oauth", tokenUrl: "https://a/token", clientId: "c" } };
  const file: MCPConfigFile = { $schema: "x", mcpServers: { srv: config }, enabledServers: ["srv"] };
  // A41/A42: the agent's own fields, on every server type, read as the agent reads them.
  const agentOAuth = { clientId: "c", clientSecret: "s", redirectUri: "http://127.0.0.1:1/cb", callbackPort: 8765, callbackPath: "/cb", prompt: "" };
  const quiet: MCPStdioServerConfig = { command: "srv", instructions: false, oauth: agentOAuth };
  const port: number | undefined = quiet.oauth?.callbackPort;
  const path: string | undefined = quiet.oauth?.callbackPath;
  const prompt: string | undefined = quiet.oauth?.prompt;
  void [port, path, prompt];
  const challenge: MCPAuthChallenge = { wwwAuthenticate: ["Bearer"] };
  const read: MCPResourceReadResult = { contents: [{ uri: "file:///a", text: "a" }] };
  const page: MCPResourcesListResult = { resources: connection.resources ?? [], nextCursor: undefined };
  const message: MCPPromptMessage = { role: "user", content: [{ type: "text", text: "hi" }] };
  const params: MCPGetPromptParams = { name: "p", arguments: { who: "x" } };
  transport.setProtocolVersion?.("2025-11-25");
  transport.onRequest = async (method: string) => (method === "ping" ? {} : undefined);
  const prompts = connection.prompts?.map((p) => p.name) ?? [];
  const http: MCPHttpServerConfig = { type: "http", url: "https://a/mcp", headerPolicy: "origin-locked", requestIdFormat: "number" };
  const sse: MCPSseServerConfig = { type: "sse", url: "https://a/sse", headerPolicy: "origin-locked" };
  const result: MCPToolCallResult = { content: [], _meta: { trace: "t" } };
  const instructions: string | undefined = connection.instructions;
  return { file, challenge, read, page, message, params, prompts, templates: connection.resourceTemplates, http, sse, result, instructions };
}

// A24: the agent's transports fetch through mcpFetch.
export async function fetched(signal: AbortSignal): Promise<number> {
  const init: MCPFetchInit = { method: "POST", body: "{}", signal };
  const response: Response = await mcpFetch("https://a/mcp", init, { generated: { Accept: "application/json" }, configured: { "X-Team": "a" } }, true);
  return response.status;
}

export async function resources(connection: MCPServerConnection, logger: { warn?: (message: string) => void }) {
  if (!serverSupportsResources(connection.capabilities) || !serverSupportsPrompts(connection.capabilities)) return;
  const [listed, templates, prompts] = await Promise.all([listResources(connection), listResourceTemplates(connection), listPrompts(connection)]);
  const read: MCPResourceReadResult = await readResource(connection, listed[0].uri);
  const prompt = await getPrompt(connection, prompts[0].name, { who: "x" });
  if (serverSupportsResourceSubscriptions(connection.capabilities)) {
    await subscribeToResources(connection, [listed[0].uri], { logger });
    await unsubscribeFromResources(connection, [listed[0].uri]);
  }
  return { templates, read, prompt: prompt.messages.length };
}

export function negotiated(transport: HttpTransport, version: string) {
  transport.setProtocolVersion(version);
}

// A33/A34/A36: the v18 manager's reconnect seams as the agent's subclass and tool bridge use them.
interface BridgeTool {
  name: string;
  mcpServerName: string;
  reconnect?: MCPReconnect;
}
export class AgentManager extends MCPManager<BridgeTool> {
  constructor(cwd: string) {
    super(cwd, null, {
      compat: "v18",
      reconnect: false,
      toolFactory: {
        live: (connection, tools: MCPToolDefinition[], reconnect) =>
          tools.map((t) => ({ name: t.name, mcpServerName: connection.name, reconnect })),
        deferred: (serverName, tools, _getConnection, _source, reconnect) =>
          tools.map((t) => ({ name: t.name, mcpServerName: serverName, reconnect })),
      },
    });
    this.setAuthHandler(async (_server: string, _challenge: MCPAuthChallenge) => undefined);
    this.setOnToolsChanged(async (tools: BridgeTool[]) => void tools.length);
  }
  override async reconnectServer(name: string, options?: { manual?: boolean; authChallenge?: MCPAuthChallenge }) {
    const connection = await super.reconnectServer(name, options);
    return connection ? connection : null;
  }
}

// A44: the constants are typed as their values, as the agent declares them.
export const protocolVersion: "2025-11-25" = MCP_PROTOCOL_VERSION;
export const schemaUrl: "https://raw.githubusercontent.com/can1357/oh-my-pi/main/packages/coding-agent/src/config/mcp-schema.json" =
  MCP_CONFIG_SCHEMA_URL;
