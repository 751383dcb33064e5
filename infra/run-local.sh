#!/usr/bin/env bash
# Runs the starter function locally against the emulators, with the same
# environment variables Lambda gets from template.yaml: installs the tools,
# starts moto, creates the table and key, then `cargo lambda watch` serves
# the function as a Lambda Function URL on http://127.0.0.1:9000
# (MCP at http://127.0.0.1:9000/lambda-url/$FUNCTION/mcp), rebuilding on change,
# with streamed responses (MCP_TRANSPORT=buffered for the HTTP API's shape)
# and up to MCP_WATCH_CONCURRENCY (default 8) instances, so requests are
# served while subscriptions/listen streams are open.
# Ctrl-C stops the function; infra/stop.sh stops it and the emulator.
#
# With --sign-in, a client signs in as it does at a deployed stack
# (AuthMode=oauth), given only the URL it prints: on the emulators, an
# OpenID provider standing in for Cognito (tests/clients/provider.mjs, whose
# development sign-in page takes any login and password), the stack's
# authorization server, and the starter's debug build on
# http://127.0.0.1:3000/mcp (MCP_LOCAL_ADDR moves it) in front of both,
# verifying the authorization server's tokens. Ctrl-C stops all three.
#
#   bash infra/run-local.sh             # cargo lambda watch, no sign-in
#   bash infra/run-local.sh --sign-in   # sign-in, as deployed
source "$(dirname "$0")/common.sh"
cd "$ROOT"
case "${1:-}" in
  "") sign_in=0 ;;
  --sign-in) sign_in=1 ;;
  *) echo "usage: bash infra/run-local.sh [--sign-in]" >&2; exit 2 ;;
esac
bash infra/start-emulators.sh
bash infra/bootstrap.sh
# shellcheck disable=SC1091
source "$STATE_DIR/local.env"
export PATH="$VENV/bin:$PATH"

if [ "$sign_in" = 1 ]; then
  addr="${MCP_LOCAL_ADDR:-127.0.0.1:3000}"
  origin="http://$addr"
  if curl -s -o /dev/null "$origin/"; then
    echo "run-local: something already answers at $origin: stop it, or set MCP_LOCAL_ADDR=127.0.0.1:<another port>" >&2
    exit 1
  fi
  node_bin="$(node22)" || { echo "run-local: the OpenID provider needs Node.js 22.19 or later (above)" >&2; exit 1; }
  npm_ci_pinned "$ROOT/tests/clients" ||
    { echo "run-local: npm ci in tests/clients failed (above): the OpenID provider is one of its packages" >&2; exit 1; }
  debug_build -q || { echo "run-local: the authorization server or the $FUNCTION function did not build (above)" >&2; exit 1; }
  out="$STATE_DIR/sign-in"
  mkdir -p "$out"
  pids=() logs=()
  stop_all() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Gone before the script ends: their ports are free again.
    wait || true
    rm -f "$STATE_DIR/sign-in.pid"
  }
  trap stop_all EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  echo $$ >"$STATE_DIR/sign-in.pid"
  start_sign_in_stack "$FUNCTION" "$addr" "$node_bin" "$out" ||
    { echo "run-local: the sign-in stack did not start (above); logs in ${out#"$ROOT"/}/" >&2; exit 1; }
  say "MCP server: $origin/mcp"
  say "give a client that URL and nothing else; it registers itself, your browser shows the consent page, then the test OpenID provider's sign-in:"
  say "  sign in with any login and any password (e.g. alice / test): it is a development stand-in for Cognito, and the login becomes your user id"
  say "logs in ${out#"$ROOT"/}/ (provider.log, authorization.log, mcp.log); tasks go to the emulated queue: run infra/run-worker.sh beside it; Ctrl-C stops all three"
  # Until one of them stops, or Ctrl-C.
  wait -n "${pids[@]}" || true
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null && continue
    echo "run-local: a process stopped; the last lines of ${logs[$i]}:" >&2
    tail -n 20 "${logs[$i]}" >&2
  done
  exit 1
fi

# cargo lambda's local Function URL is served on loopback; let it through
# (Lambda always allows the API's own domain, so the fixtures pass too).
export MCP_ALLOWED_HOSTS="${MCP_ALLOWED_HOSTS:-127.0.0.1,localhost}"
echo $$ > "$STATE_DIR/cargo-lambda.pid"
say "serving the starter function on http://127.0.0.1:9000/lambda-url/$FUNCTION/mcp (tasks go to the emulated queue: run infra/run-worker.sh beside it)"
export MCP_TRANSPORT="${MCP_TRANSPORT:-streaming}"
exec cargo lambda watch -A 127.0.0.1 -P 9000 --concurrency "${MCP_WATCH_CONCURRENCY:-8}" --package "$FUNCTION"
