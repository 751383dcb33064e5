#!/usr/bin/env bash
# Bounded load on loopback: the starter (release build) backed by the
# emulators (DynamoDB for baskets, KMS for sealed requestState), driven by
# tests/load at CALLERS concurrent callers for SECONDS: baskets shared by
# four callers each (appends, views) and three-round plan_reminder calls.
# Reports HTTP statuses, JSON-RPC errors, p50/p99 latency, lost updates
# and the server's RSS at start and end; fails on any 5xx, -32603 or lost
# update. Not part of the test command (it takes minutes).
#   bash infra/load.sh [SECONDS] [CALLERS]
source "$(dirname "$0")/common.sh"
cd "$ROOT"
SECONDS_OF_LOAD="${1:-60}"
CALLERS="${2:-64}"
started_emulator=0
pid_alive "$STATE_DIR/moto.pid" || started_emulator=1
bash infra/start-emulators.sh
bash infra/bootstrap.sh
say "building the starter (release) and the load driver"
cargo build --locked --release -p "$FUNCTION"
cargo build --locked --profile fuzz -p e2e --bin load
port="$(free_port)"
(
  # shellcheck disable=SC1091
  source "$STATE_DIR/local.env"
  export MCP_LOG_LEVEL=warn
  exec env MCP_LOCAL_ADDR="127.0.0.1:$port" "$TARGET/release/$FUNCTION"
) >"$STATE_DIR/load-server.log" 2>&1 &
server_pid=$!
# The server, and the emulator when this script started it.
trap 'kill "$server_pid" 2>/dev/null || true; [ "$started_emulator" = 0 ] || bash infra/stop.sh >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS -o /dev/null -X POST "http://127.0.0.1:$port/mcp" 2>/dev/null && break
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
say "$CALLERS callers for $SECONDS_OF_LOAD s against pid $server_pid on port $port"
"$TARGET/fuzz/load" "127.0.0.1:$port" "$SECONDS_OF_LOAD" "$CALLERS" "$server_pid" | tee "$STATE_DIR/load.txt"
