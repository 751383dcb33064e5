#!/usr/bin/env bash
# The fault test under load (tests/fault_load), longer than the test
# command runs it: LOAD times the load at 0%, 10% and 30% of AWS calls
# faulted, seeded with SEED. Prints each rate's tally (requests by class,
# faults drawn, tasks accepted, completed, cancelled and run more than
# once, and every violation) and fails as the test does. The test command
# runs the same test at load 1 (about 40 s).
#   bash infra/fault-run.sh [LOAD] [SEED]
source "$(dirname "$0")/common.sh"
cd "$ROOT"
LOAD="${1:-5}"
SEED="${2:-44}"
fail() { say "$*" >&2; exit 1; }
case "$LOAD$SEED" in
  *[!0-9]*) fail "usage: bash infra/fault-run.sh [LOAD] [SEED] (whole numbers; got '$LOAD' '$SEED')" ;;
esac
mkdir -p "$STATE_DIR"
say "fault test at load x$LOAD, seed $SEED (the tests start the emulator they need)"
# One rate at a time: each has the machine to itself, so the tallies
# compare; the report lines are the test's own (it prints them).
MCP_FAULT_LOAD="$LOAD" MCP_FAULT_SEED="$SEED" \
  cargo test --locked -p e2e --test fault_load -- --nocapture --test-threads 1 2>&1 |
  tee "$STATE_DIR/fault-run.txt" | grep -E '== fault load|^  |^test result' || true
grep -q '^test result: ok' "$STATE_DIR/fault-run.txt" || fail "the fault test failed: $STATE_DIR/fault-run.txt has its whole output"
