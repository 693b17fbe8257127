#!/usr/bin/env bash
# Mutation check of the suite: each mutant breaks abx-local on purpose and
# names the suite test that must then fail. A test that still passes
# against a broken platform proves nothing, so a surviving mutant fails
# this script.
#
#   scripts/mutants.sh [-b BUILD] [FILE.mut ...]   (default tests/mutants/*.mut)
#
# A .mut line has four TAB-separated fields:
#   name  file-under-the-repo  sed-E-script  node-id-expected-to-fail
# Lines starting with # and blank lines are skipped. The mutants are
# applied one at a time to a private copy of the tracked sources (the
# working tree is never touched); only abx-local and its envd are rebuilt
# there, and the suite runs with BUILD's abx-e2e against them. A mutant of
# the client (a file outside abx-local/: runtime/, bindings/, host/) needs
# the runner itself rebuilt: then abx-e2e is built in the copy too and the
# suite runs with that one. A line "# env: NAME=VALUE" in a .mut file sets
# NAME for the runs of that file's mutants and its baseline (e.g.
# ABX_LOCAL_PROFILE=fc: abx-local imitates FC).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=build
while getopts b: opt; do
  case $opt in
    b) build=$OPTARG ;;
    *) echo "usage: $0 [-b BUILD] [FILE.mut ...]" >&2; exit 4 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- tests/mutants/*.mut
runner=$repo/$build/host/abx-e2e
[ -x "$runner" ] || { echo "mutants: $runner not built (make build)" >&2; exit 4; }

tmp=$(mktemp -d /tmp/abx-mutants.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
git ls-files -z | (cd "$repo" && xargs -0 tar -cf -) | tar -xf - -C "$tmp/src"

log=$tmp/log
targets="abx-local abx-envd"
if awk -F'\t' '!/^#/ && NF == 4 && $2 !~ /^abx-local\// { c = 1 } END { exit !c }' "$@"; then
  targets="$targets abx-e2e"
  runner=$tmp/build/host/abx-e2e
fi
build_local() {
  cmake --build "$tmp/build" -j "$(nproc)" --target $targets >"$log" 2>&1
}
echo "mutants: building abx-local in $tmp"
cmake -S "$tmp/src" -B "$tmp/build" -DABX_WERROR=OFF >"$log" 2>&1 &&
  build_local || { cat "$log" >&2; exit 3; }

# The runs happen in a scratch directory (tests-lua linked in) so they do
# not touch the user's .abx-e2e (ledgers, --lf state).
mkdir -p "$tmp/run"
ln -s "$repo/tests-lua" "$tmp/run/tests-lua"
run_env=()    # NAME=VALUE of the .mut file being run
run_node() {   # run_node NODEID...: the suite's exit code against the copy
  (cd "$tmp/run" &&
   env "${run_env[@]}" ABX_LOCAL_BIN=$tmp/build/abx-local/server/abx-local \
   ABX_ENVD_BIN=$tmp/build/abx-local/envd/abx-envd \
     "$runner" --local -q "$@") >"$log" 2>&1 && return 0 || return $?
}

killed=0; survived=0; bad=0
for mut in "$@"; do
  mapfile -t run_env < <(sed -n 's/^# env: \([A-Za-z_][A-Za-z0-9_]*=.*\)$/\1/p' "$mut")
  # Each node id must pass on the unmutated platform first.
  mapfile -t nodes < <(grep -v '^#' "$mut" | awk -F'\t' 'NF == 4 { print $4 }' | sort -u)
  [ ${#nodes[@]} -gt 0 ] || { echo "mutants: no mutants in $mut" >&2; exit 5; }
  if ! run_node "${nodes[@]}"; then
    echo "mutants: the baseline (no mutant) of $mut does not pass:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  while IFS=$'\t' read -r name file script node; do
    case $name in ''|'#'*) continue ;; esac
    if [ -z "$node" ]; then echo "BAD      $name: needs 4 TAB-separated fields"; bad=$((bad + 1)); continue; fi
    f=$tmp/src/$file
    if [ ! -f "$f" ]; then echo "BAD      $name: no file $file"; bad=$((bad + 1)); continue; fi
    cp -p "$f" "$tmp/orig"
    sed -E -i -e "$script" "$f"
    if cmp -s "$f" "$tmp/orig"; then
      echo "BAD      $name: the sed script changed nothing in $file"; bad=$((bad + 1))
    elif ! build_local; then
      echo "BAD      $name: does not compile"; bad=$((bad + 1))
    else
      rc=0; run_node "$node" || rc=$?
      case $rc in
        1) echo "killed   $name -> $node"; killed=$((killed + 1)) ;;
        0) echo "SURVIVED $name: $node still passes"; survived=$((survived + 1)) ;;
        *) echo "BAD      $name: exit $rc"; tail -n 5 "$log"; bad=$((bad + 1)) ;;
      esac
    fi
    cp "$tmp/orig" "$f"; touch "$f"
  done <"$mut"
done
build_local || true
echo "mutants: $((killed + survived + bad)) mutants, $killed killed, $survived survived, $bad bad"
[ $survived -eq 0 ] && [ $bad -eq 0 ]
