#!/usr/bin/env bash
# Reference launcher for pytest-mtpsweep ladders (server.launch).
#   serve.sh TREATMENT PORT SESSION_DIR -- SERVER_ARGV...
# The plugin passes the complete server argv, treatment flags included, so this script needs no
# per-treatment case table: put what your rig needs around it (environment, numactl, a systemd
# scope, CUDA_VISIBLE_DEVICES ...) and leave the argv alone. It must start the server in the
# background, write its pid to SESSION_DIR/server.pid, and exit 0.
set -euo pipefail
if [ "$#" -lt 5 ] || [ "$4" != "--" ]; then
  echo "usage: serve.sh TREATMENT PORT SESSION_DIR -- SERVER_ARGV..." >&2
  exit 2
fi
treatment=$1 port=$2 dir=$3
shift 4
mkdir -p "$dir"
echo "serve.sh: treatment=$treatment port=$port" >>"$dir/server.log"
# setsid: its own session, so the caller's terminal signals do not reach it.
setsid "$@" >>"$dir/server.log" 2>&1 </dev/null &
echo "$!" >"$dir/server.pid"
