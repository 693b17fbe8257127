#!/usr/bin/env python3
"""The sweeper under platform faults.

1. End of run: a test holds a sandbox; while it sleeps every control-plane
   call starts failing (HTTP 500), so the scope's delete and the worker's
   fails (an ERROR at teardown, exit 1); the runner's sweep keeps retrying
   within its budget, and once the faults stop (10 s later) it deletes
   the sandbox: the run ends with "0 left", nothing tagged left.
2. The janitor while listing fails: exit 1 with the error named, nothing
   deleted; after the faults stop, --yes deletes and exits 0."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, tail, until  # noqa: E402
from glib import main, plant, rc_is, Run  # noqa: E402


def faults(p, rate):
    st = p.faults(errorRate=rate, errorStatus=500)
    return st


def body(p):
    r = Run(p)
    try:
        proc = r.start("cases/test_sweep_hold.lua")
        held = until(lambda: p.ids({"e2e": r.run_id}), 60, step=0.2)
        check(len(held) == 1, "the test holds its sandbox (%r)" % held)
        eq(faults(p, 1.0), 200, "faults on: every /sandboxes call answers 500")
        t = threading.Timer(10.0, faults, (p, 0.0))
        t.start()
        try:
            proc.wait(120)
        finally:
            t.cancel()
            faults(p, 0.0)
        out, err = r.outputs()
        rc_is(proc.returncode, 1, "the failed scope delete fails the run", out, err)
        check("ERROR at teardown" in out and "could not delete" in out,
              "the failed delete is reported:\n" + tail(out, 1500))
        check("sandboxes: 1 created, 1 deleted, 0 kept, 0 left" in out,
              "the sweep recovered: the closing account says 0 left:\n" + tail(out, 600))
        eq(p.ids({"e2e": r.run_id}), [], "nothing tagged with the run is left")

        planted = [plant(p, {"e2e": r.run_id + "j"}) for _ in range(2)]
        eq(faults(p, 1.0), 200, "faults on again")
        try:
            rc, out, err = r.run("cleanup", "--run-id", r.run_id + "j", "--yes", timeout=120)
        finally:
            faults(p, 0.0)
        rc_is(rc, 1, "the janitor exits 1 when the platform fails", out, err)
        check("listing e2e=" + r.run_id + "j" in err, "the failed listing is named:\n" + err)
        eq(sorted(p.ids({"e2e": r.run_id + "j"})), sorted(planted), "nothing was deleted")
        rc, out, err = r.run("cleanup", "--run-id", r.run_id + "j", "--yes")
        rc_is(rc, 0, "the janitor deletes once the platform answers", out, err)
        eq(p.ids({"e2e": r.run_id + "j"}), [], "the planted sandboxes are gone")
    finally:
        r.cleanup()


main(body)
