// Runs on `npm install`. With a prebuilt binary (the platform package, or a built addon in a
// clone) it does nothing. In a clone of the repository it builds the addon from source. In
// an installed package with no binary for this platform it says what to do instead.
const { execFileSync, spawnSync } = require("node:child_process");
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

/** The napi-rs name of this platform, as the platform packages are named. */
function platformName() {
  const { platform, arch } = process;
  if (platform === "linux") {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? "gnu" : "musl"}`;
  }
  if (platform === "win32") return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function fail(lines) {
  console.error(lines.join("\n"));
  process.exit(1);
}

if (process.env.MCP_NATIVE_SKIP_BUILD || loads()) process.exit(0);

const platform = platformName();
const prebuilt = `mcp-native-${platform}`;
// Only a clone has the Rust sources; the published package does not ship them.
if (!existsSync(path.join(__dirname, "Cargo.toml"))) {
  fail([
    `mcp-native: no prebuilt binary for this platform (${platform}).`,
    `  Install the platform package next to it: npm install ${prebuilt}`,
    "  (npm skips it when optional dependencies are omitted: drop --omit=optional / --no-optional).",
    "  No prebuilt binary for your platform? Build one from a clone of the repository",
    "  (needs Rust: https://rustup.rs): npm ci && npm run build, then npm install <that directory>.",
  ]);
}
if (spawnSync("cargo", ["--version"], { stdio: "ignore" }).status !== 0) {
  fail([
    `mcp-native: no prebuilt binary for this platform (${platform}), and building one from source needs cargo,`,
    "  which is not on PATH. Install Rust (https://rustup.rs), then run: npm rebuild mcp-native",
  ]);
}

const localCli = path.join(__dirname, "node_modules", "@napi-rs", "cli", "dist", "cli.js");
const [command, args] = existsSync(localCli)
  ? [process.execPath, [localCli, "build", "--platform", "--release"]]
  : ["npx", ["--yes", "@napi-rs/cli@3.10.12", "build", "--platform", "--release"]];
console.error(`mcp-native: no prebuilt binary for ${platform}, building from source…`);
try {
  execFileSync(command, args, { cwd: __dirname, stdio: "inherit" });
  execFileSync(process.execPath, [path.join(__dirname, "scripts", "generic-types.mjs")], { stdio: "inherit" });
  execFileSync(process.execPath, [path.join(__dirname, "scripts", "esm-wrapper.mjs")], { stdio: "inherit" });
} catch (error) {
  fail([`mcp-native: build failed: ${error.message}`]);
}
