#!/usr/bin/env bash
# Builds the functions for Lambda (arm64, release) the way `sam build` does,
# through cargo-lambda and zig from .venv, and checks the artifact. Slow on
# two cores; CI runs it when it has time left. Safe to run twice.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/install-tools.sh
export PATH="$VENV/bin:$PATH"
say "sam build (cargo lambda build --release --arm64 for the starter and its task worker)"
sam build --template template.yaml --build-dir "$ROOT/.aws-sam/build"
for function in McpFunction TaskWorkerFunction; do
  artifact="$ROOT/.aws-sam/build/$function/bootstrap"
  [ -f "$artifact" ] || { echo "sam build produced no bootstrap at $artifact" >&2; exit 1; }
  say "built $artifact ($(du -h "$artifact" | cut -f1))"
done
