// What a user gets from `npm install mcp-native`: the packed main package and the packed
// linux-x64-gnu platform package, installed into a scratch project with no Rust toolchain
// on PATH and no registry, load and run a stdio round trip on Node and on Bun; the main
// tarball holds only what users need; install.js says what to do when no binary fits.
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const bun = join(root, "node_modules", ".bin", "bun");
const glibc = Boolean((process.report?.getReport() as any)?.header?.glibcVersionRuntime);
const supported = process.platform === "linux" && process.arch === "x64" && glibc;
// No cargo, no ~/.cargo/bin: only this Node (with its npm) and the system's basic tools.
const PATH = [dirname(process.execPath), "/usr/bin", "/bin"].join(":");
const MAIN_BUDGET_BYTES = 300 * 1024;

let work = "";
let mainTarball = "";
let platformTarball = "";

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const environment = { ...process.env, PATH, npm_config_cache: join(work, "npm-cache"), npm_config_offline: "true", ...env };
    delete environment.CARGO_HOME;
    execFile(command, args, { cwd, env: environment, timeout: 120_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as any).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function pack(directory: string) {
  const packed = await run("npm", ["pack", "--json", "--pack-destination", work], directory);
  expect(packed.code, packed.stderr).toBe(0);
  const [info] = JSON.parse(packed.stdout);
  return { file: join(work, info.filename), files: info.files.map((f: any) => f.path as string), size: info.size as number };
}

async function scratchProject(name: string, tarballs: string[]) {
  const app = join(work, name);
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true }));
  const installed = await run("npm", ["install", "--no-audit", "--no-fund", ...tarballs], app);
  return { app, installed };
}

let main: Awaited<ReturnType<typeof pack>>;
beforeAll(async () => {
  if (!supported) return;
  work = mkdtempSync(join(tmpdir(), "mcp-native-packed-"));
  main = await pack(root);
  mainTarball = main.file;
  // The platform package as the release pipeline fills it: its manifest plus the binary.
  const stage = join(work, "platform");
  mkdirSync(stage);
  for (const file of ["package.json", "README.md"]) copyFileSync(join(root, "npm", "linux-x64-gnu", file), join(stage, file));
  copyFileSync(join(root, "mcp-native.linux-x64-gnu.node"), join(stage, "mcp-native.linux-x64-gnu.node"));
  platformTarball = (await pack(stage)).file;
}, 120_000);
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!supported)("the packed package", () => {
  it("the main tarball holds the loaders, types, CLI and example only, within its size budget", () => {
    const allowed = /^(index\.(js|d\.ts|mjs|d\.mts)|install\.js|package\.json|README\.md|LICENSE|bin\/.+|cli\/.+|example\/.+|scripts\/(generic-types|esm-wrapper)\.mjs)$/;
    expect(main.files.filter((f) => !allowed.test(f))).toEqual([]);
    for (const needed of ["index.js", "index.d.ts", "index.mjs", "index.d.mts", "install.js", "bin/mcp-native.mjs", "example/server.mjs"]) {
      expect(main.files).toContain(needed);
    }
    expect(statSync(mainTarball).size).toBeLessThan(MAIN_BUDGET_BYTES);
  });

  it("installs offline without cargo next to the platform package, and runs a round trip on Node and Bun", async () => {
    const { app, installed } = await scratchProject("app", [platformTarball, mainTarball]);
    expect(installed.code, installed.stderr).toBe(0);
    writeFileSync(
      join(app, "run.mjs"),
      `import { MCPClient } from "mcp-native";
import { createRequire } from "node:module";
const server = createRequire(import.meta.url).resolve("mcp-native/package.json").replace(/package\\.json$/, "example/server.mjs");
const client = await MCPClient.connect("example", { command: process.execPath, args: [server] });
const result = await client.callTool("echo", { text: "packed" });
await client.close();
console.log(result.content[0].text);
`,
    );
    for (const runtime of [process.execPath, bun]) {
      const ran = await run(runtime, ["run.mjs"], app);
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout.trim()).toBe("packed");
    }
    const cli = await run(process.execPath, [join(app, "node_modules", ".bin", "mcp-native"), "call", "echo", '{"text":"cli"}'], app);
    expect(cli.stdout.trim()).toBe("cli");
  });

  it("without a binary for the platform, install.js says which package to add", async () => {
    const { installed } = await scratchProject("bare", [mainTarball]);
    expect(installed.code).not.toBe(0);
    expect(installed.stderr).toContain("mcp-native: no prebuilt binary for this platform (linux-x64-gnu).");
    expect(installed.stderr).toContain("npm install mcp-native-linux-x64-gnu");
  });
});
