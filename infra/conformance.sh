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
#     MODE legacy: the 2025-11-25 scenarios (--suite active at that revision),
#                 as a 2025-era client (initialize, Mcp-Session-Id) sees the server
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
spec=2026-07-28
tasks_scenarios="tasks-capability-negotiation tasks-lifecycle tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error
  tasks-mrtr-composition tasks-status-notifications"

node_bin="$(node22)"
cli="$suite_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
npm_ci_pinned "$suite_dir"

# Any HTTP answer means the server is up.
for _ in $(seq 1 150); do
  curl -s -o /dev/null -X POST "$url" && break
  sleep 0.1
done
rm -rf "$out" && mkdir -p "$out/raw"
[ "$mode" = legacy ] && spec=2025-11-25
run() { timeout --kill-after=10 900 "$node_bin" "$cli" server --url "$url" --spec-version "$spec" -o "$out/raw" "$@" >>"$out/suite-output.txt" 2>&1 </dev/null; }
case "$mode" in
  core) run --suite all || true ;;
  tasks) for scenario in $tasks_scenarios; do run --scenario "$scenario" --force || true; done ;;
  legacy) run --suite active || true ;;
  *) echo "MODE must be core, tasks or legacy" >&2; exit 2 ;;
esac
# The suite's exit code mixes failures with crashes; the checks decide.
"$VENV/bin/python" "$ROOT/infra/conformance_summary.py" "$out/raw" "${CONFORMANCE_MAX_SKIPPED:-}"
