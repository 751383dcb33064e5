#!/usr/bin/env bash
# The MCP Inspector against a running server, used as the README's "Connect
# a client" tells a user to use it:
#   - the README's CLI commands, as written but for the server's address:
#     each must succeed and print what its trailing comment quotes;
#   - the Inspector's schema portability check (--strict) finds nothing in
#     any tool's schema, as the README says;
#   - what the README says of CLI mode, which declares no capabilities: a
#     tool that asks the user is refused by name on the default (2025) era,
#     and gets -32021 on the modern one;
#   - the README's web UI command, its page driven in headless Chromium
#     (tests/inspector/web.mjs) on the default era and on the modern one:
#     connect, a tool, a multi-round call, a task;
#   - the redirect URI the web UI sends when opened at localhost, which
#     must be the template's default Cognito callback (CognitoCallbackUrls).
# The Inspector and the browser driver are pinned in
# tests/inspector/package-lock.json; the browser is $CHROMIUM, or Debian's
# chromium (installed when missing, as root or through sudo). The checks
# call the starter's example tools (slugify, plan_reminder, publish_article).
#
#   bash infra/inspector.sh URL        # e.g. http://127.0.0.1:3000/mcp
#
# Prints `ok`/`FAILED` per check and last `inspector: N passed, M failed`;
# what each command printed is under .tmp/inspector/.
source "$(dirname "$0")/common.sh"
url="${1:?usage: inspector.sh URL}"
dir="$ROOT/tests/inspector"
out="$STATE_DIR/inspector"
rm -rf "$out" && mkdir -p "$out"
node_bin="$(node22)"
# npx runs on the Node.js first on PATH; from $dir it finds the pinned copy.
PATH="$(dirname "$node_bin"):$PATH"
npm_ci_pinned "$dir"
pinned="@modelcontextprotocol/inspector@$(cd "$dir" && node -p 'require("./package.json").dependencies["@modelcontextprotocol/inspector"]')"
readme_commands() { python3 "$ROOT/infra/readme_snippets.py" --commands "$ROOT/README.md" "$1"; }
# A README command as run here: without its trailing comment, at URL.
as_run() {
  local command="${1%%  #*}"
  echo "${command//http:\/\/127.0.0.1:3000\/mcp/$url}"
}

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "FAILED - $1"; }
# run_cli FILE COMMAND: COMMAND run from $dir, where npx finds the pinned
# Inspector, what it printed in FILE; its exit status.
run_cli() { (cd "$dir" && timeout 120 bash -c "$2") >"$1" 2>&1 </dev/null; }
# expect NAME FILE TEXT COMMAND: TEXT must be in what COMMAND printed (its
# exit status aside); with TEXT empty, COMMAND must exit 0 instead.
expect() {
  local name="$1" file="$2" text="$3" command="$4" status=0
  run_cli "$file" "$command" || status=$?
  if [ -z "$text" ]; then
    if [ "$status" = 0 ]; then ok "$name"; else fail "$name: exit $status: $(head -c 400 "$file")"; fi
  elif grep -qF -- "$text" "$file"; then
    ok "$name"
  else
    fail "$name: no \"$text\" in what it printed: $(head -c 400 "$file")"
  fi
}

# The README's CLI commands. Each line's trailing `# "TEXT"` is what it
# must print; a line without one must exit 0.
n=0
while IFS= read -r line; do
  case "$line" in npx\ *) ;; *) continue ;; esac
  n=$((n + 1))
  command="$(as_run "$line")"
  wanted="$(printf '%s' "$line" | sed -n 's/.*  # "\(.*\)".*/\1/p')"
  case "$command" in *"$pinned "*) ;; *) fail "README command $n names another Inspector than the pinned $pinned: $line"; continue ;; esac
  expect "README command $n${wanted:+ prints \"$wanted\"}: ${command:0:90}" "$out/cli-$n.txt" "$wanted" "$command"
done < <(readme_commands inspector-cli)
[ "$n" -gt 0 ] || fail "the README's inspector-cli block has no npx command"

