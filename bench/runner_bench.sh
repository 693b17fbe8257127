#!/bin/sh
# Runner overhead: how fast abx-e2e collects and runs trivial tests, serial
# and with workers, and the peak memory of the run (parent + children).
# Usage: bench/runner_bench.sh [BUILD]   (make bench passes it)
set -eu
build=${1:-build}
bin="$build/host/abx-e2e"
[ -x "$bin" ] || { echo "runner_bench: $bin not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/abx-e2e
dir=$(mktemp -d /tmp/runner_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/tests-lua"
# 4 files x 2500 tests, each with a test-scoped fixture and one assertion.
for f in 1 2 3 4; do
  {
    echo 'local e2e = require "e2e"'
    echo 'e2e.fixture("n", function() return 1, function() end end)'
    echo 'for i = 1, 2500 do'
    echo '  e2e.test("t" .. i, function(n) e2e.expect(n + i):eq(i + 1) end)'
    echo 'end'
  } >"$dir/tests-lua/test_b$f.lua"
done
cd "$dir"
python3 - "$bin" <<'PY'
import resource, subprocess, sys, time
bin = sys.argv[1]
for label, args in (("serial", []), ("-n 2", ["-n", "2"])):
    t0 = time.monotonic()
    p = subprocess.run([bin, "-q"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    dt = time.monotonic() - t0
    last = p.stdout.decode(errors="replace").strip().splitlines()[-1]
    print(f"runner {label}: 10000 tests in {dt:.2f} s ({10000 / dt:,.0f} tests/s), exit {p.returncode}: {last.strip('= ')}")
    # a wrong result fails the bench (a slow one only reads slow)
    if p.returncode != 0 or not last.strip("= ").startswith("10000 passed"):
        sys.exit(f"runner_bench: {label}: want exit 0 and 10000 passed")
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"runner peak RSS of the largest process: {rss:.1f} MiB")
PY
