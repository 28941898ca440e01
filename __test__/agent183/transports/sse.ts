// src/mcp/transports/sse.ts of the agent at 18.3.4, after the switch (A47, A48).
export { LegacySseConnectionTimeoutError, LegacySseTransport, createSseTransport } from "mcp-native";
