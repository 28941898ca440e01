#!/bin/sh
# The whole test suite: Rust checks and unit tests, the addon build, the type test (the
# agent's usage compiled against index.d.ts), the Vitest suite (Node) and the Bun smoke run.
set -eu
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test
npx napi build --platform --release
npx tsc -p __test__/types/tsconfig.json
npx vitest run
node_modules/.bin/bun __test__/bun-smoke.mjs
