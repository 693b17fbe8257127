#!/usr/bin/env python3
"""(f) -n 2 with sandboxes in both workers and a failing test in each:
zero sandboxes left."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, outcomes, tail  # noqa: E402
from glib import all_gone, main, rc_is, Run  # noqa: E402


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("-n", "2", "cases/test_par_a.lua", "cases/test_par_b.lua",
                             "--json", "r.json")
        rc_is(rc, 1, "exit code", out, err)
        got = outcomes(r.report())
        for f_, t in (("a", "a"), ("b", "b")):
            eq(got.get("cases/test_par_%s.lua::%s fails" % (f_, t)), "failed", t + " fails")
            eq(got.get("cases/test_par_%s.lua::%s passes" % (f_, t)), "passed", t + " passes")
        found = re.findall(r"created (\S+) (\S+) in worker (\S+)", out)
        if not eq(len(found), 2, "both failing tests printed their sandboxes"):
            print(tail(out + err))
        check(len({w for _, _, w in found}) == 2,
              "the two files ran in two workers: %r" % [w for _, _, w in found])
        all_gone(p, r, [sid for a, b, _ in found for sid in (a, b)])
    finally:
        r.cleanup()


main(body)
