#!/usr/bin/env bash
# Installs the Python tools the tests and the emulator set-up need (moto,
# cfn-lint, aws-sam-translator, aws-sam-cli, cargo-lambda, ziglang, pytest)
# into .venv, pinned by infra/requirements.txt. Safe to run twice: skips the
# install when .venv already matches the requirements.
source "$(dirname "$0")/common.sh"
stamp="$VENV/.requirements.sha256"
want="$(sha256sum "$ROOT/infra/requirements.txt" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  say "tools already installed in .venv"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
say "creating .venv and installing infra/requirements.txt (a few minutes the first time)"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/infra/requirements.txt"
echo "$want" > "$stamp"
say "installed: $("$VENV/bin/pip" freeze | grep -iE '^(moto|cfn-lint|aws-sam-cli|aws-sam-translator|cargo-lambda|ziglang|pytest)=' | tr '\n' ' ')"
