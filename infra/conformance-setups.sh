#!/usr/bin/env bash
# The official MCP conformance suite (infra/conformance.sh: the core and
# tasks scenarios at 2026-07-28, and the 2025-11-25 scenarios a 2025-era
# client sees) against the everything function, in the three set-ups the
# test command proves: zero set-up (memory, an in-process key and worker);
# the Lambda shape (KMS, DynamoDB and SQS in the emulator, the task worker
# a process of its own polling the queue); and two instances sharing only
# the emulator's table behind infra/split_proxy.py. Any failing check fails
# the run. Writes the number of passed checks to
# $STATE_DIR/conformance-passed.txt.
#
#   bash infra/conformance-setups.sh   # after infra/install-tools.sh, infra/start-emulators.sh
#                                      # and infra/bootstrap.sh, and a debug build of everything
source "$(dirname "$0")/common.sh"
cd "$ROOT"

[ -f "$STATE_DIR/local.env" ] && pid_alive "$STATE_DIR/moto.pid" ||
  { echo "conformance-setups: the emulator is not running and bootstrapped: run bash infra/start-emulators.sh and bash infra/bootstrap.sh" >&2; exit 1; }

cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${worker_pid:-}" ] && kill "$worker_pid" 2>/dev/null || true
  for name in everything-aws everything-worker everything-other split-proxy; do
    [ -f "$STATE_DIR/$name.pid" ] && kill "$(cat "$STATE_DIR/$name.pid")" 2>/dev/null || true
    rm -f "$STATE_DIR/$name.pid"
  done
}
trap cleanup EXIT

debug_build
conformance_passed=0
# conformance NAME MODE PORT: runs the suite (infra/conformance.sh) in MODE
# against the server on PORT; any failing check fails the run, and so
# does any skipped one, but the tasks scenario the suite always skips
# (tasks-status-notifications).
conformance() {
  local name="$1" mode="$2" port="$3"
  local max_skipped=0
  [ "$mode" = tasks ] && max_skipped=1
  if ! CONFORMANCE_MAX_SKIPPED="$max_skipped" bash infra/conformance.sh "http://127.0.0.1:$port/mcp" "$mode" "$STATE_DIR/conformance-$name" \
    | tee "$STATE_DIR/conformance-$name.txt"; then
    echo "conformance ($name) failed: $(tail -n 1 "$STATE_DIR/conformance-$name.txt")" >&2
    exit 1
  fi
  local last
  last="$(tail -n 1 "$STATE_DIR/conformance-$name.txt")"
  if [ -n "${CONFORMANCE_EXPECTED_FAILURES:-}" ]; then
    say "conformance ($name) as expected, failing only $CONFORMANCE_EXPECTED_FAILURES: ${last#conformance: }"
  else
    say "conformance ($name) clean: ${last#conformance: }"
  fi
  conformance_passed=$((conformance_passed + $(echo "$last" | grep -Eo '[0-9]+ passed' | cut -d' ' -f1)))
}
port="${CONFORMANCE_PORT:-3939}"

# Zero set-up: memory, an in-process key and an in-process task worker;
# listen streams on the in-memory feed.
MCP_LOCAL_ADDR="127.0.0.1:$port" "$TARGET/debug/everything" >"$STATE_DIR/everything.log" 2>&1 &
server_pid=$!
conformance core core "$port"
conformance tasks-in-process tasks "$port"
conformance legacy legacy "$port"
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""

# Where answers are whole (Transport=buffered), a server cannot ask a
# 2025-era client anything mid-call: exactly the four scenarios that need
# it fail, each call refused by name rather than left hanging.
MCP_LOCAL_ADDR="127.0.0.1:$port" MCP_TRANSPORT=buffered "$TARGET/debug/everything" >"$STATE_DIR/everything-buffered.log" 2>&1 &
server_pid=$!
CONFORMANCE_EXPECTED_FAILURES="tools-call-sampling tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums" \
  conformance legacy-buffered legacy "$port"
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""

# The Lambda shape: KMS, DynamoDB and SQS in the emulator, the task worker
# in a process of its own polling the queue.
(
  # shellcheck disable=SC1091
  source "$STATE_DIR/local.env"
  "$TARGET/debug/everything-worker" >"$STATE_DIR/everything-worker.log" 2>&1 &
  echo $! > "$STATE_DIR/everything-worker.pid"
  MCP_LOCAL_ADDR="127.0.0.1:$port" "$TARGET/debug/everything" >"$STATE_DIR/everything-aws.log" 2>&1 &
  echo $! > "$STATE_DIR/everything-aws.pid"
)
server_pid="$(cat "$STATE_DIR/everything-aws.pid")"
worker_pid="$(cat "$STATE_DIR/everything-worker.pid")"
conformance core-emulated core "$port"
conformance tasks-emulated tasks "$port"
conformance legacy-emulated legacy "$port"
grep -q "task run started" "$STATE_DIR/everything-worker.log" || { echo "the separate worker ran no task" >&2; exit 1; }

# Two instances sharing only the emulator's table: every listen stream is
# held by the first process, every other request (the suite's trigger
# calls among them) served by the second, so each list change reaches the
# stream through the table's change feed.
other_port=$((port + 1))
proxy_port=$((port + 2))
(
  # shellcheck disable=SC1091
  source "$STATE_DIR/local.env"
  MCP_LOCAL_ADDR="127.0.0.1:$other_port" "$TARGET/debug/everything" >"$STATE_DIR/everything-other.log" 2>&1 &
  echo $! > "$STATE_DIR/everything-other.pid"
)
"$VENV/bin/python" infra/split_proxy.py "$proxy_port" "http://127.0.0.1:$port/mcp" "http://127.0.0.1:$other_port/mcp" \
  2>"$STATE_DIR/split-proxy.log" &
echo $! > "$STATE_DIR/split-proxy.pid"
conformance core-two-instances core "$proxy_port"
grep -q 'subscriptions/listen .* -> '"$port" "$STATE_DIR/split-proxy.log" \
  && grep -q 'test_trigger_tool_change -> '"$other_port" "$STATE_DIR/split-proxy.log" \
  || { echo "the listen streams and the trigger calls did not go to different instances (see $STATE_DIR/split-proxy.log)" >&2; exit 1; }
# 2025-era clients: each session minted by one process and used on the
# other, every answer to the server's own requests taken by the process
# that is not holding the call.
conformance legacy-two-instances legacy "$proxy_port"
grep -q 'tools/call test_elicitation -> '"$port" "$STATE_DIR/split-proxy.log" \
  && grep -q 'answer  -> '"$other_port" "$STATE_DIR/split-proxy.log" \
  && grep -q 'initialize  -> '"$other_port" "$STATE_DIR/split-proxy.log" \
  || { echo "the legacy calls, their answers and initialize did not go to different instances (see $STATE_DIR/split-proxy.log)" >&2; exit 1; }
# The clients a user runs, the same way.
if ! bash infra/legacy-clients.sh "http://127.0.0.1:$proxy_port/mcp" | tee "$STATE_DIR/legacy-clients.txt"; then
  echo "the 2025-era clients failed: $(tail -n 1 "$STATE_DIR/legacy-clients.txt")" >&2
  exit 1
fi
conformance_passed=$((conformance_passed + $(tail -n 1 "$STATE_DIR/legacy-clients.txt" | grep -Eo '[0-9]+ passed' | cut -d' ' -f1)))
echo "$conformance_passed" >"$STATE_DIR/conformance-passed.txt"
say "conformance: $conformance_passed checks passed in three set-ups"
