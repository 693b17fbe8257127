#!/usr/bin/env python3
"""Hostile and careless use of the sandbox bindings and the host's
sandbox code, against a fresh abx-local on 127.0.0.1 free ports: odd
arguments and callbacks (hostile/*.lua), a platform that answers too late,
an abx-local wrapper that leaves children behind, a runner killed with
SIGKILL. Each scenario ends by listing the platform: nothing may be left.

  hostile.py --bin ABX_E2E SCENARIO   (ABX_LOCAL_BIN / ABX_ENVD_BIN set)"""
import json
import os
import secrets
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxlocal  # noqa: E402
from abxlocal import scenario_main  # noqa: E402
from abxtest import by_id, check, proc_stat, remove, run_reported, scratch, until  # noqa: E402


def e2e_env(server, run_id, **extra):
    """An abx-e2e run's environment, with the self-test counters on."""
    return abxlocal.e2e_env(server, run_id, ABX_E2E_SELFTEST="1", **extra)


def workdir():
    return scratch("abx-bind-hostile-", os.path.join(HERE, "hostile"))


def run(binary, work, env, *args, timeout=200):
    p, doc = run_reported(binary, args, work, env, timeout=timeout)
    return p, by_id(doc)


def tagged(server, run_id):
    return server.ids({"e2e": run_id})


def sc_args(binary, server):
    """hostile/*.lua: every test passes, nothing is left."""
    work = workdir()
    run_id = "hostile-" + secrets.token_hex(4)
    try:
        p, got = run(binary, work, e2e_env(server, run_id), "cases/")
    finally:
        remove(work)
    check(len(got) >= 9, "tests ran: %d" % len(got))
    bad = {k: t["outcome"] for k, t in got.items() if t["outcome"] != "passed"}
    if not check(bad == {}, "not passed: %r" % bad):
        print(p.stdout[-6000:], p.stderr[-2000:])
    check(tagged(server, run_id) == [], "nothing left")


LATE = """local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
e2e.test("create cut by the deadline", { platform = true }, function()
  sandbox.create {}
end)
"""


def sc_lost_create(binary, server):
    """A create cut by the test's deadline may still be made by the
    platform: it is in no ledger, so the run must sweep its tag although
    its ledger is empty (before the fix: one sandbox left)."""
    work = workdir()
    run_id = "late-" + secrets.token_hex(4)
    with open(os.path.join(work, "cases", "test_late.lua"), "w") as f:
        f.write(LATE)
    st, _, _, _ = server.request("POST", "/admin/faults", body={"latencyMs": 3000})
    check(st == 200, "faults set")
    try:
        p, got = run(binary, work, e2e_env(server, run_id), "--timeout", "2",
                     "cases/test_late.lua")
    finally:
        server.request("POST", "/admin/faults", body={"latencyMs": 0})
        remove(work)
    t = got.get("cases/test_late.lua::create cut by the deadline", {})
    check(t.get("outcome") == "failed", "the test timed out: %r" % t.get("outcome"))
    check("Timeout: test exceeded 2 s" in (t.get("message") or ""), "as a timeout")
    time.sleep(1.5)  # any create still in flight has landed by now
    left = tagged(server, run_id)
    if not check(left == [], "nothing left: %r" % left):
        print(p.stdout[-3000:])
    for sid in left:
        server.kill(sid)


WRAPPER = """#!/bin/sh
# An abx-local stand-in that leaves a child behind when it is stopped
# (its `gc`, run after an unclean stop, has nothing to do).
[ "$1" = gc ] && exit 0
sleep 300 &
echo $! > "%s"
echo "export ABX_SANDBOX_API_KEY=k"
echo "export ABX_SANDBOX_BASE_URL=http://127.0.0.1:9"
echo "export ABX_SANDBOX_DOMAIN=localhost"
echo ready
wait
"""

PLAIN = """local e2e = require "e2e"
e2e.test("no sandbox", function() end)
"""


def sc_local_group(binary, server):
    """--local stops the whole process group it started: a wrapper's
    child does not outlive the run (before the fix: `sleep 300` stayed)."""
    work = workdir()
    pidfile = os.path.join(work, "child.pid")
    script = os.path.join(work, "fake-local.sh")
    with open(script, "w") as f:
        f.write(WRAPPER % pidfile)
    os.chmod(script, 0o755)
    with open(os.path.join(work, "cases", "test_plain.lua"), "w") as f:
        f.write(PLAIN)
    try:
        p, got = run(binary, work, e2e_env(None, "grp-1", ABX_LOCAL_BIN=script),
                     "--local", "cases/test_plain.lua", timeout=60)
        check(p.returncode == 0, "run passed: %d %s" % (p.returncode, p.stderr[-500:]))
        with open(pidfile) as f:
            child = int(f.read().strip())
        alive = True
        for _ in range(40):
            st = proc_stat(child)
            if st is None or st[1][0] == "Z":   # a zombie is dead, only unreaped
                alive = False
                break
            time.sleep(0.05)
        if not check(not alive, "the wrapper's child %d was stopped" % child):
            os.kill(child, signal.SIGKILL)
    finally:
        remove(work)


HANG = """local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
e2e.test("killed runner", { platform = true }, function()
  local s = sandbox.create {}
  print("created " .. s.id)
  io.stdout:flush()
  s.commands:run("sleep 120")
end)
"""


