#!/usr/bin/env python3
"""(a) A failing test that used base_sandbox and sandbox_factory leaves
zero sandboxes (counted by listing the platform, by tag and in all)."""
import json
import os
import re

from glib import Run, check, eq, main, rc_is


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("cases/test_fail.lua", "--json", "r.json")
        rc_is(rc, 1, "exit code of a run with a failed test", out, err)
        with open(os.path.join(r.dir, "r.json")) as f:
            got = {t["nodeid"]: t["outcome"] for t in json.load(f)["tests"]}
        eq(got.get("cases/test_fail.lua::fails holding two sandboxes"), "failed", "outcome")
        eq(got.get("cases/test_fail.lua::passes with the file's sandbox"), "passed", "outcome")
        m = re.search(r"created (\S+) (\S+)", out)
        check(m is not None, "the failing test printed its two sandbox ids")
        if m:
            check(m.group(1) != m.group(2), "two distinct sandboxes were created")
            for sid in m.groups():
                eq(p.get(sid)[0], 404, "sandbox %s is gone (GET /sandboxes/{id})" % sid)
            # The runner itself names the failed test's sandboxes.
            listed = [l for l in out.splitlines() if l.startswith("sandboxes:")
                      and m.group(1) in l and m.group(2) in l]
            check(listed, "the runner printed the failed test's sandbox ids")
        eq(p.ids({"e2e": r.run_id}), [], "no sandbox tagged with the run id")
        eq(p.ids(), [], "no sandbox at all on the platform")
    finally:
        r.cleanup()


main(body)
