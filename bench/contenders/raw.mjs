// The practical JS floor: spawn, write JSON lines, split stdout, JSON.parse, a Map of
// pending ids (over HTTP: fetch, then JSON or a parsed event stream).
import { spawn } from "node:child_process";

export async function open({ server, serverArgs, url, stateless }) {
  const client = url ? httpClient(url, stateless) : stdioClient(server, serverArgs);
  if (stateless) {
    await client.request("server/discover", {});
    return {
      call: (name, args) => client.request("tools/call", { name, arguments: args }),
      close: () => client.close(),
    };
  }
  await client.request("initialize", { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "bench-raw", version: "1" } });
  client.notify("notifications/initialized");
  return {
    call: (name, args) => client.request("tools/call", { name, arguments: args }),
    onNotification: (handler) => {
      client.notificationHandler = handler;
    },
    close: () => client.close(),
  };
}

function stdioClient(server, serverArgs) {
  const child = spawn(server, serverArgs, { stdio: ["pipe", "pipe", "ignore"] });
  const pending = new Map();
  let nextId = 1;
  const client = {
    notificationHandler: undefined,
    request(method, params) {
      const id = nextId++;
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    notify(method, params) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n");
    },
    close() {
      child.stdin.end();
      child.kill();
    },
  };
  // Chunks are kept as Buffers and only the new chunk is searched for a line end, so a
  // 10 MiB line costs one concat and one decode, not a rescan per chunk.
  let parts = [];
  const dispatch = (line) => {
    const message = JSON.parse(line);
    if (message.id !== undefined && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(message.error.message));
      else resolve(message.result);
    } else if (message.method) {
      client.notificationHandler?.(message.method, message.params);
    }
  };
  child.stdout.on("data", (chunk) => {
    let start = 0;
    let end;
    while ((end = chunk.indexOf(10, start)) !== -1) {
      const piece = chunk.subarray(start, end);
      const line = parts.length === 0 ? piece.toString("utf8") : Buffer.concat([...parts, piece]).toString("utf8");
      parts = [];
      start = end + 1;
      dispatch(line);
    }
    if (start < chunk.length) parts.push(chunk.subarray(start));
  });
  return client;
}

// 2026-07-28: each request carries the _meta envelope and names itself in headers.
const META = "io.modelcontextprotocol/";
const envelope = {
  [`${META}protocolVersion`]: "2026-07-28",
  [`${META}clientCapabilities`]: { roots: { listChanged: false } },
  [`${META}clientInfo`]: { name: "bench-raw", version: "1" },
};

function httpClient(url, stateless) {
  let nextId = 1;
  const base = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const client = {
    notificationHandler: undefined,
    async request(method, params) {
      const id = nextId++;
      let headers = base;
      if (stateless) {
        headers = { ...base, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, ...(params.name ? { "Mcp-Name": params.name } : {}) };
        params = { _meta: envelope, ...params };
      }
      const response = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id, method, params }) });
      let message;
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const text = await response.text();
        for (const block of text.split("\n\n")) {
          const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
          if (!data) continue;
          const parsed = JSON.parse(data);
          if (parsed.id === id) message = parsed;
          else if (parsed.method) client.notificationHandler?.(parsed.method, parsed.params);
        }
      } else {
        message = await response.json();
      }
      if (message?.error) throw new Error(message.error.message);
      return message?.result;
    },
    notify(method, params) {
      return fetch(url, { method: "POST", headers: base, body: JSON.stringify({ jsonrpc: "2.0", method, params }) });
    },
    close() {},
  };
  return client;
}
