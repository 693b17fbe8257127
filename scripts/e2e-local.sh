#!/usr/bin/env bash
# Runs the E2E suite against abx-local: starts `abx-local serve` on free
# loopback ports with a fresh state dir, points abx-e2e at it through the
# ABX_SANDBOX_* variables it prints, runs the suite, and stops the server
# (which kills every sandbox it still has) whatever the outcome.
#
#   scripts/e2e-local.sh BUILD_DIR [abx-e2e arguments ...]
set -euo pipefail

BUILD=${1:?usage: e2e-local.sh BUILD_DIR [abx-e2e args]}
shift
SERVER="$BUILD/abx-local/server/abx-local"
RUNNER="$BUILD/host/abx-e2e"
for bin in "$SERVER" "$RUNNER"; do
  [ -x "$bin" ] || { echo "e2e-local: $bin is not built (run make build)" >&2; exit 4; }
done

STATE=$(mktemp -d /tmp/abx-e2e-local.XXXXXX)
OUT="$STATE.out"
SERVER_PID=
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$STATE" "$OUT" "$STATE.err"
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$SERVER" serve --listen 127.0.0.1:0 --data-listen 127.0.0.1:0 \
  --state-dir "$STATE" >"$OUT" 2>"$STATE.err" &
SERVER_PID=$!
for _ in $(seq 1 200); do
  grep -qx ready "$OUT" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.05
done
if ! grep -qx ready "$OUT" 2>/dev/null; then
  echo "e2e-local: abx-local did not start:" >&2
  cat "$STATE.err" >&2
  exit 3
fi

# The printed lines are `export NAME=value`; take them as data, not code.
while IFS= read -r line; do
  case "$line" in
    "export ABX_SANDBOX_"*=*)
      kv=${line#export }
      export "${kv%%=*}=${kv#*=}" ;;
  esac
done <"$OUT"
echo "e2e-local: abx-local at $ABX_SANDBOX_BASE_URL, data plane $ABX_SANDBOX_URL"

set +e
"$RUNNER" "$@"
rc=$?
set -e
exit $rc
