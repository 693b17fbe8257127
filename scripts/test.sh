#!/usr/bin/env bash
# `make test`: every ctest case once, in parallel (docs/testing.md). The
# cases labelled `sanitize` run on the ASan + UBSan build, then the ones
# labelled `release` on the release build (tests/labels.cmake says which
# is which and why). The template roots are built once, by the first pass
# (ctest's abx_roots fixture); the second finds them cached and does not
# re-add the fixture (-FS). The e2b profile of the suite (release) compares
# its skips with the fc run of the first pass (ABX_SUITE_COMPARE_WITH).
#
#   scripts/test.sh [-b BUILD] [-j N] [--] [CTEST-ARGS ...]
#
#   -b BUILD   release build directory (default build; the sanitizer build
#              is BUILD-sanitize)
#   -j N       cases at once (default: twice the cores: most cases wait on
#              sandboxes and sockets, not on the CPU)
# CTEST-ARGS go to both passes (-L quick, -R envd, ...). Each pass's
# output is kept in BUILD/ci/ctest-PASS.log and its wall time in
# BUILD/ci/phases.tsv (.ci/run's table). The last line is ctest's summary
# of both passes together; the exit status is 0 only if both passed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build
jobs=$(( $(nproc 2>/dev/null || echo 2) * 2 ))
while getopts b:j: opt; do
  case $opt in
    b) build=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) echo "usage: $0 [-b BUILD] [-j N] [CTEST-ARGS ...]" >&2; exit 4 ;;
  esac
done
shift $((OPTIND - 1))
case $jobs in ''|*[!0-9]*|0) echo "test: -j wants a positive integer, got '$jobs'" >&2; exit 4 ;; esac
san=$build-sanitize
for d in "$build" "$san"; do
  [ -f "$d/CTestTestfile.cmake" ] || { echo "test: $d is not a configured build (make build build-sanitize)" >&2; exit 4; }
done
mkdir -p "$build/ci"
: >"$build/ci/phases.tsv"

total=0 failed=0 rc=0
# pass NAME DIR CTEST-ARGS...: one ctest run, timed, its output kept.
pass() {
  local name=$1 dir=$2 t0 t1 prc log=$build/ci/ctest-$1.log line
  shift 2
  echo "test: pass '$name': ctest --test-dir $dir -j $jobs $*"
  t0=$(date +%s)
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log"
  prc=${PIPESTATUS[0]}
  t1=$(date +%s)
  printf 'ctest %s\t%d\n' "$name" $((t1 - t0)) >>"$build/ci/phases.tsv"
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    total=$((total + BASH_REMATCH[2]))
  elif ! grep -q 'No tests were found' "$log"; then
    echo "test: pass '$name' printed no summary (exit $prc)"
    rc=1
  fi
  [ "$prc" -eq 0 ] || rc=1
}

# vary-loop (suite.vary.loop, ten seeds): `make vary-loop`'s, not a pass's;
# hosts (QEMU guests of each host kind): `make test-hosts`'s.
pass sanitize "$san" -L sanitize -LE 'vary-loop|hosts' "$@"
ABX_SUITE_COMPARE_WITH=$(cd "$san" && pwd)/e2e/fc \
  pass release "$build" -LE 'sanitize|vary-loop|hosts' -FS abx_roots "$@"

if [ "$total" -eq 0 ]; then
  echo "test: no case matched ($*)"
  exit 1
fi
echo
echo "test: both passes: $total cases ($(grep -c . "$build/ci/phases.tsv") passes)"
echo "$(( (total - failed) * 100 / total ))% tests passed, $failed tests failed out of $total"
exit $rc
