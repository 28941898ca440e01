// The official TypeScript SDK's Client with its stdio and Streamable HTTP transports. Its
// stdio read buffer is raised from 10 MiB (which closes the connection on a 10 MiB
// message) to 64 MiB, the limit mcp-native uses.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export async function open({ server, serverArgs, url }) {
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: server, args: serverArgs, stderr: "ignore", maxBufferSize: 64 << 20 });
  const client = new Client({ name: "bench-sdk", version: "1" });
  await client.connect(transport);
  let handler = () => {};
  client.fallbackNotificationHandler = async (notification) => handler(notification.method, notification.params);
  return {
    call: (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 600_000 }),
    onNotification: (h) => {
      handler = h;
    },
    close: () => client.close(),
  };
}
