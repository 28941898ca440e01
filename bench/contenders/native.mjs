// mcp-native's own transports.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createStdioTransport, createHttpTransport } = require("../../index.js");

export async function open({ server, url }) {
  const transport = url
    ? await createHttpTransport({ type: "http", url, timeout: 0, maxMessageBytes: 64 << 20 })
    : await createStdioTransport({ command: server, args: ["stdio"], timeout: 0, maxMessageBytes: 64 << 20 });
  await transport.request("initialize", {
    protocolVersion: "2025-03-26",
    capabilities: {},
    clientInfo: { name: "bench-native", version: "1" },
  });
  await transport.notify("notifications/initialized");
  return {
    call: (name, args) => transport.request("tools/call", { name, arguments: args }),
    onNotification: (handler) => {
      transport.onNotification = handler;
    },
    close: () => transport.close(),
  };
}
