#!/bin/sh
# Builds and runs the masker throughput bench against BUILD's runtime lib.
# Usage: bench/mask_bench.sh [BUILD]   (make bench passes it)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lib="$build/runtime/libabx_runtime.a"
[ -f "$lib" ] || { echo "mask_bench: $lib not built" >&2; exit 1; }
out=$(mktemp /tmp/mask_bench.XXXXXX)
trap 'rm -f "$out"' EXIT
cc -std=c11 -O2 -D_GNU_SOURCE -I"$root/runtime" "$here/mask_bench.c" "$lib" \
   $(pkg-config --libs libcrypto libcjson) -lpthread -o "$out"
"$out"
