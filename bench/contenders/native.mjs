// mcp-native's own transports.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// MCP_NATIVE_BENCH_ADDON: another build's package directory (run.mjs --baseline), loaded
// through its own index.js as this one is, so that both pay the same loading (or a bare
// `.node`, for A/Bs of several builds that all load the same way).
const from = process.env.MCP_NATIVE_BENCH_ADDON ?? "../..";
const { connectToServer, createStdioTransport, createHttpTransport } = require(from.endsWith(".node") ? from : `${from}/index.js`);

// What a 2026-07-28 request adds to a handshake-era one: its envelope and routing headers.
const META = "io.modelcontextprotocol/";
const envelope = {
  [`${META}protocolVersion`]: "2026-07-28",
  [`${META}clientCapabilities`]: { roots: { listChanged: false } },
  [`${META}clientInfo`]: { name: "mcp-native", version: "0.1.0" },
};

export async function open({ server, serverArgs, url, ca, stateless, padded }) {
  if (stateless) {
    // 2026-07-28: server/discover, then every request carries the _meta envelope and the
    // SEP-2243 headers.
    const config = { type: "http", url, timeout: 0, maxMessageBytes: 64 << 20 };
    const { transport } = await connectToServer("bench", config, { client: { protocolVersion: "2026-07-28" } });
    return wrap(transport);
  }
  // `padded`: the handshake era carrying the same bytes, the baseline the era is held to.
  const headers = padded ? { "Mcp-Method": "tools/call", "Mcp-Name": "echo" } : undefined;
  const transport = url
    ? await createHttpTransport({ type: "http", url, headers, ca, timeout: 0, maxMessageBytes: 64 << 20 })
    : await createStdioTransport({ command: server, args: serverArgs, timeout: 0, maxMessageBytes: 64 << 20 });
  await transport.request("initialize", {
    protocolVersion: "2025-03-26",
    capabilities: {},
    clientInfo: { name: "bench-native", version: "1" },
  });
  await transport.notify("notifications/initialized");
  return wrap(transport, padded);
}

function wrap(transport, padded) {
  return {
    call: padded
      ? (name, args) => transport.request("tools/call", { _meta: envelope, name, arguments: args })
      : (name, args) => transport.request("tools/call", { name, arguments: args }),
    onNotification: (handler) => {
      transport.onNotification = handler;
    },
    close: () => transport.close(),
  };
}
