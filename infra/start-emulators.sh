#!/usr/bin/env bash
# Starts moto's server on 127.0.0.1:$MOTO_PORT (default 5055): DynamoDB and
# KMS over the real AWS wire protocols, offline, through infra/moto_server.py
# (which applies requests one at a time, as DynamoDB does per item). Safe to
# run twice: an emulator already running is left as it is.
source "$(dirname "$0")/common.sh"
pidfile="$STATE_DIR/moto.pid"
if pid_alive "$pidfile"; then
  say "moto already running (pid $(cat "$pidfile")) on $MOTO_HOST:$MOTO_PORT"
  exit 0
fi
# Something else answering there already (another checkout's emulator)
# would answer our checks while ours dies on the taken port: say so now.
if curl -fsS -o /dev/null "http://$MOTO_HOST:$MOTO_PORT/moto-api/" 2>/dev/null; then
  rm -f "$pidfile"
  echo "moto did not start: $MOTO_HOST:$MOTO_PORT is taken by another emulator (another checkout's?); stop it, or set MOTO_PORT to a free port" >&2
  exit 1
fi
bash "$ROOT/infra/install-tools.sh"
nohup "$VENV/bin/python" "$ROOT/infra/moto_server.py" -H "$MOTO_HOST" -p "$MOTO_PORT" >"$STATE_DIR/moto.log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 1 100); do
  if curl -fsS -o /dev/null "http://$MOTO_HOST:$MOTO_PORT/moto-api/" 2>/dev/null; then
    # Something answered; if it is not ours, ours could not take the port.
    if ! pid_alive "$pidfile"; then
      rm -f "$pidfile"
      echo "moto did not start: $MOTO_HOST:$MOTO_PORT is taken by another emulator (another checkout's?); set MOTO_PORT to a free port (see .tmp/moto.log)" >&2
      exit 1
    fi
    say "moto started (pid $(cat "$pidfile")) on $MOTO_HOST:$MOTO_PORT, log in .tmp/moto.log"
    exit 0
  fi
  sleep 0.2
done
echo "moto did not start; see .tmp/moto.log" >&2
exit 1
