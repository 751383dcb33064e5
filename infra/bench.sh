#!/usr/bin/env bash
# Benchmarks, reported as figures and ratios from one run (never asserted):
# - requestState seal + open per round, KMS vs in-process key, and the KMS
#   calls 10,000 rounds cost (needs the emulator, which this starts);
# - the local server: process start to first tools/call answered (median of
#   20), peak RSS, and the stripped release binary size;
# - tasks: tools/call to CreateTaskResult and creation to worker start,
#   in-process and on the emulator with a separate worker.
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

# Task latency (debug build of the conformance fixtures): tools/call to
# CreateTaskResult, and task creation to worker start, with the in-process
# worker of `cargo run` and with a separate worker on the emulator's queue.
cargo build --locked -p everything 2>&1 | tail -n 1
bench_port=39392
MCP_LOCAL_ADDR="127.0.0.1:$bench_port" "$ROOT/target/debug/everything" >"$STATE_DIR/bench-tasks-local.log" 2>&1 &
server=$!
sleep 1
say "tasks, in-process worker (memory)"
"$VENV/bin/python" "$ROOT/infra/task_latency_bench.py" "http://127.0.0.1:$bench_port/mcp" "$STATE_DIR/bench-tasks-local.log" || true
kill "$server"
bash infra/bootstrap.sh >/dev/null
(
  # shellcheck disable=SC1091
  source "$STATE_DIR/local.env"
  "$ROOT/target/debug/everything-worker" >"$STATE_DIR/bench-tasks-worker.log" 2>&1 &
  worker=$!
  MCP_LOCAL_ADDR="127.0.0.1:$bench_port" "$ROOT/target/debug/everything" >"$STATE_DIR/bench-tasks-server.log" 2>&1 &
  server=$!
  sleep 1
  say "tasks, separate worker on the emulator (DynamoDB + SQS)"
  "$VENV/bin/python" "$ROOT/infra/task_latency_bench.py" "http://127.0.0.1:$bench_port/mcp" "$STATE_DIR/bench-tasks-worker.log" || true
  kill "$server" "$worker"
)
