#!/usr/bin/env bash
# Sends one API Gateway or Function URL event from tests/fixtures/ to the
# function that infra/run-local.sh is serving, e.g.
#   bash infra/invoke.sh apigw-v2-tools-list.json
source "$(dirname "$0")/common.sh"
cd "$ROOT"
fixture="${1:-apigw-v2-tools-list.json}"
exec "$VENV/bin/cargo-lambda" lambda invoke "$FUNCTION" -A 127.0.0.1 -P 9000 --data-file "tests/fixtures/$fixture"
