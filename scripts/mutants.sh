#!/usr/bin/env bash
# Mutation check of the suite. Two kinds of mutants of abx-local (or of the
# client):
#  - a mutant that MUST BE KILLED breaks a documented contract on purpose
#    and names the suite test that must then fail. A test that still passes
#    against a broken platform proves nothing, so a surviving mutant fails
#    this script;
#  - a mutant that MUST SURVIVE changes an undocumented detail the real
#    cloud may answer differently (an id's shape, a message's wording, an
#    error page's text, a page size). The whole suite must still pass
#    against it: a test it fails asserts an implementation detail, not a
#    contract, so such a mutant, wrongly killed, fails this script too.
#
#   scripts/mutants.sh [-b BUILD] [-n] [FILE.mut ...]   (default tests/mutants/*.mut)
#
#   -b BUILD  the build directory whose abx-e2e runs the suite (default build)
#   -n        dry run: check each mutant's fields and that its sed script
#             changes its file (in the working tree, left untouched); no
#             build, no run
#
# A .mut line has four TAB-separated fields:
#   name  file-under-the-repo  sed-E-script  expectation
# where the expectation is the node id of the test expected to fail (a
# mutant that must be killed), or `-` or `survives` (a mutant that must
# survive). Lines starting with # and blank lines are skipped. The
# mutants are applied one at a time to a private copy of the sources (the
# files git tracks plus the untracked ones it does not ignore; the working
# tree is never touched); only abx-local and its envd are rebuilt there,
# and the suite runs with BUILD's abx-e2e against them. A mutant of the
# client (a file outside abx-local/: runtime/, bindings/, host/) needs the
# runner itself rebuilt: then abx-e2e is built in the copy too and the
# suite runs with that one.
#
# Lines of a .mut file that configure its runs:
#   # env: NAME=VALUE   sets NAME for the runs of that file's mutants and
#                       its baselines (e.g. ABX_LOCAL_PROFILE=fc: abx-local
#                       imitates FC); ABX_LOCAL_PROFILE, E2E_CAPS and
#                       E2E_PLATFORM are unset otherwise, so a file without
#                       env lines runs on the e2b profile with its
#                       capability set
#   # suite: PATHS      what a mutant that must survive runs: test files or
#                       directories of the repository, space-separated
#                       (several lines add up; default tests-lua), with
#                       -n 2
#
# Before its mutants, each file's baselines run on the unmutated platform:
# every node id named must pass (a skipped one cannot kill anything), and,
# if the file has mutants that must survive, its suite must pass.
# Each mutant then reports one line:
#   killed          NAME -> NODE        (must be killed: its test failed)
#   SURVIVED        NAME: NODE still passes
#   ok-survived     NAME                (must survive: the suite passed)
#   WRONGLY-KILLED  NAME: FAILED-NODES  (must survive: these tests failed)
#   BAD             NAME: why           (malformed, no-op, does not build)
# and the closing line counts them; the exit status is 0 only when no
# mutant SURVIVED, none was WRONGLY-KILLED and none is BAD.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=build
dry=0
while getopts b:n opt; do
  case $opt in
    b) build=$OPTARG ;;
    n) dry=1 ;;
    *) echo "usage: $0 [-b BUILD] [-n] [FILE.mut ...]" >&2; exit 4 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- tests/mutants/*.mut

is_survivor() { [ "$1" = - ] || [ "$1" = survives ]; }

# ---- dry run: every sed script must change its file ----------------------
if [ $dry -eq 1 ]; then
  out=$(mktemp /tmp/abx-mutants-dry.XXXXXX)
  trap 'rm -f "$out"' EXIT
  ok=0; bad=0
  for mut in "$@"; do
    while IFS=$'\t' read -r name file script node; do
      case $name in ''|'#'*) continue ;; esac
      why=
      if [ -z "$node" ]; then why="needs 4 TAB-separated fields"
      elif [ ! -f "$file" ]; then why="no file $file"
      elif ! sed -E -e "$script" "$file" >"$out" 2>&1; then why="sed: $(head -n 1 "$out")"
      elif cmp -s "$out" "$file"; then why="the sed script changed nothing in $file"
      fi
      if [ -n "$why" ]; then
        echo "BAD      $name: $why"; bad=$((bad + 1))
      else
        is_survivor "$node" && kind="must survive" || kind="must kill $node"
        echo "applies  $name ($kind)"; ok=$((ok + 1))
      fi
    done <"$mut"
  done
  echo "mutants: dry run: $((ok + bad)) mutants, $ok apply, $bad bad"
  [ $bad -eq 0 ]
  exit
fi

runner=$repo/$build/host/abx-e2e
[ -x "$runner" ] || { echo "mutants: $runner not built (make build)" >&2; exit 4; }

tmp=$(mktemp -d /tmp/abx-mutants.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
# Tracked files and the untracked ones not ignored (a developer runs this
# before committing); a tracked file deleted from the working tree is left
# out.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -f "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done | sort -zu | tar --null --verbatim-files-from -T - -cf - |
  tar -xf - -C "$tmp/src"

log=$tmp/log
report=$tmp/report.json
targets="abx-local abx-envd"
if awk -F'\t' '!/^#/ && NF == 4 && $2 !~ /^abx-local\// { c = 1 } END { exit !c }' "$@"; then
  targets="$targets abx-e2e"
  runner=$tmp/build/host/abx-e2e
fi
build_local() {
  # shellcheck disable=SC2086  # $targets is a list of target names
  cmake --build "$tmp/build" -j "$(nproc)" --target $targets >"$log" 2>&1
}
echo "mutants: building abx-local in $tmp"
if ! { cmake -S "$tmp/src" -B "$tmp/build" -DABX_WERROR=OFF >"$log" 2>&1 && build_local; }; then
  cat "$log" >&2; exit 3
fi

# The runs happen in a scratch directory (tests-lua linked in) so they do
# not touch the user's .abx-e2e (ledgers, --lf state).
mkdir -p "$tmp/run"
ln -s "$repo/tests-lua" "$tmp/run/tests-lua"
run_env=()    # NAME=VALUE of the .mut file being run
run_suite() {  # run_suite ABX-E2E-ARGS...: the suite's exit code against the copy
  rm -f "$report"
  (cd "$tmp/run" &&
   env -u E2E_CAPS -u E2E_PLATFORM -u ABX_LOCAL_PROFILE "${run_env[@]}" \
     ABX_LOCAL_BIN="$tmp/build/abx-local/server/abx-local" \
     ABX_ENVD_BIN="$tmp/build/abx-local/envd/abx-envd" \
     "$runner" --local -q --json "$report" "$@") </dev/null >"$log" 2>&1 &&
    return 0 || return $?
}
# The node ids of the last run's report whose outcome is one of $@
# (failed also matches a teardown error), one a line.
outcomes() {
  [ -f "$report" ] || return 0
  python3 - "$report" "$@" <<'PY'
import json, sys
want = set(sys.argv[2:])
for t in json.load(open(sys.argv[1], encoding="utf-8")).get("tests", []):
    if t.get("outcome") in want or ("failed" in want and t.get("teardown_message")):
        print(t.get("nodeid", "?"))
PY
}

killed=0; survived=0; okay=0; wrong=0; bad=0
for mut in "$@"; do
  mapfile -t run_env < <(sed -n 's/^# env: \([A-Za-z_][A-Za-z0-9_]*=.*\)$/\1/p' "$mut")
  suite=()
  while read -r -a words; do suite+=("${words[@]}"); done \
    < <(sed -n 's/^# suite: *//p' "$mut")
  [ ${#suite[@]} -gt 0 ] || suite=(tests-lua)
  for p in "${suite[@]}"; do
    top=${p%%/*}
    [ -e "$repo/$p" ] || { echo "mutants: $mut: # suite: no $p in the repository" >&2; exit 5; }
    [ -e "$tmp/run/$top" ] || ln -s "$repo/$top" "$tmp/run/$top"
  done
  mapfile -t expect < <(grep -v '^#' "$mut" | awk -F'\t' 'NF == 4 { print $4 }' | sort -u)
  [ ${#expect[@]} -gt 0 ] || { echo "mutants: no mutants in $mut" >&2; exit 5; }
  nodes=(); survivors=0
  for n in "${expect[@]}"; do
    if is_survivor "$n"; then survivors=1; else nodes+=("$n"); fi
  done
  # The previous file's last mutant is restored in the source but still
  # in the binaries: rebuild before this file's baselines.
  build_local || { cat "$log" >&2; exit 3; }
  # Each node id must pass on the unmutated platform first, not skip.
  if [ ${#nodes[@]} -gt 0 ]; then
    if ! run_suite "${nodes[@]}"; then
      echo "mutants: the baseline (no mutant) of $mut does not pass:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
    mapfile -t skipped < <(outcomes skipped xfailed)
    if [ ${#skipped[@]} -gt 0 ]; then
      echo "mutants: $mut: skipped on this platform, so it cannot kill a mutant:" >&2
      printf '  %s\n' "${skipped[@]}" >&2
      exit 1
    fi
  fi
  # The suite the survivors run must pass unmutated.
  if [ $survivors -eq 1 ]; then
    echo "mutants: baseline of $mut: ${suite[*]} (-n 2)"
    if ! run_suite -n 2 "${suite[@]}"; then
      echo "mutants: the suite baseline (no mutant) of $mut does not pass:" >&2
      outcomes failed error | sed 's/^/  /' >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
  fi
  while IFS=$'\t' read -r name file script node; do
    case $name in ''|'#'*) continue ;; esac
    if [ -z "$node" ]; then echo "BAD      $name: needs 4 TAB-separated fields"; bad=$((bad + 1)); continue; fi
    f=$tmp/src/$file
    if [ ! -f "$f" ]; then echo "BAD      $name: no file $file"; bad=$((bad + 1)); continue; fi
    cp -p "$f" "$tmp/orig"
    if ! sed -E -i -e "$script" "$f" 2>"$log"; then
      echo "BAD      $name: sed: $(head -n 1 "$log")"; bad=$((bad + 1))
    elif cmp -s "$f" "$tmp/orig"; then
      echo "BAD      $name: the sed script changed nothing in $file"; bad=$((bad + 1))
    elif ! build_local; then
      echo "BAD      $name: does not compile"; bad=$((bad + 1))
    elif is_survivor "$node"; then
      rc=0; run_suite -n 2 "${suite[@]}" || rc=$?
      case $rc in
        0) echo "ok-survived $name"; okay=$((okay + 1)) ;;
        1) mapfile -t failed < <(outcomes failed error | sort -u)
           if [ ${#failed[@]} -gt 0 ]; then
             list=$(printf '%s; ' "${failed[@]}"); list=${list%; }
           else
             list="exit 1 with no failed test in the report:"
           fi
           echo "WRONGLY-KILLED $name: $list"; wrong=$((wrong + 1))
           [ ${#failed[@]} -gt 0 ] || tail -n 5 "$log" ;;
        *) echo "BAD      $name: exit $rc"; tail -n 5 "$log"; bad=$((bad + 1)) ;;
      esac
    else
      rc=0; run_suite "$node" || rc=$?
      case $rc in
        1) echo "killed   $name -> $node"; killed=$((killed + 1)) ;;
        0) echo "SURVIVED $name: $node still passes"; survived=$((survived + 1)) ;;
        *) echo "BAD      $name: exit $rc"; tail -n 5 "$log"; bad=$((bad + 1)) ;;
      esac
    fi
    cp -p "$tmp/orig" "$f"; touch "$f"
  done <"$mut"
done
build_local || true
echo "mutants: $((killed + survived + okay + wrong + bad)) mutants:" \
  "$killed killed, $survived survived (must be killed);" \
  "$okay ok-survived, $wrong wrongly killed (must survive); $bad bad"
[ $survived -eq 0 ] && [ $wrong -eq 0 ] && [ $bad -eq 0 ]
