// How users load the package: ESM (named and default imports), CommonJS, TypeScript with
// moduleResolution node16 and bundler, and Bun — all through the `exports` map, from a
// scratch project whose node_modules/mcp-native is this package.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { native, server } from "./helpers";

const root = fileURLToPath(new URL("..", import.meta.url));
const bun = join(root, "node_modules", ".bin", "bun");
const tsc = join(root, "node_modules", ".bin", "tsc");
let project = "";

function run(command: string, args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, { cwd: project, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as any).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// A round trip against the stdio fixture, and what the module namespace holds.
const roundTrip = `
  const connection = await connectToServer("formats", { command: process.execPath, args: [${JSON.stringify(server)}] });
  const tools = await listTools(connection);
  await connection.transport.close();
`;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "mcp-native-formats-"));
  mkdirSync(join(project, "node_modules"));
  symlinkSync(root, join(project, "node_modules", "mcp-native"), "dir");
  writeFileSync(
    join(project, "esm.mjs"),
    `import * as namespace from "mcp-native";
import binding, { connectToServer, listTools, MCPClient } from "mcp-native";
import { createRequire } from "node:module";
const required = createRequire(import.meta.url)("mcp-native");
${roundTrip}
console.log(JSON.stringify({
  named: Object.keys(namespace).filter((k) => k !== "default").sort(),
  required: Object.keys(required).sort(),
  sameDefault: binding === required,
  sameClass: MCPClient === required.MCPClient,
  tools: tools.length,
}));
`,
  );
  writeFileSync(
    join(project, "cjs.cjs"),
    `const { connectToServer, listTools } = require("mcp-native");
(async () => {
${roundTrip}
  console.log(JSON.stringify({ tools: tools.length }));
})();
`,
  );
  const usage = `import binding, { connectToServer, MCPClient, type MCPServerConfig, type MCPToolDefinition } from "mcp-native";
const config: MCPServerConfig = { command: "node", args: ["server.mjs"] };
export async function main(): Promise<MCPToolDefinition[]> {
  const client = await MCPClient.connect("x", config);
  const connection = await connectToServer("y", config);
  await binding.disconnectServer(connection);
  return client.listTools();
}
`;
  writeFileSync(join(project, "usage.mts"), usage);
  writeFileSync(join(project, "usage.ts"), usage);
  const tsconfig = (moduleResolution: string, module: string, file: string) =>
    JSON.stringify({
      compilerOptions: { target: "ES2022", module, moduleResolution, strict: true, noEmit: true, types: [], lib: ["ES2022", "DOM"], skipLibCheck: false },
      files: [file],
    });
  writeFileSync(join(project, "tsconfig.node16.json"), tsconfig("node16", "node16", "usage.mts"));
  writeFileSync(join(project, "tsconfig.bundler.json"), tsconfig("bundler", "esnext", "usage.ts"));
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("module formats", () => {
  it("ESM: every CommonJS export is a named export, the default is the binding, and it works", async () => {
    const { code, stdout, stderr } = await run(process.execPath, ["esm.mjs"]);
    expect(code, stderr).toBe(0);
    const seen = JSON.parse(stdout);
    expect(seen.named).toEqual(seen.required);
    expect(seen.named).toEqual(Object.keys(native).sort());
    expect(seen.sameDefault).toBe(true);
    expect(seen.sameClass).toBe(true);
    expect(seen.tools).toBeGreaterThan(0);
  });

  it("CommonJS: require('mcp-native') works", async () => {
    const { code, stdout, stderr } = await run(process.execPath, ["cjs.cjs"]);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout).tools).toBeGreaterThan(0);
  });

  it("Bun: the same ESM file", async () => {
    const { code, stdout, stderr } = await run(bun, ["esm.mjs"]);
    expect(code, stderr).toBe(0);
    const seen = JSON.parse(stdout);
    expect(seen.named).toEqual(seen.required);
    expect(seen.sameDefault).toBe(true);
  });

  for (const resolution of ["node16", "bundler"]) {
    it(`TypeScript, moduleResolution ${resolution}: named, default and type imports compile`, async () => {
      const { code, stdout } = await run(tsc, ["-p", `tsconfig.${resolution}.json`]);
      expect(code, stdout).toBe(0);
    });
  }
});
