// src/mcp/transports/stdio.ts of the agent at 18.3.4, after the switch (A49).
export {
  StdioTransport,
  createStdioTransport,
  resolveStdioSpawnCommand,
  terminateStdioProcess,
  writeFrame,
  type ResolveStdioSpawnOptions,
  type StdioSpawnCommand,
} from "mcp-native";
