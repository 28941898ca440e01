// src/mcp/json-rpc.ts of the agent at 18.3.4, after the switch (A52–A54).
export { callMCP, readMcpJsonRpcResponse, redactUrlForLog, type CallMcpOptions } from "mcp-native";
