// Every code example of docs/*.md runs (README's are run by docs-examples.test.ts). Each
// ```ts / ```js block loses its types (TypeScript's transpileModule) and runs as an ES
// module in a Node child against 127.0.0.1 fixtures, after fixtures/docs-world.mjs has
// given the names an example leaves to the reader. A block made of the agent's module
// files (`// src/mcp/….ts` sections, docs/agent.md) is written out as those modules, with
// the agent's own `./client` and `./timeout`, and every one of them is imported.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { startOAuthFixture } from "./fixtures/oauth-server";
import { httpTestScope, server as stdioServer } from "./helpers";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const docs = join(root, "docs");
const { fixture } = httpTestScope();
const dir = mkdtempSync(join(tmpdir(), "mcp-native-docs-code-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const binding = pathToFileURL(join(root, "index.mjs")).href;
const world = pathToFileURL(join(root, "__test__", "fixtures", "docs-world.mjs")).href;

const blocks = readdirSync(docs)
  .filter((name) => name.endsWith(".md"))
  .flatMap((name) =>
    [...readFileSync(join(docs, name), "utf8").matchAll(/```(ts|js)\n([\s\S]*?)```/g)].map((m, i) => ({ name: `${name} #${i + 1}`, code: m[2] })),
  );

/** Types stripped, the package imported from this checkout, relative modules as .mjs. */
function toModule(code: string) {
  const js = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  }).outputText;
  const module = js
    .replaceAll('from "mcp-native"', `from ${JSON.stringify(binding)}`)
    .replace(/from "(\.\/[^"]+)"/g, 'from "$1.mjs"');
  // A CommonJS example: `require` as a CommonJS module has it.
  if (!module.includes('require("mcp-native")')) return module;
  const required = module.replaceAll('require("mcp-native")', `require(${JSON.stringify(join(root, "index.js"))})`);
  return `import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\n${required}`;
}

/** `// src/mcp/<path>.ts` sections → { "<path>.mjs": module }. */
function agentModules(code: string) {
  const sections = code.split(/^\/\/ src\/mcp\/(\S+)\.ts\n/m).slice(1);
  const files: Record<string, string> = {
    // The agent's own modules its manager imports.
    "client.mjs": `export * from ${JSON.stringify(binding)};\n`,
    "timeout.mjs": "export const resolveMCPTimeoutMs = () => undefined;\n",
  };
  for (let i = 0; i < sections.length; i += 2) files[`${sections[i]}.mjs`] = toModule(sections[i + 1]);
  return files;
}

describe("docs/ examples", () => {
  it("has examples to run", () => expect(blocks.length).toBeGreaterThanOrEqual(15));

  it.each(blocks.map((b) => [b.name, b.code]))("%s runs", async (name, code) => {
    const http = await fixture();
    const legacy = await fixture({ legacy: true });
    const oauth = await startOAuthFixture();
    const home = mkdtempSync(join(dir, "home-"));
    const base = join(dir, (name as string).replace(/\W+/g, "-"));
    mkdirSync(base, { recursive: true });
    const source = (code as string)
      .replaceAll("http://127.0.0.1:3001/mcp", http.url)
      .replaceAll("http://127.0.0.1:3001/sse", legacy.url)
      .replaceAll("https://mcp.example.com/mcp", oauth.url)
      .replaceAll("https://idp.example.com", oauth.idpIssuer());
    let entry: string;
    if (/^\/\/ src\/mcp\//.test(source)) {
      const files = agentModules(source);
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(dirname(join(base, file)), { recursive: true });
        writeFileSync(join(base, file), text);
      }
      entry = `import ${JSON.stringify(world)};\n${Object.keys(files)
        .map((file) => `await import(${JSON.stringify(pathToFileURL(join(base, file)).href)});`)
        .join("\n")}\n`;
    } else {
      entry = `import ${JSON.stringify(world)};\n${toModule(source)}`;
    }
    const file = join(base, "example.mjs");
    writeFileSync(file, `${entry}\nprocess.exit(0);\n`);
    const run = await promisify(execFile)(process.execPath, [file], {
      cwd: root,
      timeout: 30_000,
      env: {
        ...process.env,
        HOME: home,
        PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`,
        DOCS_HTTP_URL: http.url,
        DOCS_STDIO_SERVER: stdioServer,
        DOCS_ID_TOKEN: oauth.idToken("docs-user"),
        MCP_CLIENT_SECRET: "my-agent-secret",
      },
    }).finally(() => oauth.close());
    // An example may pass a server's stderr on (its log lines); nothing may fail or warn.
    expect(run.stderr).not.toMatch(/error|warning|unhandled/i);
  }, 40_000);
});
