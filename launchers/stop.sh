#!/usr/bin/env bash
# Reference stop script for pytest-mtpsweep ladders (server.stop).
#   stop.sh TREATMENT PORT SESSION_DIR
# Stops the server whose pid serve.sh wrote: SIGTERM, up to 10 s, then SIGKILL.
set -euo pipefail
if [ "$#" -ne 3 ]; then
  echo "usage: stop.sh TREATMENT PORT SESSION_DIR" >&2
  exit 2
fi
pidfile="$3/server.pid"
[ -f "$pidfile" ] || { echo "stop.sh: no $pidfile" >&2; exit 0; }
pid=$(cat "$pidfile")
kill -TERM "$pid" 2>/dev/null || exit 0
for _ in $(seq 100); do
  kill -0 "$pid" 2>/dev/null || exit 0
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null || true
