// The eight release targets: where each is built, how, and whether its runner can test it.
// package.json's napi.targets is the list; this adds what the release workflow needs.
export const TARGETS = {
  "x86_64-unknown-linux-gnu": { platform: "linux-x64-gnu", runner: "ubuntu-latest", cross: [], test: true },
  "aarch64-unknown-linux-gnu": { platform: "linux-arm64-gnu", runner: "ubuntu-latest", cross: ["--use-napi-cross"], test: false },
  // Tested in an Alpine container on the same runner.
  "x86_64-unknown-linux-musl": { platform: "linux-x64-musl", runner: "ubuntu-latest", cross: ["-x"], test: true, container: "node:20-alpine" },
  "aarch64-unknown-linux-musl": { platform: "linux-arm64-musl", runner: "ubuntu-latest", cross: ["-x"], test: false },
  "x86_64-apple-darwin": { platform: "darwin-x64", runner: "macos-13", cross: [], test: true },
  "aarch64-apple-darwin": { platform: "darwin-arm64", runner: "macos-latest", cross: [], test: true },
  "x86_64-pc-windows-msvc": { platform: "win32-x64-msvc", runner: "windows-latest", cross: [], test: true },
  // Built on x64, tested on an Arm runner.
  "aarch64-pc-windows-msvc": { platform: "win32-arm64-msvc", runner: "windows-latest", cross: [], test: true, testRunner: "windows-11-arm" },
};

/** `napi build` for one target, as the workflow runs it (argv without the napi binary). */
export function buildArguments(triple) {
  const target = TARGETS[triple];
  if (!target) throw new Error(`unknown target ${triple}; known: ${Object.keys(TARGETS).join(", ")}`);
  return ["build", "--platform", "--release", "--target", triple, ...target.cross];
}
