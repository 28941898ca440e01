// Compiled with `tsc --noEmit` by the test command: uses every export the way the agent's
// code does, so a change to index.d.ts that would break the agent fails the build.
import {
  HttpTransport,
  MCPClient,
  StdioTransport,
  callMCP,
  callTool,
  connectToServer,
  createHttpTransport,
  createStdioTransport,
  createTransport,
  disconnectServer,
  listTools,
  parseSSE,
  serverSupportsTools,
  type JsonRpcError,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type MCPClientCapabilities,
  type MCPConfigFile,
  type MCPContent,
  type MCPHttpServerConfig,
  type MCPImageContent,
  type MCPImplementation,
  type MCPInitializeParams,
  type MCPInitializeResult,
  type MCPRequestOptions,
  type MCPResourceContent,
  type MCPServerCapabilities,
  type MCPServerConfig,
  type MCPServerConnection,
  type MCPSseServerConfig,
  type MCPStdioServerConfig,
  type MCPTextContent,
  type MCPToolCallParams,
  type MCPToolCallResult,
  type MCPToolDefinition,
  type MCPToolsListResult,
  type MCPToolWithServer,
  type MCPTransport,
  type TransportFactory,
} from "../../index.js";

// The agent's own transport class implementing the interface (C5).
class RecordingTransport implements MCPTransport {
  connected = true;
  onClose?: () => void;
  onError?: (error: Error) => void;
  onNotification?: (method: string, params: unknown) => void;
  readonly sent: JsonRpcMessage[] = [];
  async request<T = unknown>(method: string, params?: Record<string, unknown>, _options?: MCPRequestOptions): Promise<T> {
    const message: JsonRpcRequest = { jsonrpc: "2.0", id: this.sent.length, method, params };
    this.sent.push(message);
    return {} as T;
  }
  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    const message: JsonRpcNotification = { jsonrpc: "2.0", method, params };
    this.sent.push(message);
  }
  async close(): Promise<void> {
    this.connected = false;
    this.onClose?.();
  }
}

const stdioConfig: MCPStdioServerConfig = { command: "node", args: ["server.js"], env: { A: "1" }, cwd: "/tmp", timeout: 0 };
const httpConfig: MCPHttpServerConfig = { type: "http", url: "http://127.0.0.1:3000/mcp", headers: { Authorization: "Bearer x" } };
const sseConfig: MCPSseServerConfig = { type: "sse", url: "http://127.0.0.1:3000/sse", auth: { type: "oauth", credentialId: "c" } };
const configs: MCPServerConfig[] = [stdioConfig, httpConfig, sseConfig, { type: "stdio", command: "x", enabled: false }];
const file: MCPConfigFile = { mcpServers: { local: stdioConfig, remote: httpConfig } };

const factory: TransportFactory = createTransport;

async function agentFlows(signal: AbortSignal): Promise<void> {
  const stdio: StdioTransport = await createStdioTransport(stdioConfig);
  stdio.onNotification = (method, params) => console.log(method, params);
  stdio.onError = (error) => console.error(error.message);
  stdio.onClose = () => {};
  stdio.onClose = undefined;
  stdio.onStderr = (chunk: string) => process.stderr.write(chunk);
  stdio.onRequest = async (method) => (method === "roots/list" ? { roots: [] } : {});
  const asInterface: MCPTransport = stdio;
  const initResult = await asInterface.request<MCPInitializeResult>("initialize", {
    protocolVersion: "2025-03-26",
    capabilities: { roots: { listChanged: false } },
    clientInfo: { name: "agent", version: "1.0.0" },
  } satisfies MCPInitializeParams as unknown as Record<string, unknown>);
  const info: MCPImplementation = initResult.serverInfo;
  const caps: MCPServerCapabilities = initResult.capabilities;
  const pid: number | undefined = stdio.pid;
  await stdio.notify("notifications/initialized");
  await stdio.close();

  const http: HttpTransport = await createHttpTransport(httpConfig);
  const sessionId: string | null = http.sessionId;
  const url: string = http.url;
  void http.startSSEListener();
  await http.close();
  new HttpTransport(sseConfig);
  new StdioTransport(stdioConfig);

  const transport: MCPTransport = await factory(configs[0]);
  await transport.close();

  const connection: MCPServerConnection = await connectToServer("local", stdioConfig, { signal });
  const tools: MCPToolDefinition[] = await listTools(connection);
  const withServer: MCPToolWithServer[] = tools.map((t) => ({ ...t, serverName: connection.name }));
  const params: MCPToolCallParams = { name: tools[0].name, arguments: {} };
  const result: MCPToolCallResult = await callTool(connection, params.name, params.arguments, { signal });
  for (const content of result.content as MCPContent[]) {
    if (content.type === "text") console.log((content as MCPTextContent).text);
    if (content.type === "image") console.log((content as MCPImageContent).mimeType);
    if (content.type === "resource") console.log((content as MCPResourceContent).resource.uri);
  }
  if (serverSupportsTools(connection.capabilities)) await disconnectServer(connection);

  // A hand-made connection, as the agent's tests build them.
  const fake: MCPServerConnection = {
    name: "fake",
    config: stdioConfig,
    transport: new RecordingTransport(),
    serverInfo: { name: "fake", version: "0" },
    capabilities: { tools: {} },
  };
  fake.tools = await listTools(fake);
  await callTool(fake, "echo");

  const client = await MCPClient.connect("remote", httpConfig, { client: { clientInfo: info } });
  client.onNotification = (method) => console.log(method);
  await client.listTools();
  await client.callTool("echo", { text: "hi" });
  await client.ping();
  await client.listResources();
  await client.readResource("file:///x");
  await client.listResourceTemplates();
  await client.listPrompts();
  await client.getPrompt("p", { a: "b" });
  await client.complete({ type: "ref/prompt", name: "p" }, { name: "a", value: "b" });
  await client.setLoggingLevel("info");
  const wrapped = new MCPClient(client.connection);
  await wrapped.close();

  const envelope: JsonRpcResponse<{ tools: MCPToolDefinition[] }> = await callMCP<{ tools: MCPToolDefinition[] }>(url, "tools/list", {});
  const listed: MCPToolsListResult | undefined = envelope.result;
  const rpcError: JsonRpcError | undefined = envelope.error;
  const parsed: unknown = parseSSE("data: {}\n");
  const clientCaps: MCPClientCapabilities = { roots: { listChanged: false }, sampling: {} };
  console.log(file, withServer, caps, pid, sessionId, listed, rpcError, parsed, clientCaps);
}

void agentFlows;
