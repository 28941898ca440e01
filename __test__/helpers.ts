import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterEach } from "vitest";
import { fileURLToPath } from "node:url";
import { startHttpFixture } from "./fixtures/http-server";
import { startOAuthFixture, type OAuthFixtureOptions } from "./fixtures/oauth-server";

const require = createRequire(import.meta.url);
// The addon as the agent loads it: through the generated CommonJS loader.
export const native: typeof import("../index.js") = require("../index.js");

export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
export const server = fixture("stdio-server.mjs");

export const init = {
  protocolVersion: "2025-03-26",
  capabilities: {},
  clientInfo: { name: "mcp-native-tests", version: "0.0.0" },
};

export type Transport = import("../index.js").StdioTransport;

/** A connected transport to the scriptable fixture, initialized. */
export async function connectFixture(
  flags: string[] = [],
  config: Record<string, unknown> = {},
): Promise<Transport> {
  const t = await native.createStdioTransport({ command: process.execPath, args: [server, ...flags], ...config });
  await t.request("initialize", init);
  return t;
}

export async function callText(t: Transport, name: string, args: Record<string, unknown> = {}, options?: { signal?: AbortSignal }) {
  const result = await t.request<{ content: { text: string }[] }>("tools/call", { name, arguments: args }, options);
  return result.content[0].text;
}

export async function history(t: Transport): Promise<any[]> {
  return JSON.parse(await callText(t, "history"));
}

export { alive } from "./proc";

export async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** connectFixture for a test file: every transport it opens is closed after each test. */
export function closingAfterEach() {
  const open: Transport[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
  });
  return {
    open,
    connect: async (flags: string[] = [], config: Record<string, unknown> = {}) => {
      const t = await connectFixture(flags, config);
      open.push(t);
      return t;
    },
  };
}

/** The entry point of @modelcontextprotocol/server-everything. */
export const everything = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist", "index.js");

/**
 * Starts server-everything over HTTP. It binds every interface, so it runs with a preload
 * that forces listen() onto 127.0.0.1 and an ephemeral port, which it reports on stderr.
 */
export function startEverything(mode: "streamableHttp" | "sse"): Promise<{ proc: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["-r", fixture("loopback-preload.cjs"), everything, mode], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    proc.stderr!.on("data", (chunk) => {
      err += chunk;
      const match = /MCP_NATIVE_LISTENING (\d+)/.exec(err);
      if (match) resolve({ proc, port: Number(match[1]) });
    });
    proc.on("exit", (code) => reject(new Error(`server-everything exited ${code}: ${err}`)));
  });
}

/**
 * For an HTTP test file: `fixture` starts the scriptable HTTP server, `connect` an
 * HttpTransport; both (and whatever goes to `cleanup`) are closed after each test.
 */
export function httpTestScope() {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((f) => f()));
  });
  const fixture = async (options: Parameters<typeof startHttpFixture>[0] = {}) => {
    const f = await startHttpFixture(options);
    cleanups.push(f.close);
    return f;
  };
  const connect = async (config: Record<string, unknown>) => {
    const t = await native.createHttpTransport({ type: "http", ...config } as any);
    cleanups.push(() => t.close());
    return t;
  };
  return { fixture, connect, cleanup: (f: () => unknown) => cleanups.push(f) };
}

/**
 * For an OAuth test file: `fixture` starts the authorization server (with its IdP) and the
 * server it protects, `connect` an `MCPClient` to it; `cleanups` run after each test.
 */
export function oauthTestScope() {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((f) => f()));
  });
  const fixture = async (options: OAuthFixtureOptions = {}) => {
    const f = await startOAuthFixture(options);
    cleanups.push(f.close);
    return f;
  };
  const connect = async (config: Record<string, unknown>) => {
    const client = await native.MCPClient.connect("oauth", { type: "http", ...config } as any);
    cleanups.push(() => client.close());
    return client;
  };
  return { fixture, connect, cleanups };
}

/** A token store of a test's own, so no credential leaks between tests. */
export function memoryStore() {
  const entries = new Map<string, unknown>();
  return {
    entries,
    get: async (key: string) => entries.get(key) as any,
    set: async (key: string, value: unknown) => void entries.set(key, value),
    delete: async (key: string) => void entries.delete(key),
  };
}
