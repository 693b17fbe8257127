#!/bin/sh
# Trace cost: the fast suite (tests-lua, -m "not e2e_slow", -n 2) on
# --local --profile fc, with --trace off and with --trace on (every test's
# trace written), alternating, TRACE_RUNS times each (default 2), after one
# warm-up run. Figure: the median wall time of each and what `on` adds.
# Aim: at most 10 %. Every run must pass (exit 0).
# Usage: bench/trace_bench.sh [BUILD]   (make bench passes it; needs root)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/host/abx-e2e"
[ -x "$bin" ] || { echo "trace_bench: $bin not built" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
  echo "trace_bench: skipped, abx-local needs root" >&2
  exit 0
fi
bin=$(cd "$(dirname "$bin")" && pwd)/abx-e2e
out=$(mktemp -d /tmp/trace_bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
cd "$here/.."
python3 - "$bin" "$out" "${TRACE_RUNS:-2}" <<'PY'
import statistics, subprocess, sys, time
bin, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def once(mode):
    t0 = time.monotonic()
    p = subprocess.run([bin, "--local", "--profile", "fc", "-n", "2", "-q", "-m", "not e2e_slow",
                        "--trace", mode, "--output", out + "/" + mode, "tests-lua"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("trace_bench: --trace %s run failed (exit %d):\n%s" % (
            mode, p.returncode, p.stdout.decode(errors="replace")[-2000:]))
    return dt
once("off")
walls = {"off": [], "on": []}
for _ in range(runs):
    for mode in ("off", "on"):
        walls[mode].append(once(mode))
off, on = statistics.median(walls["off"]), statistics.median(walls["on"])
extra = (on - off) / off * 100
print("trace: fast suite --trace off %.2f s, --trace on %.2f s (median of %d): %+.1f %% "
      "(aim <= 10 %%) %s" % (off, on, runs, extra, "ok" if extra <= 10 else "OVER"))
PY
