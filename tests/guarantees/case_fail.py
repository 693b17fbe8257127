#!/usr/bin/env python3
"""(a) A failing test that used base_sandbox and sandbox_factory leaves
zero sandboxes (counted by listing the platform, by tag and in all)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, outcomes  # noqa: E402
from glib import all_gone, main, rc_is, Run  # noqa: E402


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("cases/test_fail.lua", "--json", "r.json")
        rc_is(rc, 1, "exit code of a run with a failed test", out, err)
        got = outcomes(r.report())
        eq(got.get("cases/test_fail.lua::fails holding two sandboxes"), "failed", "outcome")
        eq(got.get("cases/test_fail.lua::passes with the file's sandbox"), "passed", "outcome")
        m = re.search(r"created (\S+) (\S+)", out)
        check(m is not None, "the failing test printed its two sandbox ids")
        if m:
            check(m.group(1) != m.group(2), "two distinct sandboxes were created")
            # The runner itself names the failed test's sandboxes.
            listed = [l for l in out.splitlines() if l.startswith("sandboxes:")
                      and m.group(1) in l and m.group(2) in l]
            check(listed, "the runner printed the failed test's sandbox ids")
        all_gone(p, r, m.groups() if m else ())
    finally:
        r.cleanup()


main(body)
