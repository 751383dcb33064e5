#!/usr/bin/env bash
# Benchmarks, reported as figures and ratios from one run (never asserted):
# - requestState seal + open per round, KMS vs in-process key, and the KMS
#   calls 10,000 rounds cost (needs the emulator, which this starts);
# - the local server: process start to first tools/call answered (median of
#   20), peak RSS, and the stripped release binary size.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/start-emulators.sh
(
  emulator_env
  cargo bench --locked -p e2e --bench request_state 2>"$STATE_DIR/bench-build.log" | grep -v '^$'
)

say "release build of the starter function (native)"
cargo build --locked --release -p starter 2>&1 | tail -n 1
binary="$ROOT/target/release/starter"
say "stripped release binary: $(du -k "$binary" | cut -f1) KiB"
"$VENV/bin/python" "$ROOT/infra/startup_bench.py" "$binary"
