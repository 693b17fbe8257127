#!/usr/bin/env bash
# abx-e2e's bindings vs the official E2B JS SDK (npm package e2b) on the
# same operations against one abx-local: create+kill, command run (echo),
# 1 MiB write + read, list. N iterations each (BENCH_N, 20; BENCH_WARM
# untimed warm-up calls, 2); prints p50 per operation for both and the
# ratio abx/js (< 1: abx-e2e is faster). Then memory: peak RSS of the
# abx-e2e run (runner and workers) uploading and downloading 200 MiB
# through files:upload/download vs the same for 1 MiB (BENCH_BIG_MIB).
# Figures only: nothing here passes or fails on speed.
#
# Usage: bench/sdk_compare.sh [BUILD_DIR]   (run by `make bench`; needs root)
# The SDK is installed like tests/conformance/run.sh does (npm ci of the
# pinned version from its lock file into BUILD/conformance/e2b-<ver>);
# skipped with a message when the npm registry is unreachable.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$src/$build" ;; esac
say() { echo "sdk_compare: $*" >&2; }

e2e_bin="$build/host/abx-e2e"
local_bin="$build/abx-local/server/abx-local"
envd_bin="$build/abx-local/envd/abx-envd"
for b in "$e2e_bin" "$local_bin" "$envd_bin"; do
  [ -x "$b" ] || { say "$b not built (cmake --build $build)"; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then say "skipped: abx-local needs root"; exit 0; fi
command -v node >/dev/null && command -v npm >/dev/null ||
  { say "skipped: node and npm are needed for the JS SDK side"; exit 0; }
node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=18)?0:1)' ||
  { say "skipped: node >= 20.18 is needed by e2b (have $(node --version))"; exit 0; }

sdk=$(sed -n 's/.*"e2b": "\([0-9.]*\)".*/\1/p' "$src/tests/conformance/package.json")
sdk_dir="$build/conformance/e2b-$sdk"
if [ ! -f "$sdk_dir/node_modules/e2b/package.json" ]; then
  mkdir -p "$sdk_dir"
  cp "$src/tests/conformance/package.json" "$src/tests/conformance/package-lock.json" "$sdk_dir/"
  if ! (cd "$sdk_dir" && npm ci --ignore-scripts --no-audit --no-fund >"$sdk_dir/npm.log" 2>&1); then
    say "skipped: cannot install e2b@$sdk (npm registry unreachable?); see $sdk_dir/npm.log"
    exit 0
  fi
fi

export ABX_SDK_DIR="$sdk_dir"
exec python3 - "$e2e_bin" "$local_bin" "$envd_bin" "$src" <<'PY'
import hashlib, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

