#!/usr/bin/env bash
# The whole test suite, from a fresh machine, in stages that each print how
# long they took (docs/testing.md lists them with the last fresh clone's
# figures):
#   tools       the pinned Python tools (.venv) and cargo-deny
#   lint        cargo fmt, clippy -D warnings, rustdoc -D warnings (infra/lint.sh)
#   build       one debug build of every library, binary and test; later
#               stages run these binaries and build nothing again
#   rust        `cargo test --workspace` as a new user types it: no emulator
#               running, no AWS or MCP variables; the emulator-backed tests
#               start the emulator themselves (infra/emulator-for-tests.sh)
#   then two lanes side by side, each with a log of its own:
#   - compile:  mcp-stateless and the starter without the 2025 era
#               (--no-default-features); the fuzzer's smoke; a fork that
#               renames the function, deletes every example and pastes the
#               README's tool, prompt, resources and task and docs/tools.md's
#               task with a side effect (infra/fork-test.sh); a
#               renamed fork merging an upstream release (infra/upgrade-test.sh)
#   - serve:    the template (sam validate --lint, cfn-lint, its tests) and
#               the scripts' MCP client; cargo-deny; actionlint; the starter
#               as the local server and under cargo lambda watch
#               (infra/smoke.sh); the README's curl examples and the MCP
#               Inspector (CLI and web UI); real clients signing in through
#               the stack's own authorization server (infra/oauth-clients.sh:
#               SDK clients, the Inspector, the conformance suite's
#               authorization scenarios, Claude Code and Gemini CLI);
#               the official MCP conformance suite in three set-ups
#               (infra/conformance-setups.sh)
# The lanes share the emulator, which `rust` started; nothing in `serve`
# compiles. Stops what it started.
#
#   bash infra/test.sh             # everything
#   bash infra/test.sh lint rust   # only these stages (and what they need)
#
# Stages: tools lint build rust modern fuzz fork upgrade template
# supply-chain workflows smoke clients sign-in conformance.
source "$(dirname "$0")/common.sh"
cd "$ROOT"

# The debug build (3 GB from a clean clone, measured), the fork's and the
# release builds, with room to spare.
check_disk 8
STAGES="$STATE_DIR/stages.tsv"
export STAGES
: >"$STAGES"
rm -f "$STATE_DIR"/passed-*.txt "$STATE_DIR"/lane-*.log "$STATE_DIR/summary.txt"
total_started=$SECONDS

selected="$*"
# want STAGE: whether STAGE was asked for (no stage named: all of them).
want() {
  [ -z "$selected" ] && return 0
  local stage
  for stage in $selected; do [ "$stage" = "$1" ] && return 0; done
  return 1
}

# record STAGE N: the checks STAGE passed, for the summary.
record() { echo "$2" >"$STATE_DIR/passed-$1.txt"; }
recorded() { cat "$STATE_DIR/passed-$1.txt" 2>/dev/null || echo 0; }
test_results() { awk '/^test result:/ {n += $4} END {print n + 0}' "$1"; }
fail() { echo "test: $*" >&2; exit 1; }

emulator_was_running=0
pid_alive "$STATE_DIR/moto.pid" && emulator_was_running=1
lane_pids=()
cleanup() {
  local pid
  for pid in "${lane_pids[@]}"; do kill_tree "$pid" 2>/dev/null || true; done
  [ -n "${client_server:-}" ] && kill "$client_server" 2>/dev/null || true
  if [ "$emulator_was_running" = 0 ]; then bash infra/stop.sh >/dev/null; fi
}
trap cleanup EXIT

# A clean, bootstrapped emulator for the stages after `rust`.
emulator_ready() {
  bash infra/start-emulators.sh
  curl -fsS -X POST "http://$MOTO_HOST:$MOTO_PORT/moto-api/reset" >/dev/null
  bash infra/bootstrap.sh
}

stage_tools() {
  bash infra/install-tools.sh
  bash infra/supply-chain.sh --install-only
}

stage_lint() { bash infra/lint.sh; }

stage_build() { MCP_DEBUG_BUILT=0 debug_build; }

# As a new user types it: no AWS or MCP variables, the same tests a set-up
# run passes (those that need the emulator start it). The rest of the
# environment stays: the build's own (RUSTFLAGS, CC, a proxy) would
# otherwise make this build again what `build` built. An emulator a user
# had running before is used, once reset.
stage_rust() {
  [ "$emulator_was_running" = 1 ] && emulator_ready
  local log="$STATE_DIR/cargo-test.log" name unset=()
  for name in $(compgen -e); do
    case "$name" in AWS_* | MCP_*) [ "$name" = MCP_DEBUG_BUILT ] || unset+=(-u "$name") ;; esac
  done
  env "${unset[@]}" cargo test --workspace --locked 2>&1 | tee "$log" || fail "cargo test --workspace failed (log: $log)"
  if [ "$emulator_was_running" = 0 ]; then
    pid_alive "$STATE_DIR/moto.pid" || fail "the emulator-backed tests did not start the emulator themselves"
    say "the emulator-backed tests started the emulator themselves"
  fi
  record rust "$(test_results "$log")"
}

