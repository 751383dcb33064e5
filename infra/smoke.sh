#!/usr/bin/env bash
# Smoke test of a running endpoint (infra/smoke.py lists the checks).
#   bash infra/smoke.sh https://abc.execute-api.eu-west-1.amazonaws.com/mcp
#   bash infra/smoke.sh --stack my-stack        # reads the McpEndpointUrl output
#   MCP_SMOKE_TOKEN=eyJ... bash infra/smoke.sh URL   # auth on: also the 401 checks
#   bash infra/smoke.sh --local                 # CI: the function twice, see below
#   bash infra/smoke.sh --artifact BOOTSTRAP    # an arm64 Lambda artifact, see below
# --local runs the function (the debug build) as the local server, then as
# a Lambda function behind `cargo lambda watch --only-lambda-apis` (the
# Lambda runtime path, real Function URL events, the emulator's table, key
# and queue from infra/bootstrap.sh), and smoke-tests both, with
# protected-resource metadata on.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/install-tools.sh >/dev/null
export PATH="$VENV/bin:$PATH"

started=()
stop_started() { for pid in "${started[@]}"; do kill_tree "$pid" 2>/dev/null || true; done; }
trap stop_started EXIT

smoke() { "$VENV/bin/python" "$ROOT/infra/smoke.py" "$@"; }

local_runs() {
  local issuer="https://issuer.example.com/" port watch_port
  # The Lambda run needs the emulator's table, key and queue: started (and
  # stopped again at the end) when it is not running already.
  if ! pid_alive "$STATE_DIR/moto.pid"; then
    bash infra/start-emulators.sh
    trap 'stop_started; bash infra/stop.sh >/dev/null 2>&1 || true' EXIT
    bash infra/bootstrap.sh
  elif [ ! -f "$STATE_DIR/local.env" ]; then
    bash infra/bootstrap.sh
  fi
  port="$(free_port)"
  watch_port="$(free_port)"
  debug_build 2>&1 | tail -n 1
  export MCP_AUTHORIZATION_SERVERS="$issuer"

  say "local server (cargo run)"
  MCP_LOCAL_ADDR="127.0.0.1:$port" MCP_RESOURCE="http://127.0.0.1:$port/mcp" \
    "$TARGET/debug/$FUNCTION" >"$STATE_DIR/smoke-local.log" 2>&1 &
  started+=($!)
  wait_for "http://127.0.0.1:$port/" 100 "$STATE_DIR/smoke-local.log"
  smoke "http://127.0.0.1:$port/mcp" --principal smoke --expect-auth

  say "Lambda runtime under cargo lambda watch (Function URL events, streamed), with the task worker polling the emulator's queue"
  # `_`: the one function cargo lambda routes to when it does not start it.
  local url="http://127.0.0.1:$watch_port/lambda-url/_/mcp"
  (
    # shellcheck disable=SC1091
    source "$STATE_DIR/local.env"
    exec "$TARGET/debug/$FUNCTION-worker"
  ) >"$STATE_DIR/smoke-worker.log" 2>&1 &
  started+=($!)
  # cargo lambda emulates Lambda's control plane and runtime API only; the
  # function is the debug build the other checks ran, not a build of
  # cargo lambda's own with other features (infra/common.sh, debug_build),
  # started as Lambda starts it: two instances, each taking one event at a
  # time from the runtime API, so a request is served while a stream is open.
  cargo lambda watch --only-lambda-apis -A 127.0.0.1 -P "$watch_port" >"$STATE_DIR/smoke-watch.log" 2>&1 &
  started+=($!)
  # Up once it says so: a request to it would be an invocation, waiting for a function.
  for _ in $(seq 1 600); do
    grep -q "starting Runtime server" "$STATE_DIR/smoke-watch.log" && break
    sleep 0.2
  done
  grep -q "starting Runtime server" "$STATE_DIR/smoke-watch.log" ||
    { echo "smoke: cargo lambda watch did not start (the last lines of $STATE_DIR/smoke-watch.log:)" >&2; tail -n 20 "$STATE_DIR/smoke-watch.log" >&2; exit 1; }
  local instance
  for instance in 1 2; do
    (
      # Lambda mode needs the stack's resources: the emulator's (infra/bootstrap.sh).
      # shellcheck disable=SC1091
      source "$STATE_DIR/local.env"
      # What Lambda sets (cargo lambda prints them with --only-lambda-apis).
      export AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$watch_port/.rt" AWS_LAMBDA_FUNCTION_NAME=_ \
        AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1769
      # Streaming, as the template's Transport=streaming deploys it.
      export MCP_ALLOWED_HOSTS="127.0.0.1" MCP_RESOURCE="$url" MCP_TRANSPORT=streaming
      exec "$TARGET/debug/$FUNCTION"
    ) >"$STATE_DIR/smoke-lambda-$instance.log" 2>&1 &
    started+=($!)
  done
  local status=0
  for _ in $(seq 1 600); do
    # Bounded: behind --only-lambda-apis a request waits for a function to take it.
    status="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST "$url" -H 'Content-Type: application/json' -d '{}' || true)"
    [ "$status" != 000 ] && [ "$status" != 502 ] && [ "$status" != 504 ] && break
    sleep 0.5
  done
  smoke "$url" --expect-auth
}

# --artifact runs an arm64 bootstrap as sam build packages it (release,
# linked without unwind tables) as the local server under qemu-user, with
# zero set-up, and smoke-tests it: the code that ships, started and
# answering, not only built. Needs qemu-aarch64 and the arm64 C library
# (Debian's qemu-user and libc6-arm64-cross; infra/build.sh installs them).
artifact_run() {
  local port
  port="$(free_port)"
  say "the arm64 artifact $1 under qemu-user"
  MCP_LOCAL_ADDR="127.0.0.1:$port" MCP_RESOURCE="http://127.0.0.1:$port/mcp" \
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$1" >"$STATE_DIR/smoke-artifact.log" 2>&1 &
  started+=($!)
  wait_for "http://127.0.0.1:$port/" 200 "$STATE_DIR/smoke-artifact.log"
  smoke "http://127.0.0.1:$port/mcp" --principal smoke
}

case "${1:-}" in
  --local) local_runs ;;
  --artifact) artifact_run "${2:?usage: smoke.sh --artifact BOOTSTRAP}" ;;
  --stack)
    stack="${2:?usage: smoke.sh --stack NAME}"
    url="$("$VENV/bin/python" -c 'import boto3, sys
outputs = boto3.client("cloudformation").describe_stacks(StackName=sys.argv[1])["Stacks"][0].get("Outputs", [])
print(next(o["OutputValue"] for o in outputs if o["OutputKey"] == "McpEndpointUrl"))' "$stack")"
    smoke "$url" ;;
  http*) smoke "$1" ;;
  *) echo "usage: smoke.sh URL | --stack NAME | --local | --artifact BOOTSTRAP" >&2; exit 2 ;;
esac
