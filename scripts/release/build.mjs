#!/usr/bin/env node
// The release workflow's build step: `node scripts/release/build.mjs <target> [--dry-run]`
// builds the addon for one target (cross-compiling where its runner is another platform)
// and regenerates the loaders' types and the ESM entry point.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildArguments } from "./targets.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [triple, ...flags] = process.argv.slice(2);
const napi = join(root, "node_modules", "@napi-rs", "cli", "dist", "cli.js");
const steps = [
  [process.execPath, [napi, ...buildArguments(triple)]],
  [process.execPath, [join(root, "scripts", "generic-types.mjs")]],
  [process.execPath, [join(root, "scripts", "esm-wrapper.mjs")]],
];
for (const [command, args] of steps) {
  if (flags.includes("--dry-run")) {
    console.log([command, ...args].join(" "));
    continue;
  }
  const ran = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (ran.status !== 0) process.exit(ran.status ?? 1);
}
