#!/usr/bin/env python3
"""`abx-e2e cleanup`, the janitor, against abx-local.

Planted over REST: run A has a ledger listing two sandboxes tagged e2e=A,
one tagged for another run (a hand-edited or foreign line: must be left
alone) and one already gone, plus a sandbox tagged e2e=A the ledger does
not know; run B has a tagged sandbox and no ledger; one sandbox has no e2e
tag at all. Checked: usage errors exit 4; the dry run lists (id, template,
age, run id) and deletes nothing; --older-than filters; a run in progress
(its ledger held by a live runner) is skipped even with --run-id; the
default --yes deletes run A's three and nothing else; --all-tagged --yes
takes the remaining tagged ones; the untagged sandbox survives it all."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, until  # noqa: E402
from glib import main, plant, rc_is, Run  # noqa: E402


def body(p):
    r = Run(p)
    live = None
    try:
        a, b = r.run_id + "a", r.run_id + "b"
        a_ledger = [plant(p, {"e2e": a}) for _ in range(2)]
        a_tag = plant(p, {"e2e": a})
        foreign = plant(p, {"e2e": "someone-else"})
        b_tag = plant(p, {"e2e": b})
        untagged = plant(p, {"owner": "not-e2e"})
        runs = os.path.join(r.dir, ".abx-e2e", "runs")
        os.makedirs(runs)
        with open(os.path.join(runs, a + ".ledger"), "w") as f:
            for sid in a_ledger + [foreign, "gone0000000000000000"]:
                f.write("create %s %d cases/x.lua::t\n" % (sid, int(time.time())))
        a_all = sorted(a_ledger + [a_tag])

        for args, what in [(["--bogus"], "unknown option"),
                           (["--older-than", "soon"], "bad --older-than"),
                           (["--run-id"], "--run-id without a value"),
                           (["--run-id", "../x"], "bad run id"),
                           (["--run-id", a, "--all-tagged"], "exclusive options")]:
            rc, out, err = r.run("cleanup", *args)
            rc_is(rc, 4, "cleanup " + " ".join(args) + " (" + what + ")", out, err)
            check("abx-e2e cleanup: error:" in err, what + " is named on stderr: " + err.strip())
        rc, out, err = r.run("cleanup", env={"ABX_SANDBOX_API_KEY": ""})
        rc_is(rc, 4, "cleanup without credentials", out, err)
        check("ABX_SANDBOX_API_KEY" in err, "the missing variable is named: " + err.strip())
        rc, out, _ = r.run("cleanup", "--help")
        check(rc == 0 and "--older-than" in out and "--all-tagged" in out, "cleanup --help")

        rc, out, err = r.run("cleanup")
        rc_is(rc, 0, "dry run", out, err)
        for sid in a_all:
            check(any(sid in l and a in l and "base" in l and "0m" in l
                      for l in out.splitlines()),
                  "dry run lists %s with template, age and run id" % sid)
        for sid in (foreign, b_tag, untagged):
            check(sid not in out, "dry run leaves out " + sid)
        check("not tagged e2e=" + a in err, "the foreign ledger line is named:\n" + err)
        eq(sorted(p.ids({"e2e": a})), a_all, "a dry run deletes nothing")
        rc, out, err = r.run("cleanup", "--older-than", "60")
        check(rc == 0 and "nothing to delete" in out, "--older-than 60 keeps new ones:\n" + out)

        # A run in progress (ledger locked by its live runner) is off limits.
        live = r.start("cases/test_hold.lua")
        until(lambda: len(p.ids({"e2e": r.run_id})) >= 3 or live.poll() is not None, 90, step=0.2)
        held = p.ids({"e2e": r.run_id})
        eq(len(held), 3, "the live run holds 3 sandboxes")
        rc, out, err = r.run("cleanup", "--run-id", r.run_id, "--yes")
        check(rc == 0 and "in progress" in err, "--run-id of a live run is refused:\n" + err)
        rc, out, err = r.run("cleanup", "--all-tagged")
        check(not any(s in out for s in held), "--all-tagged skips the live run's sandboxes")
        eq(p.ids({"e2e": r.run_id}), held, "the live run's sandboxes are untouched")
        live.send_signal(signal.SIGTERM)
        live.wait(60)
        live = None

        rc, out, err = r.run("cleanup", "--yes")
        rc_is(rc, 0, "default --yes", out, err)
        eq(p.ids({"e2e": a}), [], "run A's ledger and tag sandboxes are deleted")
        alive = set(p.ids())
        check({foreign, b_tag, untagged} <= alive, "nothing outside run A was touched")
        with open(os.path.join(runs, a + ".ledger")) as f:
            text = f.read()
        for sid in a_ledger + ["gone0000000000000000"]:
            check("kill " + sid in text, "the ledger records " + sid + " as deleted")
        rc, out, err = r.run("cleanup", "--all-tagged", "--yes")
        rc_is(rc, 0, "--all-tagged --yes", out, err)
        eq(p.ids(), [untagged], "only the untagged sandbox is left")
        rc, out, err = r.run("cleanup", "--all-tagged", "--yes")
        check(rc == 0 and "nothing to delete" in out, "a second pass has nothing to do")
        p.kill(untagged)
    finally:
        if live is not None and live.poll() is None:
            os.killpg(live.pid, signal.SIGKILL)
            live.wait()
        r.cleanup()


main(body)
