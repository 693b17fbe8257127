#!/usr/bin/env python3
"""Suite tests that once passed without the platform's help (a handle's
memory of its own kill, an id the client put in a message, a filter that
matched nothing) now fail when the platform answer they rely on is
broken. Against one abx-local: the tests run unfaulted and pass (the
baseline), then with each of abx-local's faults (abx-local/DESIGN.md
"Fault injection") set in turn, the tests that rely on that answer run
again and each must fail, saying what the platform got wrong.

usage: vacuous.py --bin PATH/abx-e2e   (ABX_LOCAL_BIN / ABX_ENVD_BIN set)
Runs from the source tree. Standard library only."""

import os
import secrets
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, e2e_env  # noqa: E402
from abxtest import by_id, check, cli, done, run_reported  # noqa: E402

T01 = "tests-lua/test_01_platform.lua::"
T02 = "tests-lua/test_02_lifecycle.lua::lifecycle::"
T07 = "tests-lua/test_07_declarative.lua::errors::"
# fault settings -> {node id: a text its failure message holds}
CASES = [
    ({"killIgnored": 1}, {
        T02 + "kill ends the sandbox": "the killed sandbox is not running",
        T02 + "kill twice returns false": "the platform no longer has it",
    }),
    ({"listFilterEmpty": 1}, {
        T01 + "list::a metadata filter returns exactly the matching sandboxes":
            "both sandboxes listed by probe",
        T07 + "unsendable arguments raise before any sandbox":
            "the sendable call's sandbox listed by the test's tags",
    }),
    ({"errorBodyCode": 500}, {
        T01 + "error mapping::connect to an unknown sandbox raises NotFound naming it":
            "the error body's code agrees with its 404 (code 500)",
        T02 + "connect to a killed sandbox raises NotFound":
            "the error body's code agrees with its 404 (code 500)",
    }),
]
OFF = {"killIgnored": 0, "listFilterEmpty": 0, "errorBodyCode": 0}


def run_ids(binary, server, ids, tag):
    env = e2e_env(server, "vac-%s-%s" % (tag, secrets.token_hex(3)), NO_COLOR="1")
    with tempfile.TemporaryDirectory(prefix="abx-vacuous-") as tmp:
        p, doc = run_reported(binary, ["-n", "2", *ids], os.getcwd(), env, timeout=300,
                              report=os.path.join(tmp, "r.json"))
    return p, by_id(doc)


def main():
    a = cli()
    every = [i for _, tests in CASES for i in tests]
    with Server() as server:
        p, got = run_ids(a.bin, server, every, "base")
        bad = {i: (got.get(i) or {}).get("outcome") for i in every
               if (got.get(i) or {}).get("outcome") != "passed"}
        if not check(not bad, "unfaulted, every test passes: %s" % bad):
            print(p.stdout[-4000:])
        for faults, tests in CASES:
            check(server.faults(**faults) == 200, "fault %s set" % faults)
            p, got = run_ids(a.bin, server, list(tests), next(iter(faults)))
            check(server.faults(**OFF) == 200, "faults off")
            for nodeid, why in tests.items():
                t = got.get(nodeid) or {}
                text = (t.get("message") or "") + (t.get("longrepr") or "")
                check(t.get("outcome") == "failed" and why in text,
                      "%s: %s fails saying %r (%s: %.300r)" % (
                          faults, nodeid.split("::", 1)[1], why, t.get("outcome"), text))
        # What a faulted run could not kill (killIgnored) goes now.
        for sid in server.ids():
            server.kill(sid)
    done()


if __name__ == "__main__":
    main()
