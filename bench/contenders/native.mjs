// mcp-native's own transports.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { connectToServer, createStdioTransport, createHttpTransport } = require("../../index.js");

export async function open({ server, url, stateless }) {
  if (stateless) {
    // 2026-07-28: server/discover, then every request carries the _meta envelope and the
    // SEP-2243 headers.
    const config = { type: "http", url, timeout: 0, maxMessageBytes: 64 << 20 };
    const { transport } = await connectToServer("bench", config, { client: { protocolVersion: "2026-07-28" } });
    return wrap(transport);
  }
  const transport = url
    ? await createHttpTransport({ type: "http", url, timeout: 0, maxMessageBytes: 64 << 20 })
    : await createStdioTransport({ command: server, args: ["stdio"], timeout: 0, maxMessageBytes: 64 << 20 });
  await transport.request("initialize", {
    protocolVersion: "2025-03-26",
    capabilities: {},
    clientInfo: { name: "bench-native", version: "1" },
  });
  await transport.notify("notifications/initialized");
  return wrap(transport);
}

function wrap(transport) {
  return {
    call: (name, args) => transport.request("tools/call", { name, arguments: args }),
    onNotification: (handler) => {
      transport.onNotification = handler;
    },
    close: () => transport.close(),
  };
}
