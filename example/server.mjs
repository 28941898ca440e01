#!/usr/bin/env node
// The example MCP server bundled with mcp-native: what `mcp-native` talks to when no target
// is given, so the whole flow works on a fresh machine with nothing configured. It is plain
// Node with no dependencies, speaks MCP 2025-03-26 over stdio (one JSON-RPC message per
// line), and doubles as a readable template for a server of your own.
//
//   node example/server.mjs          run it over stdio
//   import { createHandler } from …  answer messages from another transport (the tests
//                                    serve it over HTTP this way)
import { realpathSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const PROTOCOL_VERSION = "2025-03-26";
export const SERVER_INFO = { name: "mcp-native-example", version: "1.0.0" };
const INSTRUCTIONS =
  "A demo server bundled with mcp-native. Try the echo, add and time tools, " +
  "read example://about, or get the greet prompt. sleep waits, so Ctrl-C and --timeout " +
  "have something to interrupt; fail always reports an error.";

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) });
const object = (properties, required = []) => ({ type: "object", properties, required });

// Argument problems are reported as tool results with isError (not JSON-RPC errors), as the
// MCP spec asks, so a model calling the tool can see what went wrong and try again.
const TOOLS = {
  echo: {
    description: "Returns its text argument unchanged",
    inputSchema: object({ text: { type: "string", description: "What to echo" } }, ["text"]),
    run: ({ text: t }) => (typeof t === "string" ? text(t) : text('"text" must be a string', true)),
  },
  add: {
    description: "Adds two numbers",
    inputSchema: object({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]),
    run: ({ a, b }) =>
      typeof a === "number" && typeof b === "number" ? text(String(a + b)) : text('"a" and "b" must be numbers', true),
  },
  time: {
    description: "The server's current time (ISO 8601, UTC)",
    inputSchema: object({}),
    run: () => text(new Date().toISOString()),
  },
  sleep: {
    description: "Waits ms milliseconds (default 1000); stops early when cancelled",
    inputSchema: object({ ms: { type: "number", minimum: 0 } }),
    run: ({ ms = 1000 }, signal) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(text(`slept ${ms} ms`)), ms);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      }),
  },
  fail: {
    description: "Always fails (isError: true), to show what a failed call looks like",
    inputSchema: object({ reason: { type: "string" } }),
    run: ({ reason = "this tool always fails" }) => text(reason, true),
  },
};

const ABOUT = {
  uri: "example://about",
  name: "about",
  description: "What this server is",
  mimeType: "text/markdown",
  text:
    "# mcp-native example server\n\n" +
    "A dependency-free MCP server (stdio, protocol 2025-03-26) bundled with mcp-native.\n" +
    "Tools: echo, add, time, sleep, fail. Prompt: greet.\n",
};

const GREET = {
  name: "greet",
  description: "Asks the model for a short greeting",
  arguments: [
    { name: "name", description: "Who to greet", required: true },
    { name: "style", description: "For example: formal, pirate", required: false },
  ],
};

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const METHODS = {
  // The only version this server implements, whatever the client asked for: the spec leaves
  // it to the client to accept it or disconnect.
  initialize: () => ({
    protocolVersion: PROTOCOL_VERSION,
    capabilities: { tools: {}, resources: {}, prompts: {} },
    serverInfo: SERVER_INFO,
    instructions: INSTRUCTIONS,
  }),
  ping: () => ({}),
  "tools/list": () => ({
    tools: Object.entries(TOOLS).map(([name, { description, inputSchema }]) => ({ name, description, inputSchema })),
  }),
  "tools/call": async (params, signal) => {
    const tool = Object.hasOwn(TOOLS, params.name) ? TOOLS[params.name] : undefined;
    if (!tool) throw new RpcError(-32602, `Unknown tool: ${params.name}`);
    return tool.run(params.arguments ?? {}, signal);
  },
  "resources/list": () => ({ resources: [{ uri: ABOUT.uri, name: ABOUT.name, description: ABOUT.description, mimeType: ABOUT.mimeType }] }),
  "resources/read": (params) => {
    if (params.uri !== ABOUT.uri) throw new RpcError(-32002, `Resource not found: ${params.uri}`);
    return { contents: [{ uri: ABOUT.uri, mimeType: ABOUT.mimeType, text: ABOUT.text }] };
  },
  "prompts/list": () => ({ prompts: [GREET] }),
  "prompts/get": (params) => {
    if (params.name !== GREET.name) throw new RpcError(-32602, `Unknown prompt: ${params.name}`);
    const { name, style } = params.arguments ?? {};
    if (!name) throw new RpcError(-32602, 'Missing required argument "name"');
    const how = style ? `, in a ${style} style` : "";
    return {
      description: GREET.description,
      messages: [{ role: "user", content: { type: "text", text: `Write a one-line greeting for ${name}${how}.` } }],
    };
  },
};

/**
 * One server session: `handle(message)` resolves with the response to send, or `undefined`
 * when there is none (notifications, responses, cancelled requests).
 */
export function createHandler() {
  const inFlight = new Map(); // request id → AbortController, for notifications/cancelled

  return async function handle(message) {
    if (message === null || typeof message !== "object" || typeof message.method !== "string") return undefined;
    const { id, method, params = {} } = message;
    if (id === undefined) {
      if (method === "notifications/cancelled") inFlight.get(params.requestId)?.abort();
      return undefined;
    }
    const handler = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
    if (!handler) return { jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } };
    const controller = new AbortController();
    inFlight.set(id, controller);
    try {
      const result = await handler(params, controller.signal);
      // The spec asks receivers not to answer a request the client has cancelled.
      return controller.signal.aborted ? undefined : { jsonrpc: "2.0", id, result };
    } catch (error) {
      return { jsonrpc: "2.0", id, error: { code: error.code ?? -32603, message: error.message } };
    } finally {
      inFlight.delete(id);
    }
  };
}

function serveStdio() {
  const handle = createHandler();
  const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", async (line) => {
    if (!line.trim()) return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    }
    const response = await handle(message);
    if (response) send(response);
  });
  // The client closing stdin is how a stdio session ends; pending sleeps must not hold us.
  lines.on("close", () => process.exit(0));
}

const isMain = process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
if (isMain) serveStdio();
