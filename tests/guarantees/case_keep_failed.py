#!/usr/bin/env python3
"""(i) --keep-failed leaves the failed test's sandbox alive and prints its
id; `abx-e2e cleanup --run-id ID` lists it (dry run, deletes nothing),
`--yes` deletes it; a sandbox created directly through REST without the
e2e tag survives every janitor run, including --all-tagged."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, tail  # noqa: E402
from glib import main, plant, rc_is, Run  # noqa: E402


def body(p):
    human = plant(p, {"owner": "someone"})
    other = plant(p, {"e2e": "another-run", "owner": "ci"})
    r = Run(p)
    try:
        rc, out, err = r.run("--keep-failed", "cases/test_keep.lua")
        rc_is(rc, 1, "exit code", out, err)
        failed = (r.side_file("failed_id") or "").strip()
        passed = (r.side_file("passed_id") or "").strip()
        if not check(failed and passed, "both tests created a sandbox"):
            return
        if not check(failed in out + err, "the kept sandbox's id is printed"):
            print(tail(out + err))
        check("cleanup --run-id " + r.run_id in out + err, "the run says how to delete it")
        time.sleep(3)  # a guardian or late sweep must not take it either
        eq(p.get(failed)[0], 200, "the failed test's sandbox is alive")
        eq(p.get(passed)[0], 404, "the passing test's sandbox is gone")
        eq(p.ids({"e2e": r.run_id}), [failed], "only the kept sandbox carries the run's tag")

        rc, out, err = r.run("cleanup", "--run-id", r.run_id)
        rc_is(rc, 0, "cleanup dry run exit", out, err)
        if not check(failed in out, "dry run lists the kept sandbox"):
            print(tail(out + err))
        check(human not in out and other not in out, "dry run lists only the run's sandboxes")
        eq(p.get(failed)[0], 200, "dry run deletes nothing")

        rc, out, err = r.run("cleanup", "--run-id", r.run_id, "--yes")
        rc_is(rc, 0, "cleanup --yes exit", out, err)
        eq(p.get(failed)[0], 404, "cleanup --run-id --yes deleted the kept sandbox")
        eq(p.get(other)[0], 200, "another run's sandbox survives --run-id")
        eq(p.get(human)[0], 200, "the untagged sandbox survives --run-id")

        rc, out, err = r.run("cleanup", "--all-tagged", "--older-than", "60", "--yes")
        rc_is(rc, 0, "cleanup --older-than exit", out, err)
        eq(p.get(other)[0], 200, "--older-than 60 spares a young sandbox")

        rc, out, err = r.run("cleanup", "--all-tagged", "--yes")
        rc_is(rc, 0, "cleanup --all-tagged exit", out, err)
        eq(p.get(other)[0], 404, "--all-tagged deleted the other run's sandbox")
        eq(p.get(human)[0], 200, "the untagged sandbox survives the janitor")
        eq(p.ids(), [human], "only the untagged sandbox is left")
    finally:
        r.cleanup()
        p.kill(human)
        p.kill(other)


main(body)
