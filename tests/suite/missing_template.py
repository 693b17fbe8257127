#!/usr/bin/env python3
"""The server template missing on the platform (a cloud where it was never
built, or a wrong E2E_SERVER_TEMPLATE): green means ran, so every test that
needs it fails naming the template and the fix, one create attempted for
test_06's file, and the run exits 1 (before: 18 skips and a green run).
The other tests of test_07 still pass.

usage: missing_template.py --bin PATH/abx-e2e
Runs from the source tree on abx-local's fc profile with
E2E_SERVER_TEMPLATE=<a name no platform has>. Standard library only."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import KNOBS, PLATFORM, check, cli, done, load_json, run, scrubbed_env  # noqa: E402

NAME = "e2e-no-such-server-template"
REASON = ("template %s not found on the platform (E2E_SERVER_TEMPLATE): build and deploy it "
          "(docs/fc-server-template.md) or name one that exists" % NAME)
SEVEN = "::the template option picks the sandbox's template"


def main():
    a = cli()
    env = scrubbed_env(PLATFORM + KNOBS + ("ABX_LOCAL_PROFILE",), E2E_SERVER_TEMPLATE=NAME,
                       NO_COLOR="1", CI="true")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        p = run([a.bin, "--local", "--profile", "fc", "--json", report,
                 "tests-lua/test_06_server_sdk.lua", "tests-lua/test_07_declarative.lua"],
                env=env, timeout=600)
        sys.stdout.write(p.stdout[-3000:])
        doc = load_json(report)
    if not check(isinstance(doc, dict) and isinstance(doc.get("tests"), list),
                 "the run wrote its JSON report"):
        print(p.stderr[-3000:])
        done()
    tests = doc["tests"]
    check(p.returncode == 1, "abx-e2e exited %d, want 1" % p.returncode)
    check(NAME in p.stdout, "the run's output names the template")
    skipped = [t["nodeid"] for t in tests if t["outcome"] == "skipped"]
    check(not skipped, "nothing skipped: %s" % skipped)
    six = [t for t in tests if "test_06_server_sdk.lua" in t["nodeid"]]
    check(six and all(t["outcome"] in ("failed", "error") and REASON in (t.get("message") or "")
                      for t in six),
          "every test_06 test fails naming the template and the fix: %s" % sorted(
              {(t["outcome"], (t.get("message") or "")[:120]) for t in six}))
    seven = [t for t in tests if t["nodeid"].endswith(SEVEN)]
    check(len(seven) == 1 and seven[0]["outcome"] == "failed" and
          REASON in (seven[0].get("message") or ""),
          "test_07's server-template test fails naming it: %s" % seven)
    rest = [t["nodeid"] for t in tests if "test_07" in t["nodeid"] and
            not t["nodeid"].endswith(SEVEN) and t["outcome"] != "passed"]
    check(not rest, "test_07's other tests pass: %s" % rest)
    done()


if __name__ == "__main__":
    main()
