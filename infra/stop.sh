#!/usr/bin/env bash
# Stops what the infra/ scripts started (the emulator, cargo lambda watch),
# by the process ids they recorded. Safe to run twice.
source "$(dirname "$0")/common.sh"
for pidfile in "$STATE_DIR"/*.pid; do
  [ -e "$pidfile" ] || continue
  name="$(basename "$pidfile" .pid)"
  if pid_alive "$pidfile"; then
    pid="$(cat "$pidfile")"
    kill_tree "$pid"
    say "stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
done
