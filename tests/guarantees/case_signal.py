#!/usr/bin/env python3
"""(c) SIGINT / (d) SIGTERM while a test sleeps holding 3 sandboxes: the
runner exits 2 within ~10 s and zero sandboxes remain.

usage: case_signal.py INT|TERM
Round 1: serial run, the signal goes to the runner's pid (CI cancel).
Round 2: -n 2 with a holding test in each worker (6 sandboxes), the signal
goes to the whole process group (Ctrl-C in a terminal).
Round 3: five sandboxes (4 in the test's scope, 1 in the file's) with
every DELETE slowed to 3 s by abx-local's fault injection: deleting scope
by scope, each scope concurrently, takes ~6 s; one by one would take 15."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, until  # noqa: E402
from glib import main, rc_is, Run, run_processes, start_holding  # noqa: E402

SIG = {"INT": signal.SIGINT, "TERM": signal.SIGTERM}[sys.argv[1]]


def hold_and_signal(p, args, want, to_group, delete_delay_ms=0):
    r = Run(p)
    try:
        proc = start_holding(p, r, args, want, "signal")
        if proc is None:
            return
        time.sleep(0.5)  # into the sleep, past the last create
        if delete_delay_ms:
            st = p.faults(deleteDelayMs=delete_delay_ms)
            eq(st, 200, "slow deletes switched on")
        t0 = time.time()
        if to_group:
            os.killpg(proc.pid, SIG)
        else:
            proc.send_signal(SIG)
        try:
            proc.wait(30)
        except Exception:  # noqa: BLE001
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        dt = time.time() - t0
        left_at_exit = p.ids({"e2e": r.run_id})
        out, err = r.outputs()
        print("%s%s: exit %r %.2f s after SIG%s, %d tagged sandbox(es) left at exit"
              % (" ".join(args), " (deletes take %d ms)" % delete_delay_ms if delete_delay_ms
                 else "", proc.returncode, dt, sys.argv[1], len(left_at_exit)))
        rc_is(proc.returncode, 2, "after SIG" + sys.argv[1], out, err)
        check(dt < 10, "exited within 10 s of the signal (took %.2f s)" % dt)
        eq(left_at_exit, [], "no tagged sandbox left when the runner exits")
        eq(p.ids(), [], "no sandbox at all on the platform")
        check("Interrupted" in out or "interrupted" in (out + err).lower(),
              "the run says it was interrupted")
        until(lambda: not run_processes(r.run_id), 30, step=0.5)
        lingering = run_processes(r.run_id)
        if not eq(lingering, [], "no process of the run lingers (guardian, workers)"):
            for pid in lingering:  # ours: started with this run's id
                os.kill(pid, signal.SIGKILL)
    finally:
        if delete_delay_ms:
            p.faults(deleteDelayMs=0)
        r.cleanup()


def body(p):
    hold_and_signal(p, ["cases/test_hold.lua"], 3, False)
    hold_and_signal(p, ["-n", "2", "cases/test_hold.lua", "cases/test_hold2.lua"], 6, True)
    hold_and_signal(p, ["cases/test_hold_many.lua"], 5, False, delete_delay_ms=3000)


main(body)