stage_modern() {
  local log="$STATE_DIR/cargo-test-modern-only.log"
  (
    emulator_env
    export MCP_TEST_TABLE_DEFINITION="$STATE_DIR/table.json"
    cargo test --locked -p mcp-stateless -p starter --no-default-features 2>&1 | tee "$log"
  ) || fail "the build without the 2025 era failed (log: $log)"
  if grep -E '^warning' "$log"; then
    fail "the build without the legacy feature has warnings (above; log: $log)"
  fi
  record modern "$(test_results "$log")"
}

stage_fuzz() {
  debug_build -q
  "$TARGET/debug/fuzz" all 3000 | tee "$STATE_DIR/fuzz-smoke.txt" || fail "the fuzzer found a problem (above)"
}

stage_template() {
  "$VENV/bin/sam" validate --lint --template template.yaml
  "$VENV/bin/cfn-lint" template.yaml
  "$VENV/bin/pytest" -q -p no:cacheprovider tests/template tests/infra | tee "$STATE_DIR/pytest.log" ||
    fail "the template's or the scripts' tests failed (above)"
  record template "$(grep -Eo '[0-9]+ passed' "$STATE_DIR/pytest.log" | tail -n 1 | cut -d' ' -f1)"
}

stage_supply_chain() { bash infra/supply-chain.sh; }

stage_workflows() { bash infra/lint-workflows.sh; }

stage_fork() {
  bash infra/fork-test.sh
  record fork "$(cat "$STATE_DIR/fork-passed.txt")"
}

stage_upgrade() {
  bash infra/upgrade-test.sh
  record upgrade 1
}

stage_smoke() {
  bash infra/smoke.sh --local | tee "$STATE_DIR/smoke.txt" || fail "the smoke test failed (above)"
  record smoke "$(awk '/^smoke: [0-9]+ passed/ {n += $2} END {print n + 0}' "$STATE_DIR/smoke.txt")"
}

# The README's curl examples and MCP Inspector lines against the local
# server. They call the starter's examples; a fork that deleted them skips them.
has_tools() {
  local name
  for name in "$@"; do grep -rqsE "fn $name\b|\"$name\"" "functions/$FUNCTION/src/tools" || return 1; done
}
stage_clients() {
  "$VENV/bin/python" infra/readme_snippets.py --check-copies README.md
  if ! has_tools plan_reminder build_report && ! has_tools slugify plan_reminder publish_article; then
    say "README client examples skipped: the starter's example tools are gone"
    return 0
  fi
  local port curl_passed=0 inspector_passed=0
  debug_build -q
  port="$(free_port)"
  MCP_LOCAL_ADDR="127.0.0.1:$port" "$TARGET/debug/$FUNCTION" >"$STATE_DIR/clients-server.log" 2>&1 &
  client_server=$!
  trap 'kill "$client_server" 2>/dev/null || true' EXIT
  wait_for "http://127.0.0.1:$port/" 100 "$STATE_DIR/clients-server.log"
  if has_tools plan_reminder build_report; then
    bash infra/curl-examples.sh "http://127.0.0.1:$port/mcp" | tee "$STATE_DIR/curl-examples.txt" ||
      fail "the README's curl examples failed (server log: $STATE_DIR/clients-server.log)"
    curl_passed=1
  else
    say "README curl examples skipped: plan_reminder or build_report is not among the tools"
  fi
  if has_tools slugify plan_reminder publish_article; then
    bash infra/inspector.sh "http://127.0.0.1:$port/mcp" | tee "$STATE_DIR/inspector.txt" ||
      fail "the MCP Inspector checks failed: $(tail -n 1 "$STATE_DIR/inspector.txt") (server log: $STATE_DIR/clients-server.log)"
    inspector_passed="$(tail -n 1 "$STATE_DIR/inspector.txt" | cut -d' ' -f2)"
  else
    say "MCP Inspector checks skipped: slugify, plan_reminder or publish_article is not among the tools"
  fi
  record curl "$curl_passed"
  record inspector "$inspector_passed"
}

