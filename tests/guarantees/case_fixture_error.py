#!/usr/bin/env python3
"""(b) Lua errors after a sandbox was obtained (in a test-scoped user
fixture via the factory and via sandbox.create, in a file-scoped fixture,
in a test body) leave zero sandboxes."""
import json
import os
import re

from glib import Run, check, eq, main, rc_is, tail

F = "cases/test_fixture_error.lua::"


def body(p):
    r = Run(p)
    try:
        rc, out, err = r.run("cases/test_fixture_error.lua", "--json", "r.json", "-s")
        rc_is(rc, 1, "exit code", out, err)
        with open(os.path.join(r.dir, "r.json")) as f:
            doc = json.load(f)
        got = {t["nodeid"]: t["outcome"] for t in doc["tests"]}
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
        for sid in sorted(ids):
            eq(p.get(sid)[0], 404, "sandbox %s is gone" % sid)
        eq(p.ids({"e2e": r.run_id}), [], "no sandbox tagged with the run id")
        eq(p.ids(), [], "no sandbox at all on the platform")
    finally:
        r.cleanup()


main(body)
