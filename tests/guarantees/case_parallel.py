#!/usr/bin/env python3
"""(f) -n 2 with sandboxes in both workers and a failing test in each:
zero sandboxes left."""
import json
import os
import re

from glib import Run, check, eq, main, rc_is, tail


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("-n", "2", "cases/test_par_a.lua", "cases/test_par_b.lua",
                             "--json", "r.json")
        rc_is(rc, 1, "exit code", out, err)
        with open(os.path.join(r.dir, "r.json")) as f:
            got = {t["nodeid"]: t["outcome"] for t in json.load(f)["tests"]}
        for f_, t in (("a", "a"), ("b", "b")):
            eq(got.get("cases/test_par_%s.lua::%s fails" % (f_, t)), "failed", t + " fails")
            eq(got.get("cases/test_par_%s.lua::%s passes" % (f_, t)), "passed", t + " passes")
        found = re.findall(r"created (\S+) (\S+) in worker (\S+)", out)
        if not eq(len(found), 2, "both failing tests printed their sandboxes"):
            print(tail(out + err))
        check(len({w for _, _, w in found}) == 2,
              "the two files ran in two workers: %r" % [w for _, _, w in found])
        for a, b, _ in found:
            for sid in (a, b):
                eq(p.get(sid)[0], 404, "sandbox %s is gone" % sid)
        eq(p.ids({"e2e": r.run_id}), [], "no sandbox tagged with the run id")
        eq(p.ids(), [], "no sandbox at all on the platform")
    finally:
        r.cleanup()


main(body)
