#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs the tools, starts the
# emulator, creates the table and key from template.yaml, checks formatting
# and lints (infra/lint.sh: cargo fmt, clippy -D warnings), runs every Rust
# test (unit, HTTP, Lambda events, KMS and DynamoDB through the emulator),
# checks the template (sam validate --lint, cfn-lint, the translated-template
# test) and the workflows (actionlint), proves a fork can rename the
# function and delete every example (infra/fork-test.sh), smoke-tests the
# function as the local server and under cargo lambda watch, runs the
# README's curl examples and the MCP Inspector (its CLI, and its web UI in
# headless Chromium) against the local server, signs real clients in through
# the stack's own authorization server (infra/oauth-clients.sh), and runs the official MCP
# conformance suite (core and tasks scenarios) against the everything function
# in three set-ups (infra/conformance-setups.sh); builds and tests
# mcp-stateless and the starter without the 2025 era (`--no-default-features`);
# last, `cargo test
# --workspace` again with nothing set up, as a new user types it. Stops what
# it started.
source "$(dirname "$0")/common.sh"
cd "$ROOT"

# The debug build (3 GB from a clean clone, measured), the fork's and the
# release builds, with room to spare.
check_disk 8
bash infra/install-tools.sh
started_emulator=0
if ! pid_alive "$STATE_DIR/moto.pid"; then started_emulator=1; fi
bash infra/start-emulators.sh
cleanup() {
  [ -n "${client_server:-}" ] && kill "$client_server" 2>/dev/null || true
  if [ "$started_emulator" = 1 ]; then bash infra/stop.sh; fi
}
trap cleanup EXIT
# A clean emulator for the run.
curl -fsS -X POST "http://$MOTO_HOST:$MOTO_PORT/moto-api/reset" >/dev/null
bash infra/bootstrap.sh

say "gate: formatting and lints (infra/lint.sh)"
bash infra/lint.sh

say "cargo test (unit, HTTP, Lambda events, emulator-backed)"
(
  emulator_env
  export MCP_TEST_TABLE_DEFINITION="$STATE_DIR/table.json"
  cargo test --workspace --locked 2>&1 | tee "$STATE_DIR/cargo-test.log"
)
cargo_passed="$(awk '/^test result:/ {n += $4} END {print n + 0}' "$STATE_DIR/cargo-test.log")"

say "without the 2025 era: mcp-stateless and the starter built and tested without their legacy feature"
(
  emulator_env
  cargo test --locked -p mcp-stateless -p starter --no-default-features 2>&1 | tee "$STATE_DIR/cargo-test-modern-only.log"
)
if grep -E '^warning' "$STATE_DIR/cargo-test-modern-only.log"; then
  echo "the build without the legacy feature has warnings (above; log: $STATE_DIR/cargo-test-modern-only.log)" >&2
  exit 1
fi
modern_only_passed="$(awk '/^test result:/ {n += $4} END {print n + 0}' "$STATE_DIR/cargo-test-modern-only.log")"

say "fuzz smoke: 3,000 inputs per target, fresh seed (infra/fuzz.sh runs 10^6)"
cargo run --locked -q -p e2e --bin fuzz -- all 3000 | tee "$STATE_DIR/fuzz-smoke.txt"

say "template: sam validate --lint, cfn-lint, translated-template test; the scripts' MCP client (tests/infra)"
"$VENV/bin/sam" validate --lint --template template.yaml
"$VENV/bin/cfn-lint" template.yaml
"$VENV/bin/pytest" -q -p no:cacheprovider tests/template tests/infra | tee "$STATE_DIR/pytest.log"
pytest_passed="$(grep -Eo '[0-9]+ passed' "$STATE_DIR/pytest.log" | tail -n 1 | cut -d' ' -f1)"

say "supply chain: cargo-deny (licenses, bans, sources; advisories where the database is reachable)"
bash infra/supply-chain.sh

say "workflows: actionlint"
bash infra/lint-workflows.sh

say "fork: rename, delete the example tools, build and test what remains"
bash infra/fork-test.sh
fork_passed="$(cat "$STATE_DIR/fork-passed.txt")"

say "upgrade: a renamed fork merges upstream changes without a conflict"
bash infra/upgrade-test.sh
upgrade_passed=1

say "smoke: the function as the local server and under cargo lambda watch"
bash infra/smoke.sh --local | tee "$STATE_DIR/smoke.txt"
smoke_passed="$(awk '/^smoke: [0-9]+ passed/ {n += $2} END {print n + 0}' "$STATE_DIR/smoke.txt")"

