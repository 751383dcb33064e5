#!/usr/bin/env bash
# 2025-era clients against a running everything function
# (tests/clients/legacy.mjs): the TypeScript SDK v1 client over Streamable
# HTTP, and over stdio through mcp-remote, each initializing, calling a
# tool, a prompt, a resource and a tool that asks the user. Both pinned in
# tests/clients/package-lock.json. The test command runs it in the
# two-instance set-up (infra/conformance-setups.sh), where every answer
# to the server's question reaches the instance not holding the call.
#
#   bash infra/legacy-clients.sh URL     # e.g. http://127.0.0.1:3941/mcp
#
# Prints `ok`/`FAILED` per check and last `legacy clients: N passed, M failed`.
source "$(dirname "$0")/common.sh"
url="${1:?usage: legacy-clients.sh URL}"
dir="$ROOT/tests/clients"
node_bin="$(node22)"
npm_ci_pinned "$dir"
# mcp-remote keeps its state (OAuth clients, tokens) in this directory.
mkdir -p "$STATE_DIR/mcp-remote"
MCP_REMOTE_CONFIG_DIR="$STATE_DIR/mcp-remote" "$node_bin" "$dir/legacy.mjs" "$url"
