#!/usr/bin/env bash
# The gate the test command runs before its tests: every crate formatted as
# rustfmt.toml says, clippy finding nothing in any crate or target (its
# default lints and [workspace.lints] in Cargo.toml, all as errors), and
# rustdoc finding nothing either (intra-doc links that are broken or point
# at private items, and its other lints, as errors too).
#
#   bash infra/lint.sh      # cargo fmt --all fixes what the first check finds
source "$(dirname "$0")/common.sh"
cd "$ROOT"

# Both come with rustup's default profile; a minimal toolchain lacks them.
for tool in fmt clippy; do
  component="$tool"
  [ "$tool" = fmt ] && component=rustfmt
  if ! cargo "$tool" --version >/dev/null 2>&1 && ! rustup component add "$component" >/dev/null 2>&1; then
    echo "lint: cargo $tool is missing and 'rustup component add $component' failed: install it and run again" >&2
    exit 1
  fi
done

say "cargo fmt --all --check"
cargo fmt --all --check >"$STATE_DIR/fmt.diff" 2>&1 ||
  { head -n 40 "$STATE_DIR/fmt.diff" >&2; echo "lint: not formatted (whole diff: $STATE_DIR/fmt.diff); cargo fmt --all formats it" >&2; exit 1; }
say "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings ||
  { echo "lint: clippy found the problems above" >&2; exit 1; }
# The build without the 2025 era (the test command tests it too).
say "cargo clippy -p mcp-stateless -p starter --no-default-features --all-targets -- -D warnings"
cargo clippy -p mcp-stateless -p starter --no-default-features --all-targets --locked -- -D warnings ||
  { echo "lint: clippy found the problems above in the build without the 2025 era" >&2; exit 1; }
# --examples (there are none) makes cargo resolve features as the tests and
# clippy do, with dev-dependencies: tokio's `test-util` is then on here too,
# and rustdoc reads the dependencies clippy already checked instead of
# checking tokio and the 35 crates above it again (about 90 s on 2 cores).
# Naming --bins documents a function's binary beside its library of the
# same name, and cargo warns that their pages share a path: rustdoc checks
# both all the same, and nobody reads those pages.
say "RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps --lib --bins --examples"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --bins --examples --locked ||
  { echo "lint: rustdoc found the problems above" >&2; exit 1; }
say "clean"
