// Builds the addon from source when no prebuilt binary fits this platform (a fresh clone,
// or an unlisted target). A prebuilt platform package, when installed, makes this a no-op.
const { execFileSync } = require("node:child_process");
const { existsSync } = require("node:fs");
const path = require("node:path");

function loads() {
  try {
    require("./index.js");
    return true;
  } catch {
    return false;
  }
}

if (process.env.MCP_NATIVE_SKIP_BUILD || loads()) process.exit(0);

const localCli = path.join(__dirname, "node_modules", "@napi-rs", "cli", "dist", "cli.js");
const [command, args] = existsSync(localCli)
  ? [process.execPath, [localCli, "build", "--platform", "--release"]]
  : ["npx", ["--yes", "@napi-rs/cli@3.10.12", "build", "--platform", "--release"]];
console.error("mcp-native: no prebuilt binary for this platform, building from source (needs cargo)…");
try {
  execFileSync(command, args, { cwd: __dirname, stdio: "inherit" });
  execFileSync(process.execPath, [path.join(__dirname, "scripts", "generic-types.mjs")], { stdio: "inherit" });
} catch (error) {
  console.error(`mcp-native: build failed: ${error.message}`);
  process.exit(1);
}
