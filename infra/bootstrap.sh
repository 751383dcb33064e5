#!/usr/bin/env bash
# Creates, in the running emulator, the DynamoDB table (TTL on), the KMS
# key and alias, and the task queues as template.yaml declares them, and writes the
# environment the function gets in Lambda to .tmp/local.env. Safe to run
# twice: what exists is kept.
source "$(dirname "$0")/common.sh"
emulator_env
"$VENV/bin/python" "$ROOT/infra/bootstrap.py" --template "$ROOT/template.yaml" --stack "$LOCAL_STACK" \
  --env-file "$STATE_DIR/local.env" --table-json "$STATE_DIR/table.json"
