// The test runners users run the package under: Jest (one worker, several files,
// --detectOpenHandles) and Vitest's threads and forks pools, each on test files of a user's
// kind in __test__/runners/.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name: string) => join(root, "node_modules", ".bin", name);

function run(command: string, args: string[]) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    const env = { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1" };
    execFile(command, args, { cwd: root, env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as any).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe("test runners", () => {
  it("Jest, one worker, two files: both pass, and --detectOpenHandles names none of our handles", async () => {
    const config = join("__test__", "runners", "jest", "jest.config.cjs");
    const { code, output } = await run(bin("jest"), ["--config", config, "--runInBand", "--detectOpenHandles"]);
    expect(code, output).toBe(0);
    expect(output).toContain("Tests:       2 passed, 2 total");
    // Each handle Jest reports is a "●  <name>" line. Ours (the executor's and every
    // transport's threadsafe function) report hasRef() = false once idle, so none is
    // listed; napi-rs's own CustomGC function is not created (napi stays at napi3).
    const handles = [...output.matchAll(/^\s+●\s+(\S+)\s*$/gm)].map((m) => m[1]);
    expect(handles).toEqual([]);
    expect(output).not.toContain("Jest has detected");
  });

  for (const pool of ["threads", "forks"]) {
    it(`Vitest --pool=${pool}: the addon loads and runs a round trip`, async () => {
      const config = join("__test__", "runners", "vitest.config.mts");
      const { code, output } = await run(bin("vitest"), ["run", "--config", config, `--pool=${pool}`]);
      expect(code, output).toBe(0);
      expect(output).toMatch(/Tests\s+1 passed/);
    });
  }
});
