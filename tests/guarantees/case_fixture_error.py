#!/usr/bin/env python3
"""(b) Lua errors after a sandbox was obtained (in a test-scoped user
fixture via the factory and via sandbox.create, in a file-scoped fixture,
in a test body) leave zero sandboxes."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, outcomes, tail  # noqa: E402
from glib import all_gone, main, rc_is, Run  # noqa: E402

F = "cases/test_fixture_error.lua::"


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("cases/test_fixture_error.lua", "--json", "r.json", "-s")
        rc_is(rc, 1, "exit code", out, err)
        doc = r.report()
        got = outcomes(doc)
        for name in ("user fixture errors after factory", "user fixture errors after create",
                     "file fixture errors"):
            eq(got.get(F + name), "error", name)
        check(got.get(F + "body errors holding sandboxes") in ("failed", "error"),
              "body error outcome: %r" % got.get(F + "body errors holding sandboxes"))
        ids = set()
        for m in re.finditer(r"created (\S+)(?: (\S+))?", out):
            ids.update(x for x in m.groups() if x)
        if not check(len(ids) >= 5, "every fixture and the test created a sandbox (%d ids)"
                     % len(ids)):
            print(tail(out + err))
        all_gone(p, r, sorted(ids))
    finally:
        r.cleanup()


main(body)
