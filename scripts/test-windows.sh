#!/usr/bin/env bash
# `npm run test:windows`: the addon built for x86_64-pc-windows-gnu (Debian's rustc, std
# built from source) and the Windows test set run by a Windows node.exe under Wine, then
# `cargo check` of the crate for both Apple targets. The toolchains are set up on first use
# by scripts/cross/ (apt, npm; idempotent). Wine is not Windows: docs/CONTRIBUTING.md (Platforms and runtimes)
# says what only the release workflow's Windows runners show.
# pipefail: a failed cargo fails its step, not the `tee` after it.
set -euo pipefail
cd "$(dirname "$0")/.."
cross="${NAPI_CROSS_HOME:-$HOME/.cache/napi-cross}"
step() { printf '==> %s (%ss)\n' "$1" "$(( $(date +%s) - started ))"; }
started=$(date +%s)

[ -x "$cross/bin/cargo-win" ] && [ -x "$cross/bin/node-win" ] || NO_SELFTEST=1 bash scripts/cross/setup-windows-gnu.sh
step "Windows toolchain ready"
# The bench server is Unix-only on purpose (it measures Unix pipes): the crate alone.
# Warnings fail the build here as clippy's -D warnings does on Linux (std's own are not ours).
no_warnings() { if grep -E '^(warning|error)' "$1"; then exit 1; fi; }
"$cross/bin/cargo-win" build --lib 2>&1 | tee target/xwin-build.log
no_warnings target/xwin-build.log
cp target/xwin/x86_64-pc-windows-gnu/debug/mcp_native.dll mcp-native.win32-x64-msvc.node
step "addon built for x86_64-pc-windows-gnu"
"$cross/bin/node-win" --test __test__/windows/windows.test.mjs
step "Windows test set passed under Wine"

[ -x "$cross/bin/cargo-mac" ] || NO_SELFTEST=1 bash scripts/cross/setup-macos-check.sh
step "macOS toolchain ready"
CARGO_TARGET_DIR=target/xmac "$cross/bin/cargo-mac" check --workspace --all-targets 2>&1 | tee target/xmac-check.log
no_warnings target/xmac-check.log
step "cargo check for aarch64-apple-darwin and x86_64-apple-darwin passed"
