// A56 on Bun: a lost remote server's retry timer does not keep Bun alive, as on Node
// (__test__/agent18-manager.test.ts).
import { describe, expect, it } from "bun:test";
import { join } from "node:path";

describe("A56 on Bun", () => {
  it("A56: a process with a lost server on its 15 s schedule exits as soon as it has nothing else to do", () => {
    const started = Date.now();
    const run = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "fixtures", "idle-exit.mjs")], { timeout: 20_000 });
    expect(run.stderr.toString()).toBe("");
    expect(run.stdout.toString().trim().split("\n")).toEqual(['MCP server "remote": reconnect scheduled in 15000 ms', "armed"]);
    expect(run.exitCode).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 25_000);
});
