// src/mcp/transports/header-policy.ts of the agent at 18.3.4, after the switch.
export { mcpFetch, mergeMCPHeaders, setGeneratedHeader, withoutHeader, type MCPFetchInit } from "mcp-native";
