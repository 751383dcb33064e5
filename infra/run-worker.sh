#!/usr/bin/env bash
# Runs a task worker locally against the emulators: the same binary as the
# worker Lambda function, polling the task queue and its dead-letter queue
# instead of receiving SQS events. Pair it with a server using the same
# queue (infra/run-local.sh, or `source .tmp/local.env && cargo run -p starter`).
#   bash infra/run-worker.sh                 # the starter's worker
#   bash infra/run-worker.sh everything-worker
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bin="${1:-$FUNCTION-worker}"
bash infra/start-emulators.sh
bash infra/bootstrap.sh
# shellcheck disable=SC1091
source "$STATE_DIR/local.env"
echo $$ > "$STATE_DIR/worker.pid"
say "running $bin against $MCP_TASK_QUEUE_URL"
exec cargo run --locked --quiet --bin "$bin"
