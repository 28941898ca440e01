// src/mcp/transports/index.ts of the agent at 18.3.4: kept as it is.

export * from "./http";
export * from "./sse";
export * from "./stdio";
