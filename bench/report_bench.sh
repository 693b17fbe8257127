#!/bin/sh
# Reports at scale: what --json/--html/--junitxml add to a run of 10,000
# trivial tests, their sizes, `abx-e2e merge` of four shards of it (time
# and peak memory), and how long headless Chromium takes to render the
# merged page until its first frame, and its 'show all' (when chromium,
# chromedriver and python3-selenium are here; Debian's python3,
# /usr/bin/python3, is the one that has selenium). The page puts only a
# page of rows into the DOM at first: the tests are its own count.
# Usage: bench/report_bench.sh [BUILD]   (make bench passes it)
set -eu
build=${1:-build}
bin="$build/host/abx-e2e"
[ -x "$bin" ] || { echo "report_bench: $bin not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/abx-e2e
dir=$(mktemp -d /tmp/report_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/tests-lua"
# 4 files x 2500 tests; one in 50 fails with a diff, one in 100 skips.
for f in 1 2 3 4; do
  {
    echo 'local e2e = require "e2e"'
    echo 'for i = 1, 2500 do'
    echo '  e2e.test("t" .. i, { skip = i % 100 == 0 and "every 100th" or nil },'
    echo '    function() e2e.expect(i % 50):eq(i % 50 == 0 and 1 or i % 50) end)'
    echo 'end'
  } >"$dir/tests-lua/test_r$f.lua"
done
cd "$dir"
/usr/bin/python3 - "$bin" <<'PY'
import os, resource, subprocess, sys, time
bin = sys.argv[1]

def timed(args):
    t0 = time.monotonic()
    p = subprocess.run([bin, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return time.monotonic() - t0, p

base, _ = timed(["-q", "-n", "2"])
full, p = timed(["-q", "-n", "2", "--json", "r.json", "--html", "r.html",
                 "--junitxml", "r.xml"])
print(f"reports: 10000 tests, run {base:.2f} s without reports, {full:.2f} s with "
      f"--json --html --junitxml (+{full - base:.2f} s), exit {p.returncode}")
# 200 tests fail on purpose: exit 1; anything else is a wrong result
if p.returncode != 1 or not all(os.path.exists(f) for f in ("r.json", "r.html", "r.xml")):
    sys.exit(f"report_bench: the run with reports exited {p.returncode} (want 1) "
             "or left a report out")
print("reports: sizes " + ", ".join(
    f"{f} {os.path.getsize(f) / 1e6:.1f} MB" for f in ("r.json", "r.html", "r.xml")))
for k in range(1, 5):
    timed(["-q", "--shard", f"{k}/4", "--json", f"s{k}.json"])
before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
dt, p = timed(["merge", "-q", "--json", "m.json", "--html", "m.html",
               "--junitxml", "m.xml", "s1.json", "s2.json", "s3.json", "s4.json"])
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"merge: 4 shards, 10000 tests in {dt:.2f} s, exit {p.returncode}"
      + (f", peak RSS {rss / 1024:.1f} MiB" if rss > before else ""))
if p.returncode != 1:
    sys.exit(f"report_bench: merge exited {p.returncode} (want 1: the failures merged)")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
except ImportError:
    print("render: python3-selenium not installed, skipped")
    sys.exit(0)
if not (os.path.exists("/usr/bin/chromium") and os.path.exists("/usr/bin/chromedriver")):
    print("render: chromium/chromedriver not installed, skipped")
    sys.exit(0)
o = Options()
o.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--disable-background-networking",
          "--disable-component-update", "--disable-sync",
          "--user-data-dir=" + os.path.abspath("chrome-profile")):
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
# Until the first frame after the load is drawn: the page's layout is in.
FRAME = "requestAnimationFrame(() => setTimeout(arguments[arguments.length - 1]))"
ROWS = "return document.querySelectorAll('tr.test-row').length"
try:
    t0 = time.monotonic()
    d.get("file://" + os.path.abspath("m.html"))
    d.execute_async_script(FRAME)
    dt = time.monotonic() - t0
    # The page's own count of tests; a big report has only a page of
    # them as rows in the DOM at first.
    tests = d.execute_script("return document.querySelector('[data-count=total]')"
                             ".textContent")
    rows = d.execute_script(ROWS)
    print(f"render: the merged page ({tests} tests, {rows} rows rendered) loaded in "
          f"Chromium in {dt:.2f} s")
    t0 = time.monotonic()
    d.execute_script("const b = document.querySelector('[data-more=later] button:last-child');"
                     "if (b) b.click()")
    d.execute_async_script(FRAME)
    dt = time.monotonic() - t0
    print(f"render: 'show all' drew {d.execute_script(ROWS)} rows in {dt:.2f} s")
finally:
    d.quit()
PY
