#!/usr/bin/env bash
# Builds the functions for Lambda (arm64, release) the way `sam build` does,
# through cargo-lambda and zig from .venv, and checks the artifacts: present,
# and the request function started under qemu-user and smoke-tested. Slow
# on two cores; CI runs it when it has time left. Safe to run twice.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
bash infra/install-tools.sh
export PATH="$VENV/bin:$PATH"
say "sam build (cargo lambda build --release --arm64 for the starter, its task worker and the authorization server)"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="$(lambda_rustflags)" \
  sam build --template template.yaml --build-dir "$ROOT/.aws-sam/build"
for function in McpFunction TaskWorkerFunction AuthorizationFunction; do
  artifact="$ROOT/.aws-sam/build/$function/bootstrap"
  [ -f "$artifact" ] || { echo "sam build produced no bootstrap at $artifact" >&2; exit 1; }
  say "built $artifact ($(du -h "$artifact" | cut -f1))"
done

# qemu-user runs the arm64 artifact here (Debian packages; root installs).
arm64_loader=/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1
if ! command -v qemu-aarch64 >/dev/null || [ ! -f "$arm64_loader" ]; then
  apt_install qemu-user libc6-arm64-cross || true
fi
if command -v qemu-aarch64 >/dev/null && [ -f "$arm64_loader" ]; then
  bash infra/smoke.sh --artifact "$ROOT/.aws-sam/build/McpFunction/bootstrap"
else
  say "NOT STARTED: the arm64 artifact was built but not run; qemu-user and libc6-arm64-cross (Debian packages) could not be installed" >&2
fi
