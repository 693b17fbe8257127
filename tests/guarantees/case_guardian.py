#!/usr/bin/env python3
"""The guardian sweeps both sources after a hard kill: ids only the ledger
knows and ids only the tag knows, and nothing else: not even the
sandboxes of another session (a CI shard on another machine) that share
the run id.

Before the run: sandboxes made over REST, tagged e2e=<run id>: two listed
in a pre-written ledger .abx-e2e/runs/<run id>.ledger (as a runner that
died earlier would leave it) and two known only by the tag (their create
line never made it). Bystanders that must survive: one untagged and one
tagged with another run id; once the run holds its sandboxes, two more
tagged with its run id and session (creates whose reply never came) and
one of the same run id but another session. (Ledger ids are the run's own by
construction: only the tracker writes them, after a tagged create; the
janitor, which reads ledgers of other runs, checks their tags.) Then abx-e2e runs a slow test with E2E_RUN_ID set (its
guardian starts), the runner alone is SIGKILLed, and the platform must
list zero sandboxes tagged e2e=<run id> within 20 s while every bystander
is still alive."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, tail, until  # noqa: E402
from glib import main, plant, Run  # noqa: E402


def body(p):
    r = Run(p)
    try:
        rid = r.run_id
        ledger_ids = [plant(p, {"e2e": rid}) for _ in range(2)]
        untagged = plant(p, {"owner": "someone-else"})
        other_run = plant(p, {"e2e": rid + "-other"})
        runs = os.path.join(r.dir, ".abx-e2e", "runs")
        os.makedirs(runs)
        with open(os.path.join(runs, rid + ".ledger"), "w") as f:
            for sid in ledger_ids:
                f.write("create %s %d earlier::test\n" % (sid, int(time.time())))
            f.write("create torn-id 1")  # a torn last line: ignored
        proc = r.start("cases/test_hold.lua")
        # The run's own three sandboxes join the two planted ones.
        until(lambda: len(p.ids({"e2e": rid})) >= 5 or proc.poll() is not None, 90, step=0.2)
        own = [s for s in p.ids({"e2e": rid}) if s not in ledger_ids]
        if not check(len(own) == 3 and proc.poll() is None,
                     "the run holds its 3 sandboxes next to the 2 planted (got %d, rc %r)"
                     % (len(own), proc.poll())):
            out, err = r.outputs()
            print(tail(out + err))
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            return
        session = p.get(own[0])[1]["metadata"].get("e2e_session")
        check(session and all(p.get(s)[1]["metadata"].get("e2e_session") == session
                              for s in own), "the run's sandboxes carry its session tag")
        tag_only = [plant(p, {"e2e": rid, "e2e_test": "lost", "e2e_session": session})
                    for _ in range(2)]
        other_shard = plant(p, {"e2e": rid, "e2e_session": "another-shard"})
        bystanders = sorted([untagged, other_run, other_shard])
        t0 = time.time()
        proc.kill()  # the runner only: its guardian lives in its own session
        proc.wait()
        until(lambda: p.ids({"e2e": rid}) == [other_shard], 20, step=0.5)
        print("swept in %.1f s" % (time.time() - t0))
        eq(p.ids({"e2e": rid}), [other_shard],
           "20 s after SIGKILL only the other session's sandbox is tagged e2e=<run id>")
        for sid in ledger_ids + tag_only:
            eq(p.get(sid)[0], 404, "planted %s is gone" % sid)
        eq(sorted(s for s in p.ids() if s in bystanders), bystanders,
           "the untagged and the other run's sandboxes are alive")
        out, err = r.outputs()
        check("guardian" in err and "sweeping run " + rid in err,
              "the guardian said what it did on stderr:\n" + tail(err, 800))
        check("guardian" not in out, "the guardian wrote nothing to stdout")
        with open(os.path.join(runs, rid + ".ledger")) as f:
            text = f.read()
        for sid in ledger_ids:
            check("kill %s" % sid in text, "the ledger records the kill of " + sid)
        for sid in bystanders:
            p.kill(sid)
    finally:
        r.cleanup()


main(body)
