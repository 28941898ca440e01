// SPEC-AGENT18 §8 / A38: the v18 agent's `src/mcp/client.ts` after the switch: re-exports of
// mcp-native. `agent18-manager-subclass.ts` imports this module as a namespace and looks its
// functions up at each call, so a spy on this module (vi.spyOn / bun's spyOn) sees every
// client call the manager makes.
export {
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
} from "../index.js";
