#!/usr/bin/env node
// SPEC-AGENT183 A66: the agent as published (@oh-my-pi/pi-coding-agent 18.3.4) type-checks with
// its MCP modules swapped for this package (__test__/agent183/ over its src/mcp/) with no error
// beyond those of the pristine agent. Its sibling packages (@oh-my-pi/*) were not published at
// 18.3.4; the newest ones before it stand in (`overrides`), so both trees have a few errors of
// that skew, and what counts is the difference. Without the registry the check is skipped
// (said so, exit 0); with it, a new error fails.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cache = join(root, "node_modules", ".cache", "agent183");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const manifest = {
  name: "agent183-typecheck",
  private: true,
  dependencies: { "@oh-my-pi/pi-coding-agent": "18.3.4", "@types/bun": "1.3.14" },
  overrides: {
    "@oh-my-pi/omp-stats": "18.2.11",
    "@oh-my-pi/omptype": "18.2.11",
    "@oh-my-pi/pi-agent-core": "18.2.11",
    "@oh-my-pi/pi-ai": "18.2.11",
    "@oh-my-pi/pi-catalog": "18.2.11",
    "@oh-my-pi/pi-mnemopi": "18.2.11",
    "@oh-my-pi/pi-natives": "18.2.10",
    "@oh-my-pi/pi-tui": "18.2.9",
    "@oh-my-pi/pi-utils": "18.2.9",
    "@oh-my-pi/pi-wire": "18.2.11",
    "@oh-my-pi/snapcompact": "18.2.11",
  },
};

function install() {
  const agent = join(cache, "node_modules", "@oh-my-pi", "pi-coding-agent", "package.json");
  if (existsSync(agent)) return true;
  mkdirSync(cache, { recursive: true });
  writeFileSync(join(cache, "package.json"), JSON.stringify(manifest, null, 2));
  try {
    execFileSync("npm", ["install", "--ignore-scripts", "--omit=optional", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: cache,
      stdio: ["ignore", "ignore", "pipe"],
    });
    return true;
  } catch (error) {
    const why = String(error.stderr ?? error.message).trim().split("\n")[0];
    console.log(`agent 18.3.4 type-check skipped: npm install failed (${why})`);
    return false;
  }
}

function setUp() {
  const work = join(cache, "work");
  rmSync(work, { recursive: true, force: true });
  const src = join(cache, "node_modules", "@oh-my-pi", "pi-coding-agent", "src");
  cpSync(src, join(work, "pristine"), { recursive: true });
  cpSync(src, join(work, "swapped"), { recursive: true });
  cpSync(join(root, "__test__", "agent183"), join(work, "swapped", "mcp"), { recursive: true });
  for (const tree of ["pristine", "swapped"]) {
    const config = {
      compilerOptions: {
        target: "ESNext",
        module: "ESNext",
        moduleResolution: "bundler",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        resolveJsonModule: true,
        jsx: "react-jsx",
        lib: ["ESNext", "DOM"],
        types: ["bun"],
        paths: { "mcp-native": [join(root, "index.d.ts")] },
      },
      include: [`${tree}/**/*.ts`, `${tree}/**/*.tsx`],
    };
    writeFileSync(join(work, `tsconfig.${tree}.json`), JSON.stringify(config, null, 2));
  }
  return work;
}

/** Each diagnostic as `file: error TSn: message` (positions dropped: the swapped modules move lines). */
function diagnostics(work, tree) {
  let out;
  try {
    out = execFileSync(process.execPath, [tsc, "-p", join(work, `tsconfig.${tree}.json`)], {
      cwd: work,
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (error) {
    out = error.stdout;
  }
  const found = [];
  for (const line of out.split("\n")) {
    const head = /^(\S[^(]*)\((\d+),(\d+)\): (error TS\d+: .*)$/.exec(line);
    if (head) {
      const key = `${head[1].slice(tree.length + 1)}: ${head[4].replaceAll(`/${tree}/`, "/")}`;
      found.push({ key, where: `${head[1]}:${head[2]}:${head[3]}`, text: head[4] });
    }
    else if (found.length > 0 && /^\s/.test(line)) found[found.length - 1].text += `\n${line}`;
  }
  return found;
}

if (!existsSync(tsc)) throw new Error("typescript is not installed: run npm ci");
if (install()) {
  const work = setUp();
  const pristine = diagnostics(work, "pristine");
  const swapped = diagnostics(work, "swapped");
  const left = new Map();
  for (const { key } of pristine) left.set(key, (left.get(key) ?? 0) + 1);
  const added = swapped.filter(({ key }) => {
    const count = left.get(key) ?? 0;
    if (count === 0) return true;
    left.set(key, count - 1);
    return false;
  });
  console.log(`agent 18.3.4 type-check: pristine ${pristine.length} diagnostics, swapped ${swapped.length}, new ${added.length}`);
  for (const error of added) console.log(`  ${error.where}: ${error.text}`);
  if (added.length > 0) process.exit(1);
}
