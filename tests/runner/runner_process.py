"""harness.py's scenarios on the runner's processes: -n workers, pid 1,
timeouts, worker crashes, the watchdog, SIGINT/SIGTERM."""

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

from runner_common import F, T  # first: puts tests/lib on sys.path
from abxtest import by_id, must, outcomes, run, summary_line


def sc_parallel(c):
    files = ["cases/test_outcomes.lua", "cases/test_fixtures.lua", "cases/test_timeouts.lua"]
    p1, serial = c.json_run(*files, name="serial.json")
    os.unlink(c.log)
    p2, par = c.json_run(*files, "-n", "2", name="par.json")
    must(outcomes(serial) == outcomes(par), "-n 2 differs from serial")
    must(p1.returncode == p2.returncode == 1, "exit codes")
    workers = {t["worker"] for t in par["tests"]}
    must(workers == {0, 1}, "both workers used: %s" % workers)
    setups = c.log_lines().count("session setup")
    must(1 <= setups <= 2, "one session per worker, got %d" % setups)
    must(summary_line(p1.stdout).split(" in ")[0] == summary_line(p2.stdout).split(" in ")[0],
         "summary differs")


def sc_pid1(c):
    """The runner as pid 1 (a container started without --init): its
    workers' parent is pid 1, which is not an orphan's sign here."""
    files = ["cases/test_outcomes.lua", "cases/test_fixtures.lua"]
    _, normal = c.json_run(*files, "-n", "2", name="normal.json")
    pre = ["unshare", "--pid", "--fork", "--mount-proc"]
    if os.geteuid() != 0:
        pre += ["--user", "--map-root-user"]
    p = run(pre + [c.bin, *files, "-n", "2", "--json", "pid1.json"], cwd=c.dir,
            env=c.env(None), timeout=120)
    path = os.path.join(c.dir, "pid1.json")
    must(os.path.exists(path), "no JSON report as pid 1\n" + p.stdout + p.stderr)
    with open(path) as f:
        got = json.load(f)
    must(outcomes(got) == outcomes(normal), "as pid 1 the outcomes differ: %s" % {
        k: v for k, v in outcomes(got).items() if outcomes(normal).get(k) != v})


def sc_timeouts(c):
    p, doc = c.json_run("cases/test_timeouts.lua")
    got = outcomes(doc)
    for name in ["busy loop", "inside pcall", "inside coroutine", "teardown runs after timeout",
                 "sleep hits deadline", "blocked in os.execute", "blocked in a pipe"]:
        must(got[T + name] == "failed", f"{name}: {got[T + name]}")
        must("Timeout" in by_id(doc)[T + name]["message"], "timeout message")
    must(got[T + "after timeouts still fine"] == "passed", "run continues")
    must("timeout teardown ran" in c.log_lines(), "teardown after timeout")
    must(p.returncode == 1, f"exit {p.returncode}")


def sc_crash(c):
    p, doc = c.json_run("cases/test_crash.lua", "cases/test_fixtures.lua")
    got = outcomes(doc)
    t = by_id(doc)
    must(got["cases/test_crash.lua::before crash"] == "passed", str(got))
    must(got["cases/test_crash.lua::crashes"] == "error", str(got))
    # The rest of the dead worker's batch runs on its replacement, once.
    must(got["cases/test_crash.lua::after crash"] == "passed", str(got))
    must(len(doc["tests"]) == len(got), "a node id reported twice")
    msg = t["cases/test_crash.lua::crashes"]["message"]
    must(msg == "worker crashed: signal 11 (Segmentation fault) while running "
                "cases/test_crash.lua::crashes", msg)
    must(got[F + "last"] == "passed", "run goes on after the crash")
    must(p.returncode == 1, f"exit {p.returncode}")
    # A crash after the last test (session teardown) still fails the run.
    S = "cases/session_crash/test_session_crash.lua::uses doomed"
    p, doc = c.json_run("cases/session_crash/test_session_crash.lua")
    t = by_id(doc)[S]
    must(t["outcome"] == "passed", str(t))
    must("worker crashed: signal 11" in (t.get("teardown_message") or ""), str(t))
    must(p.returncode == 1, f"session crash: exit {p.returncode}")


def sc_watchdog(c):
    t0 = time.time()
    p, doc = c.json_run("cases/test_blocked.lua", "cases/test_fixtures.lua",
                        env={"ABX_E2E_WATCHDOG_EXTRA": "1"})
    t = by_id(doc)["cases/test_blocked.lua::blocked in C"]
    must(t["outcome"] == "error" and "killed by the watchdog" in t["message"], str(t))
    must(time.time() - t0 < 5.5, "watchdog too slow")
    must(outcomes(doc)[F + "last"] == "passed", "run goes on")
    must(p.returncode == 1, f"exit {p.returncode}")


def sc_sigint(c):
    junit = os.path.join(c.dir, "j.xml")
    proc = subprocess.Popen([c.bin, "cases/test_slow.lua", "cases/test_outcomes.lua",
                             "--junitxml", "j.xml", "--json", "j.json"],
                            cwd=c.dir, env=c.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while "long started" not in c.log_lines():
        must(time.time() < deadline, "test never started")
        time.sleep(0.05)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    must(time.time() - t0 < 10, "interrupt took too long")
    must(proc.returncode == 2, f"exit {proc.returncode}\n{out}\n{err}")
    must("interrupted teardown ran" in c.log_lines(), "teardown after SIGINT")
    must("session teardown" in c.log_lines(), "session teardown after SIGINT")
    ET.parse(junit)
    with open(os.path.join(c.dir, "j.json")) as f:
        doc = json.load(f)
    got = outcomes(doc)
    must(got == {"cases/test_slow.lua::quick": "passed"}, str(got))
    must("Interrupted: run stopped by a signal while running cases/test_slow.lua::long" in out,
         "interrupt banner:\n" + out)

    # A teardown stuck past the first signal: the second one exits at once.
    proc = subprocess.Popen([c.bin, "cases/test_stuck_teardown.lua"], cwd=c.dir, env=c.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while "waits started" not in c.log_lines():
        must(time.time() < deadline, "stuck test never started")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    while "stubborn teardown started" not in c.log_lines():
        must(time.time() < deadline, "teardown never started after SIGTERM")
        time.sleep(0.05)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    must(time.time() - t0 < 5, "second signal did not exit at once")
    must(proc.returncode == 2, f"second signal: exit {proc.returncode}")
    time.sleep(0.2)
    ps = subprocess.run(["pgrep", "-f", "test_stuck_teardown"], capture_output=True, text=True)
    must(ps.stdout.strip() == "", "workers left behind: " + ps.stdout)
