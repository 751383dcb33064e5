#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs the tools, starts the
# emulator, creates the table and key from template.yaml, runs every Rust
# test (unit, HTTP, Lambda events, KMS and DynamoDB through the emulator),
# checks the template (sam validate --lint, cfn-lint, the translated-template
# test) and runs the official MCP conformance suite against the everything
# function. Stops what it started.
source "$(dirname "$0")/common.sh"
cd "$ROOT"

bash infra/install-tools.sh
started_emulator=0
if ! pid_alive "$STATE_DIR/moto.pid"; then started_emulator=1; fi
bash infra/start-emulators.sh
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  if [ "$started_emulator" = 1 ]; then bash infra/stop.sh; fi
}
trap cleanup EXIT
# A clean emulator for the run.
curl -fsS -X POST "http://$MOTO_HOST:$MOTO_PORT/moto-api/reset" >/dev/null
bash infra/bootstrap.sh

say "cargo test (unit, HTTP, Lambda events, emulator-backed)"
(
  emulator_env
  export MCP_TEST_TABLE_DEFINITION="$STATE_DIR/table.json"
  cargo test --workspace --locked 2>&1 | tee "$STATE_DIR/cargo-test.log"
)
cargo_passed="$(awk '/^test result:/ {n += $4} END {print n + 0}' "$STATE_DIR/cargo-test.log")"

say "template: sam validate --lint, cfn-lint, translated-template test"
"$VENV/bin/sam" validate --lint --template template.yaml
"$VENV/bin/cfn-lint" template.yaml
"$VENV/bin/pytest" -q -p no:cacheprovider tests/template | tee "$STATE_DIR/pytest.log"
pytest_passed="$(grep -Eo '[0-9]+ passed' "$STATE_DIR/pytest.log" | tail -n 1 | cut -d' ' -f1)"

say "conformance: the official MCP suite against the everything function"
runner="$ROOT/../shared/tools/conformance/run-conformance.sh"
if [ ! -x "$runner" ] && [ ! -f "$runner" ]; then
  if [ "${CI:-}" = true ]; then echo "conformance runner not found at $runner" >&2; exit 1; fi
  say "skipped: no conformance runner beside the repository (../shared/tools/conformance)"
  echo "summary: $((cargo_passed + pytest_passed)) passed, 0 failed" | tee "$STATE_DIR/summary.txt"
  exit 0
fi
port="${CONFORMANCE_PORT:-3939}"
cargo build --locked -p everything
MCP_LOCAL_ADDR="127.0.0.1:$port" "$ROOT/target/debug/everything" >"$STATE_DIR/everything.log" 2>&1 &
server_pid=$!
bash "$runner" "http://127.0.0.1:$port/mcp" "$STATE_DIR/conformance" | tee "$STATE_DIR/conformance.txt"
last="$(tail -n 1 "$STATE_DIR/conformance.txt")"
case "$last" in
  "conformance: "*" passed, 0 failed") say "conformance clean: ${last#conformance: }" ;;
  *) echo "conformance failed: $last" >&2; exit 1 ;;
esac
conformance_passed="$(echo "$last" | grep -Eo '[0-9]+ passed' | cut -d' ' -f1)"
say "cargo tests: $cargo_passed passed; template tests: $pytest_passed passed; conformance checks: $conformance_passed passed"
echo "summary: $((cargo_passed + pytest_passed + conformance_passed)) passed, 0 failed" | tee "$STATE_DIR/summary.txt"