def sc_guardian(binary, server):
    """SIGKILL of the whole runner: the guardian sweeps the run, and a
    clean sweep leaves no ledger for the janitor (before the fix the
    ledger stayed)."""
    work = workdir()
    run_id = "grd-" + secrets.token_hex(4)
    with open(os.path.join(work, "cases", "test_hang.lua"), "w") as f:
        f.write(HANG)
    ledger = os.path.join(work, ".abx-e2e", "runs", run_id + ".ledger")
    try:
        p = subprocess.Popen([binary, "-s", "cases/test_hang.lua"], cwd=work,
                             env=e2e_env(server, run_id), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        seen = False
        deadline = time.time() + 60
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line or line.startswith("created "):
                seen = bool(line)
                break
        check(seen, "the test created its sandbox")
        check(os.path.exists(ledger), "the ledger exists while the run is alive")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.time() + 60
        while time.time() < deadline and (tagged(server, run_id) or os.path.exists(ledger)):
            time.sleep(0.2)
        check(tagged(server, run_id) == [], "the guardian deleted the sandbox")
        check(not os.path.exists(ledger), "the clean sweep removed the ledger")
    finally:
        remove(work)


TEARDOWN = """local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
e2e.test("signal during teardown", { platform = true }, function()
  sandbox.create {}
  print("created")
  io.stdout:flush()
end)
"""


def sc_group_term(binary, server):
    """SIGTERM to the run's whole process group while a test's sandboxes
    are being deleted (CI cancellation): the worker gets it twice (itself
    and forwarded by the parent) and must take that as one request, so
    the teardown ends normally (before the fix: "worker crashed")."""
    work = workdir()
    run_id = "term-" + secrets.token_hex(4)
    with open(os.path.join(work, "cases", "test_teardown.lua"), "w") as f:
        f.write(TEARDOWN)
    server.request("POST", "/admin/faults", body={"deleteDelayMs": 3000})
    try:
        p = subprocess.Popen([binary, "-s", "--json", "report.json", "cases/test_teardown.lua"],
                             cwd=work, env=e2e_env(server, run_id), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        out = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = p.stdout.readline()
            out.append(line)
            if not line or line.startswith("created"):
                break
        # the signal lands while the scope's delete is held, not before
        held = until(lambda: "holding DELETE of sandbox" in server.stderr(), 30, step=0.05)
        check(held, "the teardown's delete reached the platform")
        os.killpg(p.pid, signal.SIGTERM)
        rest, _ = p.communicate(timeout=60)
        text = "".join(out) + rest
        ok = check(p.returncode == 2, "interrupted exit code: %d" % p.returncode)
        ok &= check("worker crashed" not in text, "no worker crash")
        try:
            with open(os.path.join(work, "report.json")) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            doc = {"unreadable": str(e)}
        got = {t["nodeid"]: t["outcome"] for t in doc.get("tests", [])} or doc
        ok &= check(got.get("cases/test_teardown.lua::signal during teardown") == "passed",
                    "the test kept its outcome: %r" % got)
        ok &= check(tagged(server, run_id) == [], "nothing left")
        if not ok:
            print(text[-3000:])
    finally:
        server.request("POST", "/admin/faults", body={"deleteDelayMs": 0})
        remove(work)


# Live until the test has run the second one (the file second-done), at
# most 60 s: a fixed 3 s let a second run slow to start (sanitizers, a
# loaded CI machine) begin after the first had ended, and not be refused.
LONG = """local e2e = require "e2e"
e2e.test("long", { platform = true }, function(base_sandbox)
  print("created")
  io.stdout:flush()
  for i = 1, 600 do
    local f = io.open("second-done", "r")
    if f then f:close() return end
    base_sandbox.commands:run("sleep 0.1")
  end
end)
"""


def sc_same_run_id(binary, server):
    """A second run with the id of a live run in the same directory is
    refused: it would have swept the first one's sandboxes (same tag)
    mid-test and unlinked its ledger (before the fix the long test failed
    with a truncated stream)."""
    work = workdir()
    run_id = "dup-" + secrets.token_hex(4)
    with open(os.path.join(work, "cases", "test_long.lua"), "w") as f:
        f.write(LONG)
    with open(os.path.join(work, "cases", "test_plain.lua"), "w") as f:
        f.write(PLAIN)
    env = e2e_env(server, run_id)
    try:
        first = subprocess.Popen([binary, "-s", "--json", "first.json", "cases/test_long.lua"],
                                 cwd=work, env=env, stdout=subprocess.PIPE, text=True)
        line = ""
        while not line.startswith("created"):
            line = first.stdout.readline()
            if not line:
                break
        p, _ = run(binary, work, env, "cases/test_plain.lua", timeout=60)
        with open(os.path.join(work, "second-done"), "w"):
            pass
        check(p.returncode != 0, "the second run is refused: %d" % p.returncode)
        check("is in use by another live run" in p.stdout + p.stderr,
              "it says why: %r" % (p.stdout + p.stderr)[-300:])
        first.communicate(timeout=120)
        with open(os.path.join(work, "first.json")) as f:
            got = {t["nodeid"]: t["outcome"] for t in json.load(f).get("tests", [])}
        check(got == {"cases/test_long.lua::long": "passed"}, "the first run is intact: %r" % got)
        check(first.returncode == 0, "first run exit %d" % first.returncode)
        check(tagged(server, run_id) == [], "nothing left")
    finally:
        remove(work)


SCENARIOS = {
    "same_run_id": sc_same_run_id,
    "group_term": sc_group_term,
    "args": sc_args,
    "lost_create": sc_lost_create,
    "local_group": sc_local_group,
    "guardian": sc_guardian,
}



if __name__ == "__main__":
    scenario_main(SCENARIOS)
