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
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/start-emulators.sh
bash infra/bootstrap.sh
# shellcheck disable=SC1091
source "$STATE_DIR/local.env"
export PATH="$VENV/bin:$PATH"
# cargo lambda's local Function URL is served on loopback; let it through
# (Lambda always allows the API's own domain, so the fixtures pass too).
export MCP_ALLOWED_HOSTS="${MCP_ALLOWED_HOSTS:-127.0.0.1,localhost}"
echo $$ > "$STATE_DIR/cargo-lambda.pid"
say "serving the starter function on http://127.0.0.1:9000/lambda-url/$FUNCTION/mcp (tasks go to the emulated queue: run infra/run-worker.sh beside it)"
export MCP_TRANSPORT="${MCP_TRANSPORT:-streaming}"
exec cargo lambda watch -A 127.0.0.1 -P 9000 --concurrency "${MCP_WATCH_CONCURRENCY:-8}" --package "$FUNCTION"
