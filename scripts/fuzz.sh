#!/bin/sh
# Runs every fuzz target in tests/fuzz_parsers.rs for FUZZ_SECONDS (default 60) each, one
# after another, with fresh seeds, then prints the cases each one ran. A failure prints the
# shrunk input and the FUZZ_SEED (with FUZZ_CASES) that replays it under `cargo test`.
# Extra arguments go to the test harness, e.g. `npm run fuzz -- sse` for one target.
set -eu
cd "$(dirname "$0")/.."
export FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
export FUZZ_CASES="${FUZZ_CASES:-1000}"
cargo test --profile fuzz --test fuzz_parsers -- --test-threads=1 --nocapture "$@"
