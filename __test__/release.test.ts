// The release pipeline's scripts (scripts/release/), which .github/workflows/release.yml
// calls: the target table against package.json and npm/, the build commands, the smoke
// test on this machine, and collecting eight binaries into their packages with
// optionalDependencies wired.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { TARGETS } from "../scripts/release/targets.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function run(command: string, args: string[], cwd = root) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(command, args, { cwd, timeout: 120_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as any).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}
const script = (name: string) => join(root, "scripts", "release", name);

describe("release scripts", () => {
  it("every napi target has a row, a platform package whose os/cpu/libc fit, and a build job", () => {
    expect(Object.keys(TARGETS).sort()).toEqual([...pkg.napi.targets].sort());
    const workflow = parse(readFileSync(join(root, ".github", "workflows", "release.yml"), "utf8"));
    const built = workflow.jobs.build.strategy.matrix.include;
    for (const [triple, target] of Object.entries(TARGETS) as [string, any][]) {
      const platformPkg = JSON.parse(readFileSync(join(root, "npm", target.platform, "package.json"), "utf8"));
      expect(platformPkg.name).toBe(`mcp-native-${target.platform}`);
      expect(platformPkg.version).toBe(pkg.version);
      expect(platformPkg.main).toBe(`mcp-native.${target.platform}.node`);
      const [os, cpu, libc] = target.platform.split("-");
      expect(platformPkg.os).toEqual([os]);
      expect(platformPkg.cpu).toEqual([cpu]);
      if (os === "linux") expect(platformPkg.libc).toEqual([libc === "gnu" ? "glibc" : "musl"]);
      expect(built).toContainEqual({ target: triple, runner: target.runner });
    }
    const tested = workflow.jobs.test.strategy.matrix.include.map((row: any) => row.target).sort();
    expect(tested).toEqual(Object.entries(TARGETS).filter(([, t]: any) => t.test).map(([triple]) => triple).sort());
    // A musl target runs where its libc is: the row names the container, the job uses it.
    for (const row of workflow.jobs.test.strategy.matrix.include) {
      const target = (TARGETS as any)[row.target];
      expect(row.container).toBe(target.container);
      expect(row.runner).toBe(target.testRunner ?? target.runner);
    }
    // The Windows test set runs on real Windows, where Wine's stand-ins do not.
    const windowsSteps = workflow.jobs.test.steps.filter((step: any) => step.if === "runner.os == 'Windows'");
    expect(windowsSteps.map((step: any) => step.run)).toEqual(["node --test __test__/windows/windows.test.mjs"]);
    expect(workflow.jobs.test.container).toBe("${{ matrix.container }}");
    expect(workflow.jobs.publish.permissions["id-token"]).toBe("write");
  });

  it("build.mjs: the napi build of each target, cross-compiling where the runner differs", async () => {
    for (const triple of Object.keys(TARGETS)) {
      const { code, output } = await run(process.execPath, [script("build.mjs"), triple, "--dry-run"]);
      expect(code, output).toBe(0);
      const [build, types, esm] = output.trim().split("\n");
      expect(build).toContain(`build --platform --release --target ${triple}`);
      expect(build.includes("--use-napi-cross")).toBe(triple === "aarch64-unknown-linux-gnu");
      expect(build.endsWith(" -x")).toBe(triple.endsWith("-musl"));
      expect(types).toContain("generic-types.mjs");
      expect(esm).toContain("esm-wrapper.mjs");
    }
    const unknown = await run(process.execPath, [script("build.mjs"), "riscv64-unknown-linux-gnu", "--dry-run"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.output).toContain("unknown target riscv64-unknown-linux-gnu");
  });

  it("smoke.mjs: the built addon makes a round trip here", async () => {
    const { code, output } = await run(process.execPath, [script("smoke.mjs")]);
    expect(code, output).toBe(0);
    expect(output).toMatch(/^smoke: ok \(linux-x64, /m);
  });

  async function releaseCopy(withBinaries: string[]) {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-release-"));
    scratch.push(dir);
    cpSync(join(root, "package.json"), join(dir, "package.json"));
    cpSync(join(root, "README.md"), join(dir, "README.md"));
    cpSync(join(root, "npm"), join(dir, "npm"), { recursive: true });
    for (const triple of withBinaries) {
      const folder = join(dir, "artifacts", `bindings-${triple}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, `mcp-native.${(TARGETS as any)[triple].platform}.node`), `stand-in for ${triple}`);
    }
    // napi pre-publish reads the release commit (npm tag style: its message is the version).
    for (const args of [["init", "-q"], ["add", "-A"], ["-c", "user.email=release@test", "-c", "user.name=release", "commit", "-qm", pkg.version]]) {
      expect((await run("git", args, dir)).code).toBe(0);
    }
    return dir;
  }

  it("collect.mjs: eight binaries go into their packages and become optionalDependencies", async () => {
    const dir = await releaseCopy(Object.keys(TARGETS));
    const { code, output } = await run(process.execPath, [script("collect.mjs"), join(dir, "artifacts"), "--cwd", dir]);
    expect(code, output).toBe(0);
    const wired = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).optionalDependencies;
    expect(wired).toEqual(Object.fromEntries(Object.values(TARGETS).map((t: any) => [`mcp-native-${t.platform}`, pkg.version])));
    for (const [triple, target] of Object.entries(TARGETS) as [string, any][]) {
      expect(readFileSync(join(dir, "npm", target.platform, `mcp-native.${target.platform}.node`), "utf8")).toBe(`stand-in for ${triple}`);
    }
  });

  it("collect.mjs: a missing binary fails the release, naming its target", async () => {
    const dir = await releaseCopy(Object.keys(TARGETS).filter((t) => t !== "aarch64-apple-darwin"));
    const { code, output } = await run(process.execPath, [script("collect.mjs"), join(dir, "artifacts"), "--cwd", dir]);
    expect(code).not.toBe(0);
    expect(output).toContain("aarch64-apple-darwin (mcp-native.darwin-arm64.node)");
    expect(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).optionalDependencies).toBeUndefined();
  });
});
