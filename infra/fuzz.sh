#!/usr/bin/env bash
# Fuzzes the three places untrusted bytes enter (the request handler, the
# requestState opener, handle parsing) with the stable generator in
# tests/fuzz: INPUTS per target (default 10^6), optimised build with
# overflow checks. Deterministic per SEED; prints it for replay.
#   bash infra/fuzz.sh [INPUTS] [SEED]
# The test command runs a short smoke of each target instead (infra/test.sh).
source "$(dirname "$0")/common.sh"
cd "$ROOT"
INPUTS="${1:-1000000}"
SEED="${2:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}"
say "building the fuzzer (profile fuzz)"
cargo build --locked --profile fuzz -p e2e --bin fuzz
say "$INPUTS inputs per target, seed $SEED"
"$TARGET/fuzz/fuzz" all "$INPUTS" "$SEED" | tee "$STATE_DIR/fuzz.log"
