// src/mcp/client.ts of the agent at 18.3.4, after the switch (A47).
export {
  MCPConnectionTimeoutError,
  callTool,
  connectToServer,
  disconnectServer,
  getPrompt,
  listPrompts,
  listResourceTemplates,
  listResources,
  listTools,
  readResource,
  serverSupportsPrompts,
  serverSupportsResourceSubscriptions,
  serverSupportsResources,
  serverSupportsTools,
  subscribeToResources,
  unsubscribeFromResources,
} from "mcp-native";
