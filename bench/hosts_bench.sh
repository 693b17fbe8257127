#!/bin/sh
# Host harness: a guest of each host kind booted from its cached image
# (tests/hosts/guest.py), running `true`, powered off: the median wall time
# of HOSTS_RUNS runs (default 3) after the image is built or found (not
# timed). Aim: under 30 s. Every run must exit 0.
# Usage: bench/hosts_bench.sh [BUILD]   (make bench passes it; needs root
# and qemu-system-x86: `make test-hosts` installs it)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ] || ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
  echo "hosts_bench: skipped, needs root and qemu-system-x86 (make test-hosts installs it)" >&2
  exit 0
fi
python3 - "$here/../tests/hosts/guest.py" "${HOSTS_RUNS:-3}" <<'PY'
import statistics, subprocess, sys, time
guest, runs = sys.argv[1], int(sys.argv[2])
for kind in ("debian12-v2", "debian13-v2"):
    subprocess.run([sys.executable, guest, "build", kind], check=True, stdout=subprocess.DEVNULL)
    accel = subprocess.run([sys.executable, guest, "accel", kind], check=True,
                           capture_output=True, text=True).stdout.strip()
    walls = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run([sys.executable, guest, "run", kind, "--", "true"], check=True)
        walls.append(time.monotonic() - t0)
    m = statistics.median(walls)
    print("hosts: %s boots, runs true, powers off: %.1f s (median of %d, %s) "
          "(aim < 30 s) %s" % (kind, m, runs, {"kvm": "KVM", "tcg": "software emulation"}[accel],
                               "ok" if m < 30 else "OVER"))
PY
