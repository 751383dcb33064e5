#!/usr/bin/env bash
# Benchmarks, reported as figures and ratios from one run (never asserted):
# - the Lambda artifacts (cargo lambda build --release --arm64), in MB;
# - side by side with bare rmcp (the shared bench, when it sits beside the
#   repository: ../shared/tools/bench): cold start, req/s, latency, CPU per
#   request, peak RSS and stripped binary size, as ratios from one run, with
#   a second bare rmcp instance as the run's noise control;
# - instructions and heap allocations per request under valgrind
#   (callgrind, DHAT), next to bare rmcp (CPU time per request is noisy on
#   shared cores; instruction counts are not);
# - cold start next to bare rmcp, starts interleaved: process start to the
#   first tools/call answered, and the first call against the second; and
#   peak RSS after 1,000 sequential calls;
# - the function in Lambda mode against a stand-in Runtime API: start to
#   first event answered, peak RSS after 1,000 events;
# - the first request that needs AWS on a cold instance, step by step, next
#   to the same calls warm (emulator);
# - requestState seal + open per round, KMS vs in-process key, and the KMS
#   calls 10,000 rounds cost (emulator);
# - tasks: tools/call to CreateTaskResult and creation to worker start,
#   in-process and on the emulator with a separate worker;
# - a 2025-era client's call beside the modern one (instructions), and the
#   back channel across two processes (answer to resumed call, mailbox
#   reads per waiting second).
# BENCH_PEERS (default "rmcp rmcp2") chooses the shared bench's peers; add
# py-1w ts for the other SDKs (a full run takes about 13 minutes).
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/install-tools.sh
export PATH="$VENV/bin:$PATH"

say "release builds: the starter (native) and the Lambda artifacts (arm64)"
# The native binary the benchmarks run is built as the Lambda artifacts are
# (lambda_rustflags, infra/common.sh: no unwind tables, which nothing reads
# when panics abort; not their target CPU), in a target directory of its
# own so that these flags rebuild nothing else. The target is named so that
# build scripts, which run on this machine, keep their unwind tables.
native="$(rustc -vV | sed -n 's/^host: //p')"
native_flags="CARGO_TARGET_$(echo "$native" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
env CARGO_TARGET_DIR="$TARGET/bench-native" \
  "$native_flags=$(lambda_rustflags | sed 's/-C target-cpu=[^ ]* //')" \
  cargo build --locked --release --target "$native" -p "$FUNCTION" -p authorization 2>&1 | tail -n 1
binary="$TARGET/bench-native/$native/release/$FUNCTION"
if rustup target list --installed | grep -q aarch64-unknown-linux-gnu; then
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="$(lambda_rustflags)" \
    cargo lambda build --release --arm64 -p "$FUNCTION" -p "$FUNCTION-worker" 2>&1 | tail -n 1
  for function in "$FUNCTION:7.0" "$FUNCTION-worker:5.5"; do
    artifact="$TARGET/lambda/${function%:*}/bootstrap"
    say "Lambda artifact ${function%:*} (arm64, stripped): $(awk -v b="$(stat -c %s "$artifact")" 'BEGIN {printf "%.2f MB", b / 1e6}') (target: ${function#*:} MB or less)"
  done
else
  say "skipped the Lambda artifacts: the aarch64-unknown-linux-gnu target is not installed"
fi

shared_bench="$ROOT/../shared/tools/bench/bench.sh"
if [ -f "$shared_bench" ]; then
  # The shared bench drives load with wrk (a Debian package).
  command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  say "side by side with bare rmcp (shared bench; the starter is the server under test)"
  bash "$shared_bench" --setup >"$STATE_DIR/bench-setup.log" 2>&1
  PEERS="${BENCH_PEERS:-rmcp rmcp2}" SUT_NAME="$FUNCTION" SUT_BIN="$binary" \
    bash "$shared_bench" "$binary" 18200 echo 2>&1 | tee "$STATE_DIR/bench-shared.txt" | sed -n '/^|/p;/^bench:/p'
else
  say "skipped the side-by-side run: no shared bench beside the repository"
fi

# Bare rmcp as the shared bench builds it (its --setup), for the runs below.
peer_rmcp="$HOME/.cache/mcp-bench/peers/rust/target/release/perf-rmcp"
peers=()
[ -x "$peer_rmcp" ] && peers+=("rmcp=$peer_rmcp {port}")

# CPU time per request is noisy on shared cores; instructions are not.
if command -v valgrind >/dev/null; then
  say "instructions and allocations per request (callgrind, DHAT), side by side"
  "$VENV/bin/python" "$ROOT/infra/instructions_bench.py" "$FUNCTION=$binary" "${peers[@]}"
  say "the same call from a 2025-era client, in its session, beside the modern call"
  "$VENV/bin/python" "$ROOT/infra/instructions_bench.py" --eras "$FUNCTION=$binary"
