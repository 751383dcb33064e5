#!/usr/bin/env bash
# A fork takes upstream fixes by merging, proved: makes an "upstream"
# repository of this tree, clones it as a fork that renames the function
# (infra/rename.sh) and adds a tool of its own (the README's), then makes two
# changes upstream, one to the machinery (functions/mcp-stateless) and one
# to the function the fork renamed (functions/starter/src/lib.rs), releases
# them as the next patch version (infra/release.sh, tag template-vX.Y.Z),
# and merges that tag into the fork, as the README tells forks to. The merge
# must apply both without a conflict, the second into the renamed folder,
# and the fork must be at the new version, build and pass its tool's test. Everything happens under .tmp/upgrade, offline.
source "$(dirname "$0")/common.sh"
cd "$ROOT"

work="$STATE_DIR/upgrade"
rm -rf "$work"
mkdir -p "$work/upstream"
git ls-files -z | xargs -0 tar cf - | tar xf - -C "$work/upstream"
commit() { git -c user.name=upgrade-test -c user.email=upgrade-test@localhost commit -q "$@"; }

cd "$work/upstream"
git init -q -b main
git add -A
commit -m "upstream v1"
released="$(bash infra/release.sh --check | sed -n 's/.*machinery at \([0-9.]*\),.*/\1/p')"
git tag "template-v$released"
next="${released%.*}.$((${released##*.} + 1))"

git clone -q "$work/upstream" "$work/fork"
cd "$work/fork"
name="acme-tools"
bash infra/rename.sh "$name" >/dev/null
"$VENV/bin/python" infra/readme_snippets.py README.md . >/dev/null
git add -A
commit -m "fork: renamed to $name, a tool of its own"

cd "$work/upstream"
cat >>functions/mcp-stateless/src/lib.rs <<'EOF'

/// A machinery fix made upstream after the fork (infra/upgrade-test.sh).
pub const UPSTREAM_FIX: u32 = 2;
EOF
perl -0pi -e 's/(impl Server \{\n)/$1    \/\/\/ Wiring changed upstream after the fork (infra\/upgrade-test.sh).\n    pub const UPSTREAM_WIRING: u32 = mcp_stateless::UPSTREAM_FIX;\n\n/' functions/starter/src/lib.rs
grep -q UPSTREAM_WIRING functions/starter/src/lib.rs || { echo "upgrade: could not make the upstream change" >&2; exit 1; }
perl -0pi -e 's/^## Unreleased\n/## Unreleased\n\n- A machinery fix and a wiring change (infra\/upgrade-test.sh).\n/m' CHANGELOG.md
git add -A
commit -m "upstream: a machinery fix and a wiring change"
GIT_AUTHOR_NAME=upgrade-test GIT_AUTHOR_EMAIL=upgrade-test@localhost GIT_COMMITTER_NAME=upgrade-test \
  GIT_COMMITTER_EMAIL=upgrade-test@localhost bash infra/release.sh "$next" >/dev/null

cd "$work/fork"
git remote add upstream "$work/upstream"
git fetch -q upstream
if ! git -c user.name=upgrade-test -c user.email=upgrade-test@localhost merge -q --no-edit "template-v$next" >"$STATE_DIR/upgrade-merge.log" 2>&1; then
  echo "upgrade: merging upstream into the renamed fork conflicts:" >&2
  cat "$STATE_DIR/upgrade-merge.log" >&2
  git status --short >&2
  exit 1
fi
grep -q "UPSTREAM_FIX" functions/mcp-stateless/src/lib.rs || { echo "upgrade: the machinery fix did not arrive" >&2; exit 1; }
grep -q "UPSTREAM_WIRING" "functions/$name/src/lib.rs" || { echo "upgrade: the wiring change did not reach functions/$name" >&2; exit 1; }
[ ! -e functions/starter ] || { echo "upgrade: the merge brought back functions/starter" >&2; exit 1; }
# A file upstream adds after the rename still names the template's function
# until `rename.sh --files` (CHANGELOG, 0.1.0) renames it as the fork's.
echo "See functions/starter/src/lib.rs and cargo run -p starter." >upstream-note.md
bash infra/rename.sh --files upstream-note.md >/dev/null
grep -qx "See functions/$name/src/lib.rs and cargo run -p $name." upstream-note.md ||
  { echo "upgrade: rename.sh --files did not rename the function in a new file: $(cat upstream-note.md)" >&2; exit 1; }
rm upstream-note.md
bash infra/release.sh --check | grep -q "at $next" || { echo "upgrade: the fork is not at the release it merged ($next)" >&2; exit 1; }

export CARGO_TARGET_DIR="$TARGET"
if ! cargo test --locked -p "$name" greetings >"$STATE_DIR/upgrade-test.log" 2>&1; then
  echo "upgrade: the fork does not build or pass after the merge:" >&2
  tail -n 40 "$STATE_DIR/upgrade-test.log" >&2
  exit 1
fi
grep -q "greets_by_name ... ok" "$STATE_DIR/upgrade-test.log" || { echo "upgrade: the fork's tool test did not run" >&2; exit 1; }
say "upgrade clean: the renamed fork merged release $next (a machinery fix and a wiring change) without a conflict, builds, and its tool's test passes"