# `bash infra/run-local.sh --sign-in`, as the README gives it: it comes up,
# the address it prints serves the protected resource's metadata and the
# authorization server's, the issuer is byte for byte the authorization
# server the resource names (clients compare them so), and it stops on
# SIGTERM (Ctrl-C's path) with nothing left answering.
run_local_sign_in() {
  local log="$STATE_DIR/run-local-sign-in.log" pid url="" origin issuer
  [ "$(python3 infra/readme_snippets.py --commands README.md sign-in)" = "bash infra/run-local.sh --sign-in" ] ||
    fail "the README's sign-in command is not the one this checks: bash infra/run-local.sh --sign-in"
  : >"$log"
  MCP_LOCAL_ADDR="127.0.0.1:$(free_port)" bash infra/run-local.sh --sign-in >>"$log" 2>&1 &
  pid=$!
  given_up() { kill "$pid" 2>/dev/null || true; tail -n 20 "$log" >&2; fail "run-local.sh --sign-in: $* (log: $log)"; }
  for _ in $(seq 1 600); do
    url="$(sed -n 's/^\[run-local\] MCP server: \(http:[^ ]*\/mcp\)$/\1/p' "$log")"
    [ -n "$url" ] || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.5
  done
  [ -n "$url" ] || given_up "it printed no MCP address"
  origin="${url%/mcp}"
  issuer="$(curl -fsS "$origin/.well-known/oauth-protected-resource/mcp" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["authorization_servers"][0])')" ||
    given_up "no protected-resource metadata at $origin"
  curl -fsS "$origin/.well-known/oauth-authorization-server" |
    python3 -c 'import json, sys; got = json.load(sys.stdin)["issuer"]; sys.exit(got != sys.argv[1] and f"issuer {got!r}, but the resource names {sys.argv[1]!r}")' "$issuer" ||
    given_up "the authorization server's metadata at $origin does not match (above)"
  kill "$pid"
  wait "$pid" || true
  ! curl -s -o /dev/null "$origin/" || fail "run-local.sh --sign-in left something answering at $origin after SIGTERM"
  say "run-local.sh --sign-in: up at $url, its issuer $issuer as the resource names it, stopped"
}

stage_sign_in() {
  run_local_sign_in
  bash infra/oauth-clients.sh | tee "$STATE_DIR/oauth-clients.txt" || fail "the sign-in checks failed: $(tail -n 1 "$STATE_DIR/oauth-clients.txt")"
  record sign-in "$(($(tail -n 1 "$STATE_DIR/oauth-clients.txt" | grep -Eo '[0-9]+ passed' | cut -d' ' -f1) + 1))"
}

stage_conformance() {
  bash infra/conformance-setups.sh
  record conformance "$(cat "$STATE_DIR/conformance-passed.txt")"
}

# run STAGE...: each stage wanted, in order, timed; stops at the first failure.
run() {
  local stage
  for stage in "$@"; do
    want "$stage" || continue
    timed "$stage" "stage_${stage//-/_}"
  done
}

# lane NAME STAGE...: the stages, in order, as a job of its own beside the
# others, its output in $STATE_DIR/lane-NAME.log and on the terminal with
# its name before each line.
lane() {
  local name="$1" log="$STATE_DIR/lane-$1.log"
  shift
  # The whole pipeline is the job, so its last line is out before the job ends.
  { run "$@" 2>&1 | tee "$log" | sed -u "s/^/($name) /"; } &
  lane_pids+=("$!")
  lane_names+=("$name")
}
join_lanes() {
  local i status=0
  for i in "${!lane_pids[@]}"; do
    if ! wait "${lane_pids[$i]}"; then
      status=1
      echo "test: the ${lane_names[$i]} lane failed; its log: $STATE_DIR/lane-${lane_names[$i]}.log" >&2
    fi
  done
  lane_pids=()
  return "$status"
}

# A stage is a function `stage_NAME` above; a name with none is a typo.
for stage in $selected; do
  [[ "$stage" != *_* ]] && declare -F "stage_${stage//-/_}" >/dev/null || { echo "test: no stage '$stage' (see the top of infra/test.sh)" >&2; exit 2; }
done
run tools lint build rust
# The stages after these run the binaries `build` made.
want build && export MCP_DEBUG_BUILT=1
if want modern || want fuzz || want fork || want upgrade || want template || want supply-chain ||
  want workflows || want smoke || want clients || want sign-in || want conformance; then
  emulator_ready >/dev/null
fi
lane_names=()
lane compile modern fuzz fork upgrade
lane serve template supply-chain workflows smoke clients sign-in conformance
join_lanes || exit 1

# The summary: each stage's time and checks, and the total.
say "stages, in seconds (lanes ran side by side):"
awk -F'\t' '{printf "  %-13s %5d s\n", $1, $2}' "$STAGES"
counted=(rust modern template fork upgrade smoke curl inspector sign-in conformance)
total=0
line=""
for stage in "${counted[@]}"; do
  n="$(recorded "$stage")"
  total=$((total + n))
  line="$line${line:+; }$stage: $n"
done
took=$((SECONDS - total_started))
say "checks passed: $line; in $(duration "$took")"
echo "summary: $total passed, 0 failed" | tee "$STATE_DIR/summary.txt"