else
  say "skipped instructions per request: no valgrind"
fi

say "cold start and peak RSS, local server, side by side (20 interleaved starts each)"
"$VENV/bin/python" "$ROOT/infra/cold_start_bench.py" --starts 20 "$FUNCTION=$binary" "${peers[@]}"

say "Lambda mode (stand-in Runtime API on loopback)"
"$VENV/bin/python" "$ROOT/infra/lambda_mode_bench.py" "$binary"

bash infra/start-emulators.sh
(
  emulator_env
  export MCP_TEST_TABLE_DEFINITION="$STATE_DIR/table.json"
  bash infra/bootstrap.sh >/dev/null
  cargo bench --locked -p e2e --bench first_aws_request 2>"$STATE_DIR/bench-build.log" | grep -v '^$'
  cargo bench --locked -p e2e --bench request_state 2>>"$STATE_DIR/bench-build.log" | grep -v '^$'
  cargo bench --locked -p e2e --bench bearer 2>>"$STATE_DIR/bench-build.log" | grep -v '^$'
)

# Cold starts as Lambda bills them (infra/lambda_cold_start_bench.py): the
# same native binary, the reference function built the same way beside it,
# and the reference as anyone builds it (aws-lc's defaults: jitter entropy
# on, which .cargo/config.toml turns off for this project's builds); then the
# authorization server's cold starts beside the MCP function's, at 256 MB.
env CARGO_TARGET_DIR="$TARGET/bench-native" \
  "$native_flags=$(lambda_rustflags | sed 's/-C target-cpu=[^ ]* //')" \
  cargo build --locked --release --target "$native" -p lambda-reference 2>&1 | tail -n 1
env CARGO_TARGET_DIR="$TARGET/bench-native-aws-lc-defaults" AWS_LC_SYS_NO_JITTER_ENTROPY=0 \
  "$native_flags=$(lambda_rustflags | sed 's/-C target-cpu=[^ ]* //')" \
  cargo build --locked --release --target "$native" -p lambda-reference 2>&1 | tail -n 1
say "cold starts as Lambda bills them: Init and first answers over TLS at Lambda's CPU share, beside a reference function"
"$VENV/bin/python" "$ROOT/infra/lambda_cold_start_bench.py" --project "$binary" \
  --reference "$TARGET/bench-native/$native/release/lambda-reference" \
  --default-reference "$TARGET/bench-native-aws-lc-defaults/$native/release/lambda-reference" \
  --env "$STATE_DIR/local.env" --starts "${COLD_STARTS:-20}" --memory "${COLD_MEMORY:-256,128,512,1024}" \
  --authorization "$TARGET/bench-native/$native/release/authorization" ||
  say "the Lambda cold-start bench did not run (see above)"

# Task latency (debug build of the conformance fixtures): tools/call to
# CreateTaskResult, and task creation to worker start, with the in-process
# worker of `cargo run` and with a separate worker on the emulator's queue.
cargo build --locked -p everything 2>&1 | tail -n 1
bench_port=39392
MCP_LOCAL_ADDR="127.0.0.1:$bench_port" "$TARGET/debug/everything" >"$STATE_DIR/bench-tasks-local.log" 2>&1 &
server=$!
sleep 1
say "tasks, in-process worker (memory)"
"$VENV/bin/python" "$ROOT/infra/task_latency_bench.py" "http://127.0.0.1:$bench_port/mcp" "$STATE_DIR/bench-tasks-local.log" || true
kill "$server"
(
  # shellcheck disable=SC1091
  source "$STATE_DIR/local.env"
  "$TARGET/debug/everything-worker" >"$STATE_DIR/bench-tasks-worker.log" 2>&1 &
  worker=$!
  MCP_LOCAL_ADDR="127.0.0.1:$bench_port" "$TARGET/debug/everything" >"$STATE_DIR/bench-tasks-server.log" 2>&1 &
  server=$!
  sleep 1
  say "tasks, separate worker on the emulator (DynamoDB + SQS)"
  "$VENV/bin/python" "$ROOT/infra/task_latency_bench.py" "http://127.0.0.1:$bench_port/mcp" "$STATE_DIR/bench-tasks-worker.log" || true
  kill "$server" "$worker"
)

# The back channel for 2025-era clients across two processes on the
# emulator (debug build of the conformance fixtures): a client's answer,
# taken by one instance, to the call resuming on the other; and the
# mailbox reads a waiting call makes per second.
say "2025-era back channel: answer on one instance, call resumed on another (emulator)"
"$VENV/bin/python" "$ROOT/infra/back_channel_bench.py" "$TARGET/debug/everything" 50 10 || true
