#!/usr/bin/env bash
# Builds the function for Lambda (arm64, release) the way `sam build` does,
# through cargo-lambda and zig from .venv, and checks the artifact. Slow on
# two cores; CI runs it when it has time left. Safe to run twice.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/install-tools.sh
export PATH="$VENV/bin:$PATH"
say "sam build (cargo lambda build --release --arm64 for the starter function)"
sam build --template template.yaml --build-dir "$ROOT/.aws-sam/build"
artifact="$ROOT/.aws-sam/build/McpFunction/bootstrap"
[ -f "$artifact" ] || { echo "sam build produced no bootstrap at $artifact" >&2; exit 1; }
say "built $artifact ($(du -h "$artifact" | cut -f1))"
