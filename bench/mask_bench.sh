#!/bin/sh
# Builds and runs the masker throughput bench against BUILD's runtime libraries.
# Usage: bench/mask_bench.sh [BUILD]   (make bench passes it)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
libs="$build/runtime/libabx_output.a $build/runtime/libabx_codec.a"
incs="-I$root/runtime/output -I$root/runtime/codec"
for l in $libs; do
  [ -f "$l" ] || { echo "mask_bench: $l not built" >&2; exit 1; }
done
out=$(mktemp /tmp/mask_bench.XXXXXX)
trap 'rm -f "$out"' EXIT
cc -std=c11 -O2 -D_GNU_SOURCE $incs "$here/mask_bench.c" $libs \
   $(pkg-config --libs libcrypto libcjson) -lpthread -o "$out"
"$out"
