#!/usr/bin/env python3
"""Runs the commands/files binding tests (tests/bindings/test_commands*.lua,
test_files*.lua) with the built abx-e2e against a fresh abx-local on
127.0.0.1 free ports, and checks that every test in them passed (outcomes
read from the JSON report, the expected node ids taken from the files, so
a test that silently vanished fails too) and that no sandbox is left.

Usage: run_commands_files.py [commands|files]   (default: both)
Environment (tests/bindings/CMakeLists.txt sets it): ABX_E2E_BIN,
ABX_LOCAL_BIN, ABX_ENVD_BIN, ABX_TEMPLATES_DIR. python3 stdlib only."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import check, done, eq  # noqa: E402

E2E_BIN = os.environ.get("ABX_E2E_BIN", "abx-e2e")
LOCAL_BIN = os.environ.get("ABX_LOCAL_BIN", "abx-local")
ENVD_BIN = os.environ.get("ABX_ENVD_BIN", "")
TEMPLATES = os.environ.get("ABX_TEMPLATES_DIR", "")


def start_local(state):
    args = [LOCAL_BIN, "serve", "--listen", "127.0.0.1:0",
            "--data-listen", "127.0.0.1:0", "--state-dir", state]
    if ENVD_BIN:
        args += ["--envd", ENVD_BIN]
    if TEMPLATES:
        args += ["--templates", TEMPLATES]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
    env = {}
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line or line.strip() == "ready":
            break
        if line.startswith("export "):
            k, v = line[7:].strip().split("=", 1)
            env[k] = v.strip("\"'")
    if "ABX_SANDBOX_API_KEY" not in env:
        log.seek(0)
        sys.stdout.write(log.read().decode(errors="replace")[-3000:])
        stop_local(proc)
        raise SystemExit("abx-local did not start")
    return proc, env


def stop_local(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def live_sandboxes(env):
    req = urllib.request.Request(
        env["ABX_SANDBOX_BASE_URL"] + "/v2/sandboxes?state=running,paused&limit=100",
        headers={"X-API-KEY": env["ABX_SANDBOX_API_KEY"]})
    with urllib.request.urlopen(req, timeout=30) as r:
        return [s["sandboxID"] for s in json.load(r)]


def expected_ids(path, rel):
    """Node ids of the test("name", ...) calls of a file."""
    with open(path, encoding="utf-8") as f:
        names = re.findall(r'^test\("((?:[^"\\]|\\.)*)"', f.read(), re.M)
    return ["%s::%s" % (rel, n) for n in names]


def main():
    which = sys.argv[1:] or ["commands", "files"]
    cases = []
    for w in which:
        cases += sorted(glob.glob(os.path.join(HERE, "test_%s*.lua" % w)))
    check(len(cases) > 0, "test files found for %s" % which)
    for b in (E2E_BIN, LOCAL_BIN):
        if not os.access(b, os.X_OK):
            check(False, "binary built: " + b)
            done()
    state = tempfile.mkdtemp(prefix="abx-bind-state-")
    work = tempfile.mkdtemp(prefix="abx-bind-run-")
    proc, penv = start_local(state)
    try:
        os.mkdir(os.path.join(work, "cases"))
        want = []
        for c in cases:
            rel = "cases/" + os.path.basename(c)
            shutil.copy(c, os.path.join(work, rel))
            want += expected_ids(c, rel)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ABX_", "E2B_", "E2E_"))}
        env.update(penv)
        env.update({"ABX_E2E_SELFTEST": "1", "CI": "true", "NO_COLOR": "1",
                    "E2E_RUN_ID": "bind%d" % os.getpid()})
        args = [E2E_BIN, "-v", "--json", "r.json"] + ["cases/" + os.path.basename(c)
                                                     for c in cases]
        try:
            r = subprocess.run(args, cwd=work, env=env, capture_output=True,
                               text=True, errors="replace", timeout=400)
            out, rc = r.stdout + r.stderr, r.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = str(e.stdout or "") + str(e.stderr or ""), None
        got = {}
        try:
            with open(os.path.join(work, "r.json")) as f:
                got = {t["nodeid"]: t["outcome"] for t in json.load(f)["tests"]}
        except (OSError, ValueError, KeyError) as e:
            check(False, "JSON report readable (%s)" % e)
        for nid in want:
            eq(got.get(nid), "passed", nid)
        extra = sorted(set(got) - set(want))
        eq(extra, [], "no unexpected node ids")
        if not check(rc == 0, "abx-e2e exit code %r (want 0)" % rc):
            print(out[-20000:])
        eq(live_sandboxes(penv), [], "no sandbox left on the platform")
    finally:
        stop_local(proc)
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
