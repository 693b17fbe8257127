#!/usr/bin/env bash
# Soak: the whole suite N times on one abx-local per profile, -n 2, slow
# tests included, CI's short TTLs, while a CPU hog keeps every core busy.
# A test that fails in any run is a flake (or worse): each is printed with
# how often it failed and its first message. Exit 0 only if none failed.
#
#   scripts/soak.sh [-b BUILD] [-p "fc e2b"] [-H] [-s SECONDS] [N]
#
#   -b BUILD   build directory (default build)
#   -p LIST    profiles to soak (default "fc e2b")
#   -H         no CPU hog
#   -s SECONDS a budget instead of a count: runs start, taking the profiles
#              in turn, until SECONDS have passed (at least one run; the
#              last one started finishes). SOAK_S in the environment is
#              the same. CI's soak is 60 s (ctest suite.soak).
#   N          runs per profile (default 10)
# Outputs (JSON report and log of every run) stay in build/soak/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build profiles="fc e2b" hog=1 secs=${SOAK_S:-}
while getopts b:p:Hs: opt; do
  case $opt in
    b) build=$OPTARG ;;
    p) profiles=$OPTARG ;;
    H) hog=0 ;;
    s) secs=$OPTARG ;;
    *) echo "usage: $0 [-b BUILD] [-p PROFILES] [-H] [-s SECONDS] [N]" >&2; exit 4 ;;
  esac
done
shift $((OPTIND - 1))
n=${1:-10}
case $n in ''|*[!0-9]*|0) echo "soak: N must be a positive integer, got '$n'" >&2; exit 4 ;; esac
case $secs in ''|*[!0-9]*|0) [ -z "$secs" ] || { echo "soak: -s/SOAK_S must be a positive number of seconds, got '$secs'" >&2; exit 4; } ;; esac
runner=$build/host/abx-e2e
[ -x "$runner" ] || { echo "soak: $runner not built (make build)" >&2; exit 4; }
read -ra plist <<<"$profiles"
for p in "${plist[@]}"; do
  case $p in fc|e2b) ;; *) echo "soak: unknown profile '$p' (fc or e2b)" >&2; exit 4 ;; esac
done
out=$build/soak
rm -rf "$out"
mkdir -p "$out"

hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; hogs=(); }
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM
if [ "$hog" = 1 ]; then
  # One busy loop per core, each bounded by the whole soak's budget.
  for _ in $(seq "$(nproc)"); do
    timeout $(( secs ? secs + 600 : n * 600 )) sh -c 'while :; do :; done' &
    hogs+=($!)
  done
  echo "soak: CPU hog on $(nproc) cores"
fi

start=$(date +%s)
# N runs per profile, or (-s) the profiles in turn for as long as the
# budget lasts.
np=${#plist[@]} runs=0 of="/$n"
[ -z "$secs" ] || of=" (budget $secs s)"
while :; do
    if [ -n "$secs" ]; then
      [ $runs -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$secs" ] && break
      p=${plist[$((runs % np))]} i=$((runs / np + 1))
    else
      [ $runs -ge $((n * np)) ] && break
      p=${plist[$((runs / n))]} i=$((runs % n + 1))
    fi
    runs=$((runs + 1))
    rc=0
    env -u ABX_LOCAL_PROFILE -u E2E_CAPS -u E2E_PLATFORM -u E2E_DEFAULT_USER \
      -u E2E_SERVER_TEMPLATE -u E2E_SERVER_PORT -u E2E_RUN_ID \
      E2E_SANDBOX_TTL=120 E2E_SHORT_TTL=5 NO_COLOR=1 CI=true \
      "$runner" --local --profile "$p" -n 2 -q --json "$out/$p-$i.json" tests-lua \
      >"$out/$p-$i.log" 2>&1 || rc=$?
    echo "$rc" >"$out/$p-$i.rc"
    echo "soak: $p run $i$of: exit $rc, $(grep -E '^=+ .* in [0-9.]+s =+$' "$out/$p-$i.log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//')"
done
stop_hogs
echo "soak: $runs runs in $(( $(date +%s) - start )) s"

python3 - "$out" "${plist[@]}" <<'PY'
import glob, json, os, sys
out, profiles = sys.argv[1], sys.argv[2:]
bad = 0
for p in profiles:
    runs = sorted(glob.glob(os.path.join(out, p + "-*.json")))
    logs = sorted(glob.glob(os.path.join(out, p + "-*.log")))
    fails = {}
    missing = len(logs) - len(runs)
    exits = []
    for rcf in sorted(glob.glob(os.path.join(out, p + "-*.rc"))):
        with open(rcf) as f:
            rc = int(f.read().strip() or "-1")
        if rc != 0:
            exits.append("%s exited %d" % (os.path.basename(rcf)[:-3], rc))
    for path in runs:
        with open(path) as f:
            doc = json.load(f)
        for t in doc["tests"]:
            if t["outcome"] in ("failed", "error") or t.get("teardown_message"):
                e = fails.setdefault(t["nodeid"], [0, (t.get("message") or t.get("teardown_message") or "").splitlines()[:1]])
                e[0] += 1
    print("soak: %s: %d runs, %d failing tests%s" % (
        p, len(logs), len(fails), ", %d runs without a report" % missing if missing else ""))
    for nid, (count, first) in sorted(fails.items(), key=lambda kv: -kv[1][0]):
        print("  %dx %s\n      %s" % (count, nid, first[0] if first else ""))
    for e in exits:
        print("  " + e)
    bad += len(fails) + missing + len(exits)
sys.exit(1 if bad else 0)
PY