# The CLI's portability check of every tool's schema: findings go to stderr
# (errors also set exit code 6); the README promises there are none.
if run_cli "$out/portability.txt" "npx $pinned --cli '$url' --protocol-era modern --method tools/list --strict" &&
  ! grep -q "Schema portability" "$out/portability.txt"; then
  ok "no schema portability finding in any tool (--strict)"
else
  fail "schema portability findings: $(head -c 600 "$out/portability.txt")"
fi

# What the README says the CLI gets, which declares no capabilities: on
# its default (2025) era, a tool that asks the user is refused by name;
# on the modern era, with -32021.
expect "CLI, default era: a tool that asks the user is refused, naming the capability" "$out/cli-elicit-legacy.txt" \
  "did not declare" "npx $pinned --cli '$url' --method tools/call --tool-name plan_reminder"
expect "CLI, modern era: a tool that asks the user: Missing required client capability (-32021)" "$out/cli-elicit.txt" \
  "Missing required client capability" "npx $pinned --cli '$url' --protocol-era modern --method tools/call --tool-name plan_reminder"

# The web UI, started by the README's command on ports of its own.
chromium="$(chromium_bin || true)"
web_command="$(readme_commands inspector-web | grep '^npx ' | head -n 1 || true)"
if [ -z "$chromium" ]; then
  fail "web UI: no Chromium that starts, and Debian's could not be installed (apt-get install chromium as root, or set CHROMIUM=/path/to/chrome)"
elif [ -z "$web_command" ]; then
  fail "web UI: the README's inspector-web block has no npx command"
else
  web_command="$(as_run "$web_command")"
  web_pids=()
  trap 'for pid in "${web_pids[@]}"; do kill_tree "$pid"; done' EXIT
  # start_web NAME COMMAND: the Inspector's web UI on a port of its own
  # (start_inspector_web, infra/common.sh); sets web_url.
  start_web() { start_inspector_web "$dir" "$out" "$1" "$2"; }
  # A writable catalog holding the server, as the sign-in steps in docs/auth.md add it.
  printf '{"mcpServers": {"mcp": {"type": "streamable-http", "url": "%s"}}}\n' "$url" >"$out/catalog.json"
  start_web readme "$web_command"
  readme_url="$web_url"
  start_web modern "$web_command --protocol-era modern"
  modern_url="$web_url"
  start_web catalog "npx $pinned --web --catalog '$out/catalog.json'"
  catalog_url="$web_url"
  # The template's default callbacks, on the port this Inspector listens on.
  callbacks="$(sed -n '/^  CognitoCallbackUrls:/,/Default:/s/^ *Default: *//p' "$ROOT/template.yaml")"
  catalog_port="${catalog_url#http://localhost:}"
  callbacks="${callbacks//:6274\//:${catalog_port%%/*}/}"
  if [ -z "$readme_url" ] || [ -z "$modern_url" ] || [ -z "$catalog_url" ]; then
    fail "web UI: the Inspector did not start (logs: $out/web-*.log)"
  else
    # web RUN VERSION URL [CATALOG_URL]: one browser run, its counts added.
    web() {
      CHROMIUM="$chromium" EXPECTED_VERSION="$2" EXPECTED_REDIRECTS="$callbacks" "$node_bin" "$dir/web.mjs" "$3" "$out" ${4:+"$4"} \
        | tee "$out/web-$1.txt" || true
      local summary
      summary="$(tail -n 1 "$out/web-$1.txt")"
      case "$summary" in
        "inspector web: "*) passed=$((passed + $(echo "$summary" | cut -d' ' -f3))); failed=$((failed + $(echo "$summary" | cut -d' ' -f5))) ;;
        *) fail "web UI ($1): the browser run ended without its summary (output in $out/web-$1.txt)" ;;
      esac
    }
    # The README's command, on the Inspector's default era, then modern.
    web default 2025-11-25 "$readme_url"
    web modern 2026-07-28 "$modern_url" "$catalog_url"
  fi
fi
echo "inspector: $passed passed, $failed failed"
[ "$failed" = 0 ]
