#!/usr/bin/env python3
"""A worker that dies of SIGSEGV while holding sandboxes (serial and with
-n 2 next to a healthy worker): the crash fails its test, never the run's
cleanup; zero sandboxes are left when the run ends."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, outcomes  # noqa: E402
from glib import all_gone, main, rc_is, Run  # noqa: E402

C = "cases/test_crash_holding.lua::"


def one(p, args):
    r = Run(p)
    try:
        rc, out, err = r.run(*args, "--json", "r.json", env={"ABX_E2E_SELFTEST": "1"})
        what = " ".join(args)
        rc_is(rc, 1, what, out, err)
        got = outcomes(r.report())
        check(got.get(C + "crashes holding sandboxes") in ("failed", "error"),
              "%s: the crashed test fails (%r)" % (what, got.get(C + "crashes holding sandboxes")))
        if "-n" in args:
            eq(got.get("cases/test_par_b.lua::b passes"), "passed", what + ": the other worker's test")
        ids = (r.side_file("ids") or "").split()
        eq(len(ids), 2, what + ": the crashing test had two sandboxes")
        all_gone(p, r, ids, what)
    finally:
        r.cleanup()


def body(p):
    one(p, ["cases/test_crash_holding.lua"])
    one(p, ["-n", "2", "cases/test_crash_holding.lua", "cases/test_par_b.lua"])


main(body)
