#!/usr/bin/env bash
# What the emulator-backed Rust tests need when `cargo test` runs with
# nothing set up (infra/test.sh sets it all up itself): starts the emulator
# unless it runs (installing it into .venv the first time: a few minutes),
# creates template.yaml's table, key and queues in it, and prints the
# environment the tests use, one NAME=VALUE a line, on stdout; progress and
# errors go to stderr. The emulator is left running: `bash infra/stop.sh`.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/start-emulators.sh >&2
bash infra/bootstrap.sh >&2
emulator_env
for name in AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
  AWS_EC2_METADATA_DISABLED MCP_AWS_ATTEMPT_TIMEOUT_MS MCP_AWS_OPERATION_TIMEOUT_MS; do
  echo "$name=${!name}"
done
echo "MCP_TEST_TABLE_DEFINITION=$STATE_DIR/table.json"
