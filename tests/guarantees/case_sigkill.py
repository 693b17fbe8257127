#!/usr/bin/env python3
"""(e) SIGKILL of the runner while a test holds 3 sandboxes: the guardian
started with the run sweeps the ledger and the tag, so the platform's
count for the run's tag reaches zero within ~30 s (polled), stays zero,
and no process of the run is left.

Round 1: serial run, SIGKILL to the runner's pid only; the file has a
second test that would create a sandbox 6 s later if the worker lived on.
Round 2: -n 2 (a holding test in each worker), SIGKILL to the runner's
whole process group at once, runner and workers (a CI job killed
outright)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import eq, proc_stat, until  # noqa: E402
from glib import main, Run, run_processes, start_holding  # noqa: E402


def describe(pid):
    """ppid, pgid, sid and state of a process (to tell a worker from the
    guardian in a failure message)."""
    st = proc_stat(pid)
    if st is None:
        return "gone"
    return "state %s ppid %s pgid %s sid %s" % tuple(st[1][:4])


def hold_and_kill(p, args, want, to_group):
    r = Run(p)
    try:
        proc = start_holding(p, r, args, want, "kill")
        if proc is None:
            return
        time.sleep(0.5)
        before = p.ids({"e2e": r.run_id})
        t0 = time.time()
        if to_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait()
        until(lambda: not p.ids({"e2e": r.run_id}), 30, step=0.5)
        dt = time.time() - t0
        remaining = p.ids({"e2e": r.run_id})
        print("%s: SIGKILL%s; %d tagged sandbox(es) left after %.1f s"
              % (" ".join(args), " to the group" if to_group else "", len(remaining), dt))
        eq(remaining, [], "the guardian swept the run's sandboxes within 30 s")
        # Nothing of the run goes on after the kill (an orphaned worker
        # would create the next test's sandbox ~6 s later): watch the tag.
        late = set()
        while time.time() < t0 + 12:
            late.update(set(p.ids({"e2e": r.run_id})) - set(before))
            time.sleep(0.2)
        eq(sorted(late), [], "no sandbox of the run appears after the kill")
        eq(p.ids({"e2e": r.run_id}), [], "still no tagged sandbox 12 s after the kill")
        eq(p.ids(), [], "no sandbox at all on the platform")
        until(lambda: not run_processes(r.run_id), 30, step=0.5)
        lingering = run_processes(r.run_id)
        if not eq(lingering, [], "no process of the run lingers 30 s after the kill"):
            for pid in lingering:  # ours: started with this run's id
                print("  pid %d: %s" % (pid, describe(pid)))
                os.kill(pid, signal.SIGKILL)
    finally:
        r.cleanup()


def body(p):
    hold_and_kill(p, ["cases/test_hold_then.lua"], 3, False)
    hold_and_kill(p, ["-n", "2", "cases/test_hold.lua", "cases/test_hold2.lua"], 6, True)


main(body)
