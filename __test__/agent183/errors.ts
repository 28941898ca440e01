// src/mcp/errors.ts of the agent at 18.3.4, after the switch (A45).
export {
  MCPTransportError,
  createMCPJsonRpcError,
  formatMCPToolFailure,
  mcpTraceIdFromHeaders,
  normalizeMCPTransportError,
  type MCPFailureClass,
  type MCPFailureStage,
  type MCPTransportKind,
} from "mcp-native";
