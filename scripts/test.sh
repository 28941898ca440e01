#!/bin/sh
# The whole test suite: Rust checks, the floors of src/ (no import circle, no arrow up), Rust
# unit tests, the addon build, the type test (the agent's usage and its MCPManager subclass
# compiled against index.d.ts), a doc comment on every export, the published agent 18.3.4
# type-checked with its MCP modules swapped for ours (A66), the Vitest suite (Node), the Bun
# smoke run, the Bun tests of the agent's subclass and the official MCP conformance suite
# (client side).
set -eu
cd "$(dirname "$0")/.."
cargo fmt --check
node scripts/layers.mjs
cargo clippy --all-targets -- -D warnings
cargo test
npm run --silent build
npx tsc -p __test__/types/tsconfig.json
node scripts/jsdoc-check.mjs
node scripts/agent183-typecheck.mjs
npx vitest run
node_modules/.bin/bun __test__/bun-smoke.mjs
node_modules/.bin/bun test ./__test__/bun/
node scripts/conformance.mjs
