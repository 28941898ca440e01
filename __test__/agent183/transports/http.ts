// src/mcp/transports/http.ts of the agent at 18.3.4, after the switch (A50).
export { HttpTransport, createHttpTransport, resolveSSEConnectTimeoutMs } from "mcp-native";