e2e_bin, local_bin, envd_bin, src = sys.argv[1:5]
N = os.environ.get("BENCH_N", "20")
WARM = os.environ.get("BENCH_WARM", "2")
BIG = int(os.environ.get("BENCH_BIG_MIB", "200"))
work = tempfile.mkdtemp(prefix="sdk_compare.")
state = os.path.join(work, "state")
os.mkdir(state)
server = subprocess.Popen([local_bin, "serve", "--listen", "127.0.0.1:0", "--data-listen",
                           "127.0.0.1:0", "--state-dir", state, "--envd", envd_bin,
                           "--templates", os.path.join(src, "abx-local", "templates")],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
env = {}
for line in server.stdout:
    line = line.strip()
    if line == "ready":
        break
    if line.startswith("export "):
        k, v = line[7:].split("=", 1)
        env[k] = v.strip("\"'")


def stop():
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    shutil.rmtree(work, ignore_errors=True)


def p50(xs):
    return statistics.median(xs) if xs else float("nan")


def run_abx(args, extra):
    """abx-e2e with the platform's ABX_SANDBOX_*; returns (rc, output,
    peak RSS in KiB of it and its reaped children, wall seconds)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ABX_", "E2B_", "E2E_"))}
    e.update({k: v for k, v in env.items() if k.startswith("ABX_SANDBOX_")})
    e.update({"CI": "true", "NO_COLOR": "1", "BENCH_N": N, "BENCH_WARM": WARM})
    e.update(extra)
    t0 = time.monotonic()
    p = subprocess.Popen([e2e_bin, *args], cwd=work, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, out.decode(errors="replace"), ru.ru_maxrss, time.monotonic() - t0


try:
    if "ABX_SANDBOX_API_KEY" not in env:
        print("sdk_compare: abx-local did not start", file=sys.stderr)
        sys.exit(1)
    figures = {"js": {}, "abx": {}}
    # --- JS SDK ---
    jenv = {k: v for k, v in os.environ.items() if not k.startswith(("E2B_", "ABX_SANDBOX_"))}
    jenv.update({k: v for k, v in env.items() if k.startswith("E2B_")})
    jenv.update({"BENCH_N": N, "BENCH_WARM": WARM})
    js = subprocess.run(["node", os.path.join(src, "bench", "sdk_compare.mjs")], env=jenv,
                        stdout=subprocess.PIPE, text=True)
    for line in js.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            figures["js"][d["op"]] = d["ms"]
    if js.returncode != 0:
        print("sdk_compare: the JS side failed (exit %d)" % js.returncode, file=sys.stderr)
    # --- abx-e2e: one test per timed call, durations from the JSON report ---
    lua = os.path.join(src, "bench", "sdk_compare.lua")
    rc, out, _, _ = run_abx([lua, "-q", "--json", "lat.json"], {"BENCH_MODE": "latency"})
    if rc != 0:
        print("sdk_compare: the abx-e2e side failed (exit %d):\n%s" % (rc, out[-3000:]),
              file=sys.stderr)
    try:
        with open(os.path.join(work, "lat.json")) as f:
            doc = json.load(f)
        for t in doc["tests"]:
            op, _, idx = t["name"].rpartition(" ")
            if t["outcome"] == "passed" and not idx.startswith("w"):
                figures["abx"].setdefault(op, []).append(t["durations"]["call"] * 1000)
    except (OSError, ValueError, KeyError) as err:
        print("sdk_compare: no abx-e2e figures (%s)" % err, file=sys.stderr)

    print("sdk_compare: p50 over %s calls (ms), abx-e2e vs e2b JS SDK on abx-local" % N)
    print("  %-18s %10s %10s %10s" % ("operation", "abx-e2e", "js sdk", "abx/js"))
    for op in ("create_kill", "command_run", "write_read_1mib", "list"):
        a, j = figures["abx"].get(op, []), figures["js"].get(op, [])
        ratio = p50(a) / p50(j) if a and j else float("nan")
        print("  %-18s %10.2f %10.2f %10.2f   (n=%d/%d)" % (op, p50(a), p50(j), ratio,
                                                           len(a), len(j)))

    # --- memory: 1 MiB vs BIG MiB through files:upload/download ---
    rss, oks = {}, {}
    for mib in (1, BIG):
        up, down = os.path.join(work, "up.bin"), os.path.join(work, "down.bin")
        h = hashlib.sha256()
        with open(up, "wb") as f:
            block = os.urandom(1 << 20)
            for i in range(mib):
                chunk = bytes([i % 256]) + block[1:]
                h.update(chunk)
                f.write(chunk)
        rc, out, maxrss, dt = run_abx([lua, "-q"], {"BENCH_MODE": "mem", "BENCH_SRC": up,
                                                    "BENCH_DST": down})
        ok = rc == 0 and os.path.exists(down)
        if ok:
            g = hashlib.sha256()
            with open(down, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    g.update(chunk)
            ok = g.digest() == h.digest()
        rss[mib], oks[mib] = maxrss, ok
        print("sdk_compare: %4d MiB up+down in %6.2f s, peak RSS of abx-e2e %7.1f MiB%s"
              % (mib, dt, maxrss / 1024, "" if ok else "  (TRANSFER FAILED, exit %d)" % rc))
        if not ok:
            print(out[-2000:], file=sys.stderr)
        for p in (up, down):
            if os.path.exists(p):
                os.unlink(p)
    if oks[1] and oks[BIG]:
        print("sdk_compare: RSS growth %d MiB vs 1 MiB transfer: %+.1f MiB"
              % (BIG, (rss[BIG] - rss[1]) / 1024))
finally:
    stop()
PY
