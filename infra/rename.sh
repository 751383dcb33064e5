#!/usr/bin/env bash
# Makes the starter yours in one command: renames the function's package
# and folder (functions/NAME), its task worker (functions/NAME-worker), the
# server name it reports (its package name), the Lambda binaries in
# template.yaml, the stack name in samconfig.toml and the scripts', the
# README's and docs/'s references. Run it once, on a clean checkout, then commit. It
# changes no Rust source (the library is `mcp_function` under any package
# name), so upstream changes to the function's code still merge.
#   bash infra/rename.sh weather-tools
#   bash infra/rename.sh --files FILE...   # after a merge: the template's name
#                                          # in FILEs that upstream added or
#                                          # replaced becomes this fork's
source "$(dirname "$0")/common.sh"
cd "$ROOT"

# Whole words only: `starter` inside other words is left alone. A name with
# hyphens is a path, a package and a binary; with underscores, a crate path.
swap() {
  OLD="$old" NEW="$new" OLD_CRATE="$old_crate" NEW_CRATE="$new_crate" \
    perl -pi -e '
      s{functions/\Q$ENV{OLD}\E\b}{functions/$ENV{NEW}}g;
      s/(?<![\w-])\Q$ENV{OLD}\E-worker\b/$ENV{NEW}-worker/g;
      s/(?<![\w-])\Q$ENV{OLD_CRATE}\E::/$ENV{NEW_CRATE}::/g;
      s/^(\s*(?:name\s*=\s*"|Binary:\s*))\Q$ENV{OLD}\E("?)\s*$/$1$ENV{NEW}$2\n/;
      s/^\Q$ENV{OLD}\E = \{ path = "\.\.\/\Q$ENV{OLD}\E"/$ENV{NEW} = { path = "..\/$ENV{NEW}"/;
      s/-p \Q$ENV{OLD}\E\b/-p $ENV{NEW}/g;
      s/--package \Q$ENV{OLD}\E\b/--package $ENV{NEW}/g;
    ' "$@"
}
if [ "${1:-}" = --files ]; then
  shift
  old=starter new="$FUNCTION"
  old_crate="${old//-/_}" new_crate="${new//-/_}"
  [ "$new" != "$old" ] || { say "this checkout is not renamed: nothing to do"; exit 0; }
  [ "$#" -gt 0 ] || { echo "usage: bash infra/rename.sh --files FILE..." >&2; exit 2; }
  swap "$@"
  say "renamed $old to $new in $*"
  exit 0
fi

new="${1:-}"
if ! [[ "$new" =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ ]]; then
  echo "usage: bash infra/rename.sh NAME   (lowercase letters, digits and single hyphens, e.g. weather-tools)" >&2
  exit 2
fi
old="$FUNCTION"
if [ "$new" = "$old" ]; then say "already called $new"; exit 0; fi
case "$new" in
  mcp-stateless | mcp-aws | everything | e2e | "$old-worker")
    echo "rename: $new is taken by a crate of the template" >&2; exit 2 ;;
esac
for dir in "functions/$new" "functions/$new-worker"; do
  [ ! -e "$dir" ] || { echo "rename: $dir already exists" >&2; exit 2; }
done

old_crate="${old//-/_}" new_crate="${new//-/_}"

mv "functions/$old" "functions/$new"
mv "functions/$old-worker" "functions/$new-worker"

swap Cargo.toml "functions/$new/Cargo.toml" "functions/$new-worker/Cargo.toml" \
  template.yaml README.md SECURITY.md docs/*.md infra/*.sh
# The stack name (samconfig.toml) and the one place the scripts read the
# function's name from (infra/common.sh).
perl -pi -e "s/^stack_name = \".*\"/stack_name = \"$new\"/" samconfig.toml
perl -pi -e "s/^FUNCTION=\"\Q$old\E\"/FUNCTION=\"$new\"/" infra/common.sh

# Cargo.lock names workspace packages; refresh it without touching any
# dependency's version.
cargo update --workspace --offline --quiet
say "renamed $old to $new: functions/$new, functions/$new-worker, stack $new"
