#!/usr/bin/env bash
# Releases the machinery under one semver version: the two machinery crates
# (functions/mcp-stateless, functions/mcp-aws) take VERSION, CHANGELOG.md's
# "Unreleased" section becomes VERSION's, and the commit is tagged
# `template-vVERSION`, the state a fork merges (docs/operations.md, "Taking upstream
# fixes"). The tag has a prefix of its own so that it never matches a fork's
# own `v*` tags, which start its deploy workflow.
#
#   bash infra/release.sh VERSION   # on a clean checkout: bumps, commits, tags
#   bash infra/release.sh --check   # the crates' versions and CHANGELOG.md agree
source "$(dirname "$0")/common.sh"
cd "$ROOT"
crates="functions/mcp-stateless functions/mcp-aws"

crate_version() { sed -n 's/^version = "\(.*\)"$/\1/p' "$1/Cargo.toml" | head -n 1; }
# The newest released version in CHANGELOG.md (a `## X.Y.Z (date)` heading).
changelog_version() { sed -n 's/^## \([0-9][0-9.]*\) ([0-9-]*)$/\1/p' CHANGELOG.md | head -n 1; }

check() {
  local crate version released
  released="$(changelog_version)"
  for crate in $crates; do
    version="$(crate_version "$crate")"
    if [ "$version" != "$released" ]; then
      echo "release: $crate is at $version but CHANGELOG.md's newest release is ${released:-none}" >&2
      return 1
    fi
  done
  # Only "Unreleased" may stand above the newest release.
  case "$(grep -m 1 '^## ' CHANGELOG.md)" in
    "## Unreleased" | "## $released ("*) ;;
    *) echo "release: CHANGELOG.md's first section is neither \"Unreleased\" nor $released" >&2; return 1 ;;
  esac
  say "machinery at $released, as CHANGELOG.md says"
}

if [ "${1:-}" = --check ]; then check; exit; fi
version="${1:?usage: release.sh VERSION | --check}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "release: $version is not MAJOR.MINOR.PATCH" >&2; exit 2; }
check
current="$(changelog_version)"
if [ "$version" = "$current" ] || [ "$(printf '%s\n%s\n' "$current" "$version" | sort -V | tail -n 1)" != "$version" ]; then
  echo "release: $version is not newer than $current" >&2
  exit 2
fi
! git rev-parse -q --verify "refs/tags/template-v$version" >/dev/null ||
  { echo "release: the tag template-v$version exists already" >&2; exit 1; }
[ -z "$(git status --porcelain)" ] || { echo "release: the checkout has uncommitted changes" >&2; exit 1; }
unreleased="$(awk '/^## Unreleased$/ {on = 1; next} /^## / {on = 0} on && NF' CHANGELOG.md)"
[ -n "$unreleased" ] || { echo "release: CHANGELOG.md's Unreleased section is empty: say what changed first" >&2; exit 1; }

for crate in $crates; do
  sed -i "0,/^version = \".*\"$/s//version = \"$version\"/" "$crate/Cargo.toml"
  # The lock file's entry for the crate, so --locked builds go on working.
  perl -0pi -e "s/(\\[\\[package\\]\\]\\nname = \"$(basename "$crate")\"\\nversion = )\"[^\"]*\"/\${1}\"$version\"/" Cargo.lock
done
sed -i "s/^## Unreleased$/## Unreleased\n\n## $version ($(date -u +%F))/" CHANGELOG.md
check
cargo metadata --locked --offline --format-version 1 >/dev/null ||
  { echo "release: Cargo.lock no longer matches after the bump" >&2; exit 1; }
git add CHANGELOG.md Cargo.lock $(for crate in $crates; do echo "$crate/Cargo.toml"; done)
git commit -q -m "Release $version"
git tag -a "template-v$version" -m "Machinery $version (CHANGELOG.md)"
say "released $version: tagged template-v$version; push the commit and the tag"
