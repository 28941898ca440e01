// SPEC §8 FileToolCache: the embedded MCPToolCache (one JSON file keyed by server name and
// config hash; corrupt file = empty; safe across processes), alone and behind an MCPManager.
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { MCPManager, MCPStdioServerConfig, MCPToolDefinition } from "../index.js";
import { native, server, waitFor } from "./helpers";

const indexJs = fileURLToPath(new URL("../index.js", import.meta.url));

const tools = (...names: string[]): MCPToolDefinition[] =>
  names.map((name) => ({ name, description: `the ${name} tool`, inputSchema: { type: "object", properties: { q: { type: "string" } } } }));

let dir = "";
const managers: MCPManager<any>[] = [];
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cache-")));
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `node -e script`; resolves with its exit code and stderr. */
function runNode(script: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

describe("FileToolCache", () => {
  it("FileToolCache: get is null while the file or the entry is absent; path is the given path", async () => {
    const path = join(dir, "tools.json");
    const cache = new native.FileToolCache(path);
    expect(cache.path).toBe(path);
    expect(await cache.get("github", { command: "gh-mcp" })).toBeNull();
    await cache.set("github", { command: "gh-mcp" }, tools("create_issue"));
    expect(await cache.get("gitlab", { command: "gh-mcp" })).toBeNull();
  });

  it("FileToolCache: set then get round-trips the tools, also through a new instance on the same file", async () => {
    const path = join(dir, "nested", "tools.json");
    const config: MCPStdioServerConfig = { command: "srv", args: ["--x"], env: { TOKEN: "!pass show token" }, cwd: undefined };
    const list = [...tools("a", "b"), { name: "c", inputSchema: { type: "object" as const, required: ["x"] }, annotations: { readOnlyHint: true } }];
    const cache = new native.FileToolCache(path);
    await cache.set("srv", config, list);
    expect(await cache.get("srv", config)).toEqual(list);
    expect(await new native.FileToolCache(path).get("srv", config)).toEqual(list);
    // A later set replaces the entry.
    await cache.set("srv", config, tools("only"));
    expect(await new native.FileToolCache(path).get("srv", config)).toEqual(tools("only"));
  });

  it("FileToolCache: a different config misses; the same config with its keys in another order hits", async () => {
    const cache = new native.FileToolCache(join(dir, "tools.json"));
    await cache.set("srv", { command: "srv", args: ["a"], env: { A: "1", B: "2" } }, tools("t"));
    expect(await cache.get("srv", { command: "srv", args: ["b"], env: { A: "1", B: "2" } })).toBeNull();
    expect(await cache.get("srv", { command: "srv", args: ["a"], env: { A: "1", B: "3" } })).toBeNull();
    expect(await cache.get("srv", { type: "http", url: "http://127.0.0.1/mcp" })).toBeNull();
    expect(await cache.get("srv", { env: { B: "2", A: "1" }, args: ["a"], command: "srv" })).toEqual(tools("t"));
  });

  it("FileToolCache/FileTokenStore: a write that cannot happen rejects naming the file and the reason", async () => {
    const blocker = join(dir, "a-file");
    writeFileSync(blocker, "");
    const cachePath = join(blocker, "tools.json");
    const cache = new native.FileToolCache(cachePath);
    const config = { command: "x" };
    const cacheError: any = await cache.set("s", config, tools("a")).catch((e) => e);
    expect(cacheError).toBeInstanceOf(Error);
    expect(cacheError.message).toMatch(new RegExp(`^Failed to write tool cache ${cachePath}: .+`));
    const storePath = join(blocker, "tokens.json");
    const store = new native.FileTokenStore(storePath);
    const storeError: any = await store.set("k", { issuer: "x" } as any).catch((e) => e);
    expect(storeError.message).toMatch(new RegExp(`^Failed to write token store ${storePath}: .+`));
    // Reads of an unreachable file are misses, not failures.
    await expect(cache.get("s", config)).resolves.toBeNull();
    await expect(store.get("k")).resolves.toBeUndefined();
  });

  it("FileToolCache: a corrupt file reads as empty, and a later set works", async () => {
    const path = join(dir, "tools.json");
    writeFileSync(path, "{ not json at all");
    const cache = new native.FileToolCache(path);
    expect(await cache.get("srv", { command: "srv" })).toBeNull();
    await cache.set("srv", { command: "srv" }, tools("t"));
    expect(await cache.get("srv", { command: "srv" })).toEqual(tools("t"));
    expect(await new native.FileToolCache(path).get("srv", { command: "srv" })).toEqual(tools("t"));

    writeFileSync(path, JSON.stringify({ unexpected: ["shape"] }));
    expect(await new native.FileToolCache(path).get("srv", { command: "srv" })).toBeNull();
  });

  it("FileToolCache: two processes each setting 20 servers at once lose no entry", async () => {
    const path = join(dir, "shared.json");
    const startAt = Date.now() + 700; // both children start writing at the same moment
    const child = (tag: string) => `
      const { FileToolCache } = require(${JSON.stringify(indexJs)});
      const cache = new FileToolCache(${JSON.stringify(path)});
      while (Date.now() < ${startAt}) {}
      Promise.all(Array.from({ length: 20 }, (_, i) =>
        cache.set("${tag}" + i, { command: "srv", args: ["${tag}", String(i)] }, [{ name: "tool_${tag}_" + i, inputSchema: { type: "object" } }]),
      )).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
    `;
    const results = await Promise.all([runNode(child("a")), runNode(child("b"))]);
    expect(results).toEqual([
      { code: 0, stderr: "" },
      { code: 0, stderr: "" },
    ]);
    const cache = new native.FileToolCache(path);
    const missing: string[] = [];
    for (const tag of ["a", "b"]) {
      for (let i = 0; i < 20; i++) {
        const got = await cache.get(`${tag}${i}`, { command: "srv", args: [tag, String(i)] });
        if (JSON.stringify(got) !== JSON.stringify([{ name: `tool_${tag}_${i}`, inputSchema: { type: "object" } }])) missing.push(`${tag}${i}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("M4/FileToolCache: a second manager gets deferred tools from the file the first one wrote", async () => {
    const path = join(dir, "tools.json");
    const config = () => ({ command: process.execPath, args: [server, "--init-delay=800"] });

    const first = new native.MCPManager(dir, new native.FileToolCache(path), { compat: "v12", startupTimeoutMs: 100 });
    managers.push(first);
    const live = await first.connectServers({ cached: config() }, {});
    expect(live.connectedServers).toEqual(["cached"]);
    expect(live.tools.every((t) => !t.deferred)).toBe(true);
    const names = live.tools.map((t) => t.name).sort();
    // The cache write may land after connectServers resolved.
    let written: MCPToolDefinition[] | null = null;
    const until = Date.now() + 5000;
    while (written === null && Date.now() < until) {
      written = await new native.FileToolCache(path).get("cached", config());
      if (written === null) await new Promise((r) => setTimeout(r, 50));
    }
    expect(written?.map((t) => t.name).sort()).toEqual(names.map((n) => n.replace(/^mcp_cached_/, "")).sort());
    await first.disconnectAll();

    const second = new native.MCPManager(dir, new native.FileToolCache(path), { compat: "v12", startupTimeoutMs: 100 });
    managers.push(second);
    const result = await second.connectServers({ cached: config() }, {});
    expect(result.connectedServers).toEqual([]);
    expect(result.tools.map((t) => t.name).sort()).toEqual(names);
    expect(result.tools.every((t) => t.deferred)).toBe(true);
    expect(await waitFor(() => second.getConnectionStatus("cached") === "connected" && second.getTools().every((t) => !t.deferred), 8000)).toBe(true);
    expect(second.getTools().map((t) => t.name).sort()).toEqual(names);
  });
});
