#!/usr/bin/env bash
# Upload bench of the client: 100 MiB (ABX_BENCH_UPLOAD_MIB) through
# abx_envd_upload as octet-stream and as the multipart fallback an envd
# before 0.5.7 gets, against abx-local's e2b profile (its envd takes
# both, so the two client paths meet the same server), then the fallback
# as the fc profile (envd 0.5.2) really gets it. Prints MiB/s and the
# client's peak RSS for each; each upload runs in its own process.
# Usage: bench/upload_bench.sh [BUILD_DIR]   (run by `make bench`; root)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
libs="$build/runtime/libabx_client.a $build/runtime/libabx_output.a $build/runtime/libabx_codec.a"
incs="-I$root/runtime/client -I$root/runtime/output -I$root/runtime/codec"
local_bin="$build/abx-local/server/abx-local"
envd_bin="$build/abx-local/envd/abx-envd"
mib="${ABX_BENCH_UPLOAD_MIB:-100}"
for b in $libs "$local_bin" "$envd_bin"; do
  [ -e "$b" ] || { echo "upload_bench: $b not built (cmake --build $build)" >&2; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "upload_bench: skipped, abx-local needs root" >&2
  exit 0
fi
tmp=$(mktemp -d /tmp/upload_bench.XXXXXX)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cc -std=c11 -O2 -D_GNU_SOURCE $incs "$here/upload_bench.c" $libs \
   $(pkg-config --libs libcurl libcrypto libcjson) -lpthread -o "$tmp/upload_bench"

# Starts abx-local with profile $1; its E2B_* exports land in the env.
serve() {
  local out="$tmp/out-$1" i
  "$local_bin" serve --listen 127.0.0.1:0 --state-dir "$tmp/state-$1" \
    --envd "$envd_bin" --profile "$1" >"$out" 2>"$tmp/log-$1" &
  server=$!
  for i in $(seq 200); do
    grep -qx ready "$out" && break
    sleep 0.1
  done
  grep -qx ready "$out" || { cat "$tmp/log-$1" >&2; exit 1; }
  while IFS= read -r line; do
    case $line in "export E2B_"*) export "${line#export }" ;; esac
  done <"$out"
}
stop() {
  kill "$server"; wait "$server" 2>/dev/null || true; server=
}

echo "upload_bench: $mib MiB, client peak RSS per upload (own process each)"
serve e2b
"$tmp/upload_bench" octet "$mib"
"$tmp/upload_bench" multipart "$mib"
stop
serve fc
"$tmp/upload_bench" auto "$mib"
stop
