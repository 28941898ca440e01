#!/usr/bin/env node
// The release workflow's publish preparation:
//   node scripts/release/collect.mjs <artifacts dir> [--dry-run]
// puts each target's binary into its npm/<platform> package (`napi artifacts`, which fails
// naming every target whose binary is missing), then wires the platform packages into
// package.json's optionalDependencies at this version (`napi pre-publish`). With --dry-run
// the second step only checks.
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [artifacts, ...flags] = process.argv.slice(2);
if (!artifacts) {
  console.error("usage: collect.mjs <artifacts dir> [--dry-run] [--cwd <package dir>]");
  process.exit(2);
}
const at = flags.indexOf("--cwd");
const cwd = at >= 0 ? resolve(flags[at + 1]) : root;
const napi = join(root, "node_modules", "@napi-rs", "cli", "dist", "cli.js");
const run = (args) => {
  const ran = spawnSync(process.execPath, [napi, ...args], { cwd, stdio: "inherit" });
  if (ran.status !== 0) process.exit(ran.status ?? 1);
};
run(["artifacts", "--output-dir", resolve(artifacts), "--npm-dir", "npm"]);
run(["pre-publish", "--npm-dir", "npm", "--tag-style", "npm", "--skip-optional-publish", ...(flags.includes("--dry-run") ? ["--dry-run"] : [])]);
