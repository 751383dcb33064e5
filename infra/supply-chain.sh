#!/usr/bin/env bash
# Supply chain: cargo-deny over the locked dependency tree, with deny.toml.
# Licenses (permissive only), bans and sources (crates.io only) need no
# network. The RustSec advisories need the advisory database, a git clone
# from GitHub: fetched when reachable (the GitHub workflow), otherwise the
# check is reported as skipped, never as passed.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
DENY_VERSION="0.20.2"
if ! cargo deny --version 2>/dev/null | grep -q " $DENY_VERSION\$"; then
  say "installing cargo-deny $DENY_VERSION from crates.io (a few minutes, once per machine)"
  cargo install --locked --quiet cargo-deny --version "$DENY_VERSION" --no-default-features
fi
say "licenses, bans, sources"
cargo deny --locked check licenses bans sources
if [ "${MCP_SKIP_ADVISORIES:-}" = 1 ]; then
  say "advisories: skipped (MCP_SKIP_ADVISORIES=1)"
elif cargo deny --locked check advisories 2>"$STATE_DIR/advisories.log"; then
  say "advisories: no known vulnerability in the locked tree"
elif grep -qiE "failed to (fetch|open)|unable to|network|resolve|could not" "$STATE_DIR/advisories.log"; then
  say "advisories: skipped, the advisory database is unreachable from here (see .tmp/advisories.log)"
else
  cat "$STATE_DIR/advisories.log" >&2
  exit 1
fi
