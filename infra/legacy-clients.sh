#!/usr/bin/env bash
# 2025-era clients against a running everything function
# (tests/clients/legacy.mjs): the TypeScript SDK v1 client over Streamable
# HTTP, and over stdio through mcp-remote, each initializing, calling a
# tool, a prompt, a resource and a tool that asks the user. Both pinned in
# tests/clients/package-lock.json. The test command runs it in the
# two-instance set-up (infra/conformance-setups.sh), where every answer
# to the server's question reaches the instance not holding the call.
# Then the same two clients across their session's first day and its end
# (tests/clients/stale_session.mjs), each against a local server on a clock
# the script moves (the test crate's clock-server binary, built here).
#
#   bash infra/legacy-clients.sh URL     # e.g. http://127.0.0.1:3941/mcp
#
# Prints `ok`/`FAILED` per check and last `legacy clients: N passed, M failed`
# (both scripts' checks).
source "$(dirname "$0")/common.sh"
url="${1:?usage: legacy-clients.sh URL}"
dir="$ROOT/tests/clients"
node_bin="$(node22)"
npm_ci_pinned "$dir"
# mcp-remote keeps its state (OAuth clients, tokens) in this directory.
mkdir -p "$STATE_DIR/mcp-remote"
status=0
MCP_REMOTE_CONFIG_DIR="$STATE_DIR/mcp-remote" "$node_bin" "$dir/legacy.mjs" "$url" | tee "$STATE_DIR/legacy-clients-calls.txt" || status=1
debug_build -q ||
  { echo "legacy-clients: the clock-server binary did not build" >&2; exit 1; }
MCP_REMOTE_CONFIG_DIR="$STATE_DIR/mcp-remote" "$node_bin" "$dir/stale_session.mjs" "$TARGET/debug/clock-server" |
  tee "$STATE_DIR/legacy-clients-stale.txt" || status=1
count() { tail -n 1 "$1" | grep -Eo "[0-9]+ $2" | cut -d' ' -f1 || echo 1; }
passed=$(($(count "$STATE_DIR/legacy-clients-calls.txt" passed) + $(count "$STATE_DIR/legacy-clients-stale.txt" passed)))
failed=$(($(count "$STATE_DIR/legacy-clients-calls.txt" failed) + $(count "$STATE_DIR/legacy-clients-stale.txt" failed)))
echo "legacy clients: $passed passed, $failed failed"
exit "$status"
