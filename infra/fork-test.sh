#!/usr/bin/env bash
# A fork that is really yours, proved: copies the repository (its tracked
# files, as they are in the working tree) to .tmp/fork, renames the function
# with infra/rename.sh, deletes every example tool, then builds and tests
# what the fork changed (the renamed function and its worker; the rest of
# the workspace is the same code `cargo test --workspace` ran) and checks
# that the renamed server answers under its new name with no tools. The
# fork builds in the main target directory: cargo names and fingerprints a
# workspace crate by its path inside the workspace, and the copy keeps the
# files' times, so every crate the fork did not change is already built.
source "$(dirname "$0")/common.sh"
cd "$ROOT"

name="acme-tools"
fork="$STATE_DIR/fork"
rm -rf "$fork"
mkdir -p "$fork"
git ls-files -z | xargs -0 tar cf - | tar xf - -C "$fork"
cd "$fork"

bash infra/rename.sh "$name"
tools="functions/$name/src/tools"
for example in "$tools"/*.rs; do
  example_name="$(basename "$example" .rs)"
  [ "$example_name" = mod ] && continue
  rm "$example"
  # Its lines in tools/mod.rs: the `mod` line and its entry in the lists.
  # (`basket` also matches `basket_tools`: underscores separate here.)
  perl -ni -e "print unless /(?<![A-Za-z0-9])\Q$example_name\E(?![A-Za-z0-9])/" "$tools/mod.rs"
done
say "fork: renamed to $name, examples deleted: $(cd "$tools" && ls)"
renamed=(Cargo.toml template.yaml samconfig.toml "functions/$name" "functions/$name-worker")
# Outside comments, nothing may still say starter.
if grep -rnwE 'starter' "${renamed[@]}" | grep -vE '^[^:]+:[0-9]+:\s*(//|#)'; then
  echo "fork: the old name is still referenced (above)" >&2
  exit 1
fi

export CARGO_TARGET_DIR="$TARGET"
# --bins and the tests' features (tokio's test-util, from dev-dependencies)
# as every other debug build of the test command (infra/common.sh, debug_build).
fork_build() { cargo build --locked --lib --bins --tests -p "$name" -p "$name-worker"; }
(
  emulator_env
  export MCP_TEST_TABLE_DEFINITION="$STATE_DIR/table.json"
  fork_build && cargo test --locked -p "$name" -p "$name-worker"
) 2>&1 | tee "$STATE_DIR/fork-test.log" || { echo "fork: the fork does not build or pass its tests (above)" >&2; exit 1; }
# A fork with no tools yet builds clean: nothing the examples used warns.
if grep -E "^warning: .*\b($name|${name//-/_})\b|^warning: .*never (read|used)" "$STATE_DIR/fork-test.log"; then
  echo "fork: the fork without examples builds with warnings (above)" >&2
  exit 1
fi

port="$(free_port)"
MCP_LOCAL_ADDR="127.0.0.1:$port" "$CARGO_TARGET_DIR/debug/$name" >"$STATE_DIR/fork-server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
wait_for "http://127.0.0.1:$port/" 100 "$STATE_DIR/fork-server.log"
mcp() { "$VENV/bin/python" "$ROOT/infra/mcp_client.py" "http://127.0.0.1:$port/mcp" "$@"; }
reported="$(mcp server/discover '' 'result._meta.io\.modelcontextprotocol/serverInfo.name')"
tools_left="$(mcp tools/list '' result.tools | "$VENV/bin/python" -c 'import json,sys; print(len(json.load(sys.stdin)))')"
[ "$reported" = "$name" ] || { echo "fork: the server reports itself as '$reported', not '$name'" >&2; exit 1; }
[ "$tools_left" = 0 ] || { echo "fork: $tools_left tools left after deleting the examples" >&2; exit 1; }
passed="$(awk '/^test result:/ {n += $4} END {print n + 0}' "$STATE_DIR/fork-test.log")"
say "fork clean: $name builds with no example tools, reports itself as $name, $passed Rust tests passed"
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true

# The README's tool, prompt, task and resources, and docs/tools.md's task with a side
# effect, pasted where the fork's README and docs say (rename.sh renamed their paths), as a
# user would, then built, tested, called and read.
pasted="$("$VENV/bin/python" "$ROOT/infra/readme_snippets.py" README.md .)"
say "fork: pasted the README's blocks into $pasted"
pasted="$("$VENV/bin/python" "$ROOT/infra/readme_snippets.py" docs/tools.md .)"
say "fork: pasted docs/tools.md's blocks into $pasted"
if ! fork_build >"$STATE_DIR/fork-readme-build.log" 2>&1; then
  echo "fork: the README's or docs/tools.md's blocks do not build as pasted:" >&2
  grep -E '^(error|warning)' -A 8 "$STATE_DIR/fork-readme-build.log" | head -n 60 >&2
  exit 1
fi
if ! cargo test --locked -p "$name" -- greetings receipts >"$STATE_DIR/fork-readme-test.log" 2>&1; then
  echo "fork: the pasted blocks' tests fail:" >&2
  tail -n 40 "$STATE_DIR/fork-readme-test.log" >&2
  exit 1
fi
for test in greetings::tests::greets_by_name receipts::tests::a_retried_run_sends_no_second_receipt; do
  grep -q "test tools::$test ... ok" "$STATE_DIR/fork-readme-test.log" \
    || { echo "fork: the pasted test $test did not run" >&2; exit 1; }
done
MCP_LOCAL_ADDR="127.0.0.1:$port" "$CARGO_TARGET_DIR/debug/$name" >"$STATE_DIR/fork-readme-server.log" 2>&1 &
server=$!
wait_for "http://127.0.0.1:$port/" 100 "$STATE_DIR/fork-readme-server.log"
"$VENV/bin/python" - "$port" <<'PY'
import json, sys
sys.path.insert(0, "infra")
from mcp_client import call

url = f"http://127.0.0.1:{sys.argv[1]}/mcp"
for tool, arguments, expected in [
    ("greet", {"name": "fork"}, "Hello, fork!"),
    ("countdown", {"from": 1}, "Lift-off!"),
    ("send_receipt", {"email": "fork@example.com"}, "Sent a receipt to fork@example.com."),
]:
    reply = call(url, "tools/call", {"name": tool, "arguments": arguments}, name=tool)
    text = reply.get("result", {}).get("content", [{}])[0].get("text")
    if text != expected:
        sys.exit(f"fork: the pasted {tool} answered {json.dumps(reply)[:300]}, not {expected!r}")
    print(f"[fork-test] the pasted {tool} answers {text!r}")
reply = call(url, "prompts/get", {"name": "haiku", "arguments": {"topic": "forks"}})
text = reply.get("result", {}).get("messages", [{}])[0].get("content", {}).get("text")
if text != "Write a haiku about forks.":
    sys.exit(f"fork: the README's haiku prompt answered {json.dumps(reply)[:300]}")
print(f"[fork-test] the README's haiku prompt answers {text!r}")
# The fixed resource is written for its reader (the local server's development
# principal); the templated one's variable arrives percent-decoded.
for uri, expected in [("cards://welcome", "Welcome, fork!"), ("cards://birthday/Ada%20Lovelace", "Happy birthday, Ada Lovelace!")]:
    reply = call(url, "resources/read", {"uri": uri}, extra_headers={"x-mcp-dev-principal": "fork"})
    text = reply.get("result", {}).get("contents", [{}])[0].get("text")
    if text != expected:
        sys.exit(f"fork: the README's resource {uri} read {json.dumps(reply)[:300]}, not {expected!r}")
    print(f"[fork-test] the README's resource {uri} reads {text!r}")
PY
passed=$((passed + 8))
echo "$passed" >"$STATE_DIR/fork-passed.txt"