say "README clients: the curl examples and the MCP Inspector (CLI and web UI), against the local server"
"$VENV/bin/python" infra/readme_snippets.py --check-copies README.md
has_tools() {
  local name
  for name in "$@"; do grep -rqsE "fn $name\b|\"$name\"" "functions/$FUNCTION/src/tools" || return 1; done
}
curl_passed=0 inspector_passed=0
# They call the starter's examples; a fork that deleted them skips them.
if has_tools plan_reminder build_report || has_tools slugify plan_reminder publish_article; then
  client_port="$(free_port)"
  MCP_LOCAL_ADDR="127.0.0.1:$client_port" "$TARGET/debug/$FUNCTION" >"$STATE_DIR/clients-server.log" 2>&1 &
  client_server=$!
  wait_for "http://127.0.0.1:$client_port/" 100 "$STATE_DIR/clients-server.log"
  clients_failed() {
    kill "$client_server" 2>/dev/null || true
    echo "$1 (server log: $STATE_DIR/clients-server.log)" >&2
    exit 1
  }
  if has_tools plan_reminder build_report; then
    bash infra/curl-examples.sh "http://127.0.0.1:$client_port/mcp" | tee "$STATE_DIR/curl-examples.txt" ||
      clients_failed "the README's curl examples failed"
    curl_passed=1
  else
    say "README curl examples skipped: plan_reminder or build_report is not among the tools"
  fi
  if has_tools slugify plan_reminder publish_article; then
    bash infra/inspector.sh "http://127.0.0.1:$client_port/mcp" | tee "$STATE_DIR/inspector.txt" ||
      clients_failed "the MCP Inspector checks failed: $(tail -n 1 "$STATE_DIR/inspector.txt")"
    inspector_passed="$(tail -n 1 "$STATE_DIR/inspector.txt" | cut -d' ' -f2)"
  else
    say "MCP Inspector checks skipped: slugify, plan_reminder or publish_article is not among the tools"
  fi
  kill "$client_server" 2>/dev/null || true
else
  say "README client examples skipped: the starter's example tools are gone"
fi

say "sign-in: real clients given only the URL, through the stack's own authorization server (infra/oauth-clients.sh)"
bash infra/oauth-clients.sh | tee "$STATE_DIR/oauth-clients.txt" ||
  { echo "the sign-in checks failed: $(tail -n 1 "$STATE_DIR/oauth-clients.txt")" >&2; exit 1; }
oauth_passed="$(tail -n 1 "$STATE_DIR/oauth-clients.txt" | grep -Eo '[0-9]+ passed' | cut -d' ' -f1)"

say "conformance: the official MCP suite against the everything function, in three set-ups (infra/conformance-setups.sh)"
bash infra/conformance-setups.sh
conformance_passed="$(cat "$STATE_DIR/conformance-passed.txt")"

say "cargo test --workspace as a new user types it: no emulator running, no AWS or MCP variables"
# The same tests must pass: those that need the emulator start it
# (infra/emulator-for-tests.sh). Only when this run started the emulator,
# so that one a user had running before stays as it is.
if [ "$started_emulator" = 1 ]; then
  bash infra/stop.sh >/dev/null
  env -i HOME="$HOME" PATH="$PATH" ${USER:+USER="$USER"} ${CARGO_HOME:+CARGO_HOME="$CARGO_HOME"} \
    ${RUSTUP_HOME:+RUSTUP_HOME="$RUSTUP_HOME"} ${CARGO_TARGET_DIR:+CARGO_TARGET_DIR="$CARGO_TARGET_DIR"} \
    ${CARGO_INCREMENTAL:+CARGO_INCREMENTAL="$CARGO_INCREMENTAL"} ${MOTO_PORT:+MOTO_PORT="$MOTO_PORT"} \
    cargo test --workspace --locked >"$STATE_DIR/cargo-test-bare.log" 2>&1 ||
    { tail -n 40 "$STATE_DIR/cargo-test-bare.log" >&2; echo "cargo test --workspace failed with nothing set up (log: $STATE_DIR/cargo-test-bare.log)" >&2; exit 1; }
  pid_alive "$STATE_DIR/moto.pid" || { echo "the emulator-backed tests did not start the emulator themselves" >&2; exit 1; }
  bare_passed="$(awk '/^test result:/ {n += $4} END {print n + 0}' "$STATE_DIR/cargo-test-bare.log")"
  [ "$bare_passed" = "$cargo_passed" ] ||
    { echo "cargo test --workspace with nothing set up passed $bare_passed tests, not the $cargo_passed of the set-up run" >&2; exit 1; }
  say "cargo test --workspace with nothing set up: the same $bare_passed tests passed; the tests started the emulator"
else
  say "skipped: an emulator was running before the test command, and it stays as it was"
fi

say "cargo tests: $cargo_passed passed; without the 2025 era: $modern_only_passed passed; template and script tests: $pytest_passed passed; fork tests: $fork_passed passed; upgrade checks: $upgrade_passed passed; smoke checks: $smoke_passed passed; curl examples: $curl_passed passed; Inspector checks: $inspector_passed passed; sign-in checks: $oauth_passed passed; conformance checks: $conformance_passed passed"
echo "summary: $((cargo_passed + modern_only_passed + pytest_passed + fork_passed + upgrade_passed + smoke_passed + curl_passed + inspector_passed + oauth_passed + conformance_passed)) passed, 0 failed" | tee "$STATE_DIR/summary.txt"
