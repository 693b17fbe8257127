#!/usr/bin/env bash
# abx-local benchmark: first build of each template root (a fresh cache;
# ABX_BENCH_BUILDS=0 skips it), sandbox create latency, memory of 20 live
# sandboxes, command round trip, file write+read throughput through the data-plane
# proxy vs. the same envd reached directly on loopback.
# Usage: bench/local_bench.sh [BUILD_DIR]   (run by `make bench`; needs root)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$here/../$build" ;; esac
local_bin="$build/abx-local/server/abx-local"
envd_bin="$build/abx-local/envd/abx-envd"
for b in "$local_bin" "$envd_bin"; do
  if [ ! -x "$b" ]; then
    echo "local_bench: $b not built (cmake --build $build)" >&2
    exit 1
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "local_bench: skipped, abx-local needs root" >&2
  exit 0
fi
exec python3 "$here/local_bench.py" "$local_bin" "$envd_bin"
