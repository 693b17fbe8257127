#!/usr/bin/env bash
# Coverage-guided fuzzing of the hand-written parsers (as curl and Redis
# do): builds every tests/fuzz/fuzz_<name>.c with clang's libFuzzer, ASan
# and UBSan into build-fuzz/ and runs each for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS] [NAME...]      e.g. scripts/fuzz.sh 300 mask
#
# Each run reads the committed seeds (tests/fuzz/corpus/NAME, never
# written) and keeps what it learns in build-fuzz/corpus/NAME (scratch,
# reused by the next run). Crashes land in build-fuzz/artifacts/NAME/ and
# are minimised there; commit a minimised crasher to the seed corpus by
# hand, with its fix. Exit status 1 if any target crashed.
# Environment: CC (default clang-14 or clang), FUZZ_FLAGS (extra
# libFuzzer flags), FUZZ_JOBS (parallel targets, default 1).
set -u
cd "$(dirname "$0")/.." || exit 2

secs=${1:-60}
shift || true
case $secs in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, got '$secs'" >&2
                 exit 2 ;;
esac

cc=${CC:-}
if [ -z "$cc" ]; then
  for c in clang-14 clang; do
    command -v "$c" > /dev/null && { cc=$c; break; }
  done
fi
if [ -z "$cc" ]; then
  echo "fuzz.sh: clang not found (Debian: apt-get install clang-14" \
       "libclang-rt-14-dev); the gcc corpus replay is ctest -R '^fuzz\\.'" >&2
  exit 2
fi
# libFuzzer ships in the compiler-rt package: check it links.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <stdint.h>' '#include <stddef.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
  '{ (void)d; (void)n; return 0; }' > "$probe/p.c"
if ! "$cc" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2> /dev/null; then
  echo "fuzz.sh: $cc cannot link libFuzzer (Debian: libclang-rt-14-dev)" >&2
  exit 2
fi

out=build-fuzz
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-g -O1 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer $san
        $(for d in runtime/*/; do printf -- '-I%s ' "${d%/}"; done)
        -Itests/fuzz -Itests/lib $(pkg-config --cflags libcjson libcrypto)"
libs="$(pkg-config --libs libcjson libcrypto libcurl) -lpthread -lm"
mkdir -p "$out/obj"

# The library under test, instrumented for coverage once for all targets.
objs=()
for src in runtime/*/*.c; do
  obj=$out/obj/$(basename "${src%.c}").o
  if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] ||
     [ -n "$(find runtime -name '*.h' -newer "$obj" -print -quit)" ]; then
    # shellcheck disable=SC2086
    "$cc" $cflags -fsanitize=fuzzer-no-link -c "$src" -o "$obj" || exit 1
  fi
  objs+=("$obj")
done

if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in tests/fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    names+=("${n#fuzz_}")
  done
fi

build() {
  local name=$1 extra=()
  [ -f "tests/fuzz/fuzz_$name.c" ] || {
    echo "fuzz.sh: no target tests/fuzz/fuzz_$name.c" >&2; return 1; }
  # envd's path resolution is compiled from its own source file.
  if [ "$name" = envd_path ]; then
    # shellcheck disable=SC2207  # pkg-config flags split on purpose
    extra=(-Iabx-local/envd $(pkg-config --cflags libmicrohttpd)
           abx-local/envd/users.c)
  fi
  # shellcheck disable=SC2086
  "$cc" $cflags -fsanitize=fuzzer "${extra[@]}" "tests/fuzz/fuzz_$name.c" \
    "${objs[@]}" $libs -o "$out/fuzz_$name"
}

run() {
  local name=$1 scratch=$out/corpus/$1 art=$out/artifacts/$1/
  local log=$out/logs/$1.log dict=() rc crash
  mkdir -p "$scratch" "$art" "$out/logs"
  [ -f "tests/fuzz/dict/$name.dict" ] && dict=(-dict="tests/fuzz/dict/$name.dict")
  # First corpus dir receives new inputs: the scratch one, never the seeds.
  # shellcheck disable=SC2086
  "$out/fuzz_$name" -max_total_time="$secs" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" \
    "${dict[@]}" ${FUZZ_FLAGS:-} "$scratch" "tests/fuzz/corpus/$name" \
    > "$log" 2>&1
  rc=$?
  local execs speed cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  printf 'fuzz %-17s %4ss  %9s execs  %6s exec/s  %s  rc=%d\n' "$name" \
    "$secs" "${execs:-?}" "${speed:-?}" "${cov:-}" "$rc"
  if [ $rc -ne 0 ]; then
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*property failed|.*runtime error)' \
      "$log" | head -5
    for crash in "$art"crash-* "$art"timeout-* "$art"oom-*; do
      [ -e "$crash" ] || continue
      case $crash in *.min) continue ;; esac
      "$out/fuzz_$name" -minimize_crash=1 -runs=20000 \
        -exact_artifact_path="$crash.min" "$crash" > /dev/null 2>&1
      echo "  crasher: $crash (minimised: $crash.min, log: $log)"
    done
    return 1
  fi
}

status=0
for name in "${names[@]}"; do
  build "$name" || exit 1
done
jobs_max=${FUZZ_JOBS:-1}
pids=()
for name in "${names[@]}"; do
  run "$name" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs_max" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do
  wait "$p" || status=1
done
exit $status
