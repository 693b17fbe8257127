#!/bin/sh
# Start-up overhead: the whole-process wall and CPU time of abx-e2e running
# 7 files of one trivial test each (serial and -n 2), side by side with
# pytest on 7 equivalent Python files; R runs each (STARTUP_RUNS, default
# 20), alternating, after one warm-up run each. Aim: abx-e2e's median wall
# at most 1/10 of pytest's. Every run must exit 0 and report 7 passed.
# Then `abx-e2e exec` of a one-line script beside `lua5.4` on it (when
# lua5.4 is installed). Aim: at most 2x; both must print "hi".
# Usage: bench/startup_bench.sh [BUILD]   (make bench passes it)
set -eu
build=${1:-build}
bin="$build/host/abx-e2e"
[ -x "$bin" ] || { echo "startup_bench: $bin not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/abx-e2e
dir=$(mktemp -d /tmp/startup_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/lua/tests-lua" "$dir/py"
for i in 1 2 3 4 5 6 7; do
  cat >"$dir/lua/tests-lua/test_$i.lua" <<'LUA'
local e2e = require "e2e"
e2e.test("one", function() e2e.expect(1 + 1):eq(2) end)
LUA
  cat >"$dir/py/test_$i.py" <<'PYT'
def test_one():
    assert 1 + 1 == 2
PYT
done
# The interpreter that has pytest: python3 on PATH (may be a pyenv one that
# does not see Debian's dist-packages), else the system's.
pytest_py=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import pytest' >/dev/null 2>&1; then pytest_py=$(command -v "$py"); break; fi
done
python3 - "$bin" "$dir" "${STARTUP_RUNS:-20}" "$pytest_py" <<'PY'
import os, re, statistics, subprocess, sys, time

bin, top, runs, pytest_py = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if runs < 1:
    sys.exit("startup_bench: STARTUP_RUNS must be >= 1")
lua_dir, py_dir = os.path.join(top, "lua"), os.path.join(top, "py")
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("ABX_", "E2B_", "E2E_"))}
env.update(CI="true", NO_COLOR="1")
# Keep pytest from picking up plugins or settings from the environment.
env.pop("PYTEST_ADDOPTS", None)
env.pop("PYTEST_PLUGINS", None)

def run(label, argv, cwd):
    """One run: (wall s, user+sys s of the child); fails loudly unless it
    exited 0 and reported 7 passed."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.stdout.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    text = out.decode(errors="replace")
    m = re.search(r"\b(\d+) passed\b", text)
    if p.returncode != 0 or not m or m.group(1) != "7" or re.search(
            r"\b\d+ (failed|errors?|skipped|xfailed|xpassed)\b", text):
        sys.stderr.write(f"startup_bench: {label} run broken (exit {p.returncode},"
                         f" expected 0 and 7 passed); output:\n{text}\n")
        sys.exit(1)
    return wall, ru.ru_utime + ru.ru_stime

cases = [("abx-e2e", [bin, "-q"], lua_dir),
         ("abx-e2e -n 2", [bin, "-q", "-n", "2"], lua_dir)]
if pytest_py:
    cases.append(("pytest", [pytest_py, "-m", "pytest", "-q",
                             "-p", "no:cacheprovider"], py_dir))
else:
    print("startup_bench: pytest not installed (apt-get install -y python3-pytest);"
          " abx-e2e figures only")

for label, argv, cwd in cases:          # warm-up, not counted
    run(label, argv, cwd)
res = {label: ([], []) for label, _, _ in cases}
for _ in range(runs):                   # alternating
    for label, argv, cwd in cases:
        w, c = run(label, argv, cwd)
        res[label][0].append(w)
        res[label][1].append(c)

ms = lambda s: s * 1000
print(f"startup: 7 files x 1 trivial test, {runs} runs each, alternating, after 1 warm-up")
if pytest_py:
    ver = subprocess.run([pytest_py, "-c", "import pytest, sys; print(pytest.__version__, sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.split()
    print(f"pytest {ver[0]} run by {pytest_py} (Python {ver[1]})")
med = {}
for label, _, _ in cases:
    walls, cpus = res[label]
    med[label] = statistics.median(walls)
    print(f"  {label:<13} wall median {ms(med[label]):7.1f} ms  min {ms(min(walls)):7.1f} ms"
          f"  cpu (user+sys) median {ms(statistics.median(cpus)):7.1f} ms")
if pytest_py:
    for label in ("abx-e2e", "abx-e2e -n 2"):
        r = med[label] / med["pytest"]
        print(f"  {label}/pytest median wall ratio: {r:.3f} (1/{1 / r:.1f})"
              f" -> aim: abx-e2e wall <= 1/10 of pytest's: {'met' if r <= 0.1 else 'NOT met'}")

lua = subprocess.run(["sh", "-c", "command -v lua5.4"], capture_output=True,
                     text=True).stdout.strip()
if not lua:
    print("startup_bench: lua5.4 not installed (apt-get install -y lua5.4); no exec figure")
    sys.exit(0)
one = os.path.join(top, "one.lua")
with open(one, "w") as f:
    f.write('print("hi")\n')

def once(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or p.stdout != "hi\n":
        sys.exit(f"startup_bench: {argv[0]} {' '.join(argv[1:])} broken (exit {p.returncode},"
                 f" printed {p.stdout!r}, want 'hi')")
    return wall

pair = {"abx-e2e exec": [bin, "exec", one], "lua5.4": [lua, one]}
walls = {k: [] for k in pair}
for k, argv in pair.items():     # warm-up
    once(argv)
for _ in range(runs):
    for k, argv in pair.items():
        walls[k].append(once(argv))
m = {k: statistics.median(v) for k, v in walls.items()}
print(f"exec: a one-line script, {runs} runs each, alternating")
for k in pair:
    print(f"  {k:<13} wall median {ms(m[k]):7.2f} ms  min {ms(min(walls[k])):7.2f} ms")
r = m["abx-e2e exec"] / m["lua5.4"]
print(f"  exec/lua5.4 median wall ratio: {r:.2f} -> aim: <= 2: {'met' if r <= 2 else 'NOT met'}")
PY
