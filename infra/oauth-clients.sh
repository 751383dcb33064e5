#!/usr/bin/env bash
# Real clients sign in given only the URL (tests/clients/oauth.mjs), against
# a local stack on the emulator started here: an OpenID provider on loopback standing in for Cognito
# (tests/clients/provider.mjs, oidc-provider), the authorization server,
# and the everything function in front of it on one address, verifying the
# authorization server's tokens. The TypeScript SDK v1 client signs in
# with a client metadata document (served over https with a CA made here,
# which the authorization server trusts through SSL_CERT_FILE and
# MCP_OAUTH_CIMD_TRUSTED_HOSTS) and with registration, mcp-remote with
# registration, and the Python SDK client (tests/clients/python_oauth.py,
# in a virtual environment of its own from requirements-python-sdk.txt)
# with registration, and the MCP Inspector's web UI (tests/inspector/
# sign_in.mjs: switched on, it signs in and runs a tool); headless Chromium
# drives the pages (tests/clients/sign_in.mjs). Then the official conformance
# suite's `authorization` scenarios (tests/clients/conformance_authorization.mjs,
# the suite pinned in tests/conformance), and two coding agents, Claude Code
# and Gemini CLI, pinned in tests/agents, each signing in and calling a tool
# with a scripted model on loopback (tests/agents/agents.mjs). The consent
# page's picture lands in .tmp/oauth-clients/consent.png.
#
#   bash infra/oauth-clients.sh
#
# Prints `ok`/`FAILED` per check and last `oauth clients: N passed, M failed`.
source "$(dirname "$0")/common.sh"
cd "$ROOT"
dir="$ROOT/tests/clients"
out="$STATE_DIR/oauth-clients"
rm -rf "$out" && mkdir -p "$out/mcp-remote"
node_bin="$(node22)"
npm_ci_pinned "$dir"
npm_ci_pinned "$ROOT/tests/conformance"
npm_ci_pinned "$ROOT/tests/agents"
chromium="$(chromium_bin)" || { echo "oauth-clients: no Chromium that starts (apt-get install chromium as root, or set CHROMIUM)" >&2; exit 1; }
debug_build -q ||
  { echo "oauth-clients: the authorization server or the everything function did not build" >&2; exit 1; }

# A throwaway CA and a certificate for localhost: the client metadata document's https.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=oauth-clients test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
  -keyout "$out/ca.key" -out "$out/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$out/leaf.key" -out "$out/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$out/leaf.ext"
openssl x509 -req -in "$out/leaf.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" -CAcreateserial -days 1 \
  -extfile "$out/leaf.ext" -out "$out/leaf.pem" 2>/dev/null ||
  { echo "oauth-clients: openssl could not make the test certificates" >&2; exit 1; }

# On the emulator, as the functions run on AWS: the authorization server's
# grants and single-use records in the table, its records sealed and its
# tokens signed with KMS keys (infra/bootstrap.py makes the signing key),
# the MCP server's sessions in the table too.
bash infra/start-emulators.sh >&2
bash infra/bootstrap.sh >&2
# shellcheck disable=SC1091
set -a && source "$STATE_DIR/local.env" && set +a

mcp_port="$(free_port)" cimd_port="$(free_port)"
origin="http://127.0.0.1:$mcp_port"
pids=() web_pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${web_pids[@]}"; do kill_tree "$pid"; done
}
trap cleanup EXIT
start_sign_in_stack everything "127.0.0.1:$mcp_port" "$node_bin" "$out" \
  MCP_OAUTH_CIMD_TRUSTED_HOSTS="localhost:$cimd_port" SSL_CERT_FILE="$out/ca.pem"

# The Python SDK, pinned, in an environment of its own (it is not the
# tools' .venv: its dependencies must not move the tools').
python_env="$STATE_DIR/python-sdk-venv"
want="$(sha256sum "$dir/requirements-python-sdk.txt" | cut -d' ' -f1)"
if [ "$(cat "$python_env/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  say "installing the Python SDK client from tests/clients/requirements-python-sdk.txt" >&2
  rm -rf "$python_env" && python3 -m venv "$python_env" &&
    "$python_env/bin/pip" install -q --disable-pip-version-check -r "$dir/requirements-python-sdk.txt" >&2 ||
    { echo "oauth-clients: the Python SDK could not be installed" >&2; exit 1; }
  echo "$want" > "$python_env/.requirements.sha256"
fi

status=0
CHROMIUM="$chromium" MCP_REMOTE_CONFIG_DIR="$out/mcp-remote" \
  "$node_bin" "$dir/oauth.mjs" "$origin/mcp" "$out" "$cimd_port" "$out/leaf.pem" "$out/leaf.key" |
  tee "$out/checks.txt" || status=1
CHROMIUM="$chromium" NODE="$node_bin" "$python_env/bin/python" "$dir/python_oauth.py" "$origin/mcp" |
  tee "$out/python.txt" || status=1
# The Inspector's web UI, started as the README starts it, at the stack.
inspector="$ROOT/tests/inspector"
npm_ci_pinned "$inspector"
pinned="@modelcontextprotocol/inspector@$(cd "$inspector" && "$node_bin" -p 'require("./package.json").dependencies["@modelcontextprotocol/inspector"]')"
PATH="$(dirname "$node_bin"):$PATH" start_inspector_web "$inspector" "$out" oauth "npx $pinned --web --transport http --server-url $origin/mcp"
if [ -n "$web_url" ]; then
  CHROMIUM="$chromium" "$node_bin" "$inspector/sign_in.mjs" "$web_url" "$out" | tee "$out/inspector.txt" || status=1
else
  echo "inspector sign-in: 0 passed, 1 failed" | tee "$out/inspector.txt"
  status=1
fi
# The conformance suite's authorization scenarios, its output in the log.
CHROMIUM="$chromium" "$node_bin" "$dir/conformance_authorization.mjs" \
  "$ROOT/tests/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" "$origin" "$origin/mcp" "$out" |
  tee "$out/conformance.txt" || status=1
# Claude Code and Gemini CLI, homes and settings of their own under $out/agents.
mkdir -p "$out/agents"
CHROMIUM="$chromium" "$node_bin" "$ROOT/tests/agents/agents.mjs" "$origin/mcp" "$out/agents" "$out/mcp.log" "$out/authorization.log" |
  tee "$out/agents.txt" || status=1
count() { tail -n 1 "$1" | grep -Eo "[0-9]+ $2" | cut -d' ' -f1 || echo 1; }
passed=0 failed=0
for file in checks python inspector conformance agents; do
  passed=$((passed + $(count "$out/$file.txt" passed)))
  failed=$((failed + $(count "$out/$file.txt" failed)))
done
[ "$status" = 0 ] || echo "oauth-clients: logs in $out (provider.log, authorization.log, mcp.log)" >&2
echo "oauth clients: $passed passed, $failed failed"
exit "$status"
