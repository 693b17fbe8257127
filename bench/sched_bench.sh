#!/usr/bin/env bash
# Scheduling at cloud latency: the suite (fast tests, no server template)
# against one abx-local whose control plane answers 40 ms late and whose
# creates take 800 ms, as FC's do, at -n 1, 2, 4, 8 and 16. Prints each
# wall time, the speed-up over -n 1 and the ideal (total test time / N +
# the longest test: what perfect spreading would give).
#   bench/sched_bench.sh [BUILD]   (make bench; ABX_BENCH_SCHED=0 skips it;
#   ABX_BENCH_SCHED_N="1 8" picks the worker counts; needs root)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$here/../$build" ;; esac
[ "${ABX_BENCH_SCHED:-1}" != 0 ] || { echo "sched_bench: skipped (ABX_BENCH_SCHED=0)"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "sched_bench: skipped, abx-local needs root" >&2; exit 0; }
for b in host/abx-e2e abx-local/server/abx-local abx-local/envd/abx-envd; do
  [ -x "$build/$b" ] || { echo "sched_bench: $build/$b not built" >&2; exit 1; }
done
read -ra counts <<<"${ABX_BENCH_SCHED_N:-1 2 4 8 16}"
exec python3 "$here/sched_bench.py" "$build" "$here/../tests-lua" "${counts[@]}"
