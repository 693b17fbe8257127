#!/usr/bin/env python3
"""A worker that dies of SIGSEGV while holding sandboxes (serial and with
-n 2 next to a healthy worker): the crash fails its test, never the run's
cleanup; zero sandboxes are left when the run ends."""
import json
import os

from glib import Run, check, eq, main, rc_is

C = "cases/test_crash_holding.lua::"


def one(p, args):
    r = Run(p)
    try:
        rc, out, err = r.run(*args, "--json", "r.json", env={"ABX_E2E_SELFTEST": "1"})
        what = " ".join(args)
        rc_is(rc, 1, what, out, err)
        try:
            with open(os.path.join(r.dir, "r.json")) as f:
                got = {t["nodeid"]: t["outcome"] for t in json.load(f)["tests"]}
        except (OSError, ValueError):
            got = {}
        check(got.get(C + "crashes holding sandboxes") in ("failed", "error"),
              "%s: the crashed test fails (%r)" % (what, got.get(C + "crashes holding sandboxes")))
        if "-n" in args:
            eq(got.get("cases/test_par_b.lua::b passes"), "passed", what + ": the other worker's test")
        ids = (r.side_file("ids") or "").split()
        eq(len(ids), 2, what + ": the crashing test had two sandboxes")
        for sid in ids:
            eq(p.get(sid)[0], 404, "%s: sandbox %s is gone" % (what, sid))
        eq(p.ids({"e2e": r.run_id}), [], what + ": no sandbox tagged with the run id")
        eq(p.ids(), [], what + ": no sandbox at all on the platform")
    finally:
        r.cleanup()


def body(p):
    one(p, ["cases/test_crash_holding.lua"])
    one(p, ["-n", "2", "cases/test_crash_holding.lua", "cases/test_par_b.lua"])


main(body)
