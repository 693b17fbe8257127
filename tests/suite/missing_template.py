#!/usr/bin/env python3
"""The server template missing on the platform (issue: a cloud where it was
never built): test_06 and test_07's server-template test are skipped with
one reason naming it, one create attempted for the file, no error.

usage: missing_template.py --bin PATH/abx-e2e
Runs from the source tree on abx-local's fc profile with
E2E_SERVER_TEMPLATE=<a name no platform has>. Standard library only."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import KNOBS, PLATFORM, check, cli, done, load_json, run, scrubbed_env  # noqa: E402

NAME = "e2e-no-such-server-template"
REASON = "template %s not found: build it, see README" % NAME


def main():
    a = cli()
    env = scrubbed_env(PLATFORM + KNOBS + ("ABX_LOCAL_PROFILE",), E2E_SERVER_TEMPLATE=NAME,
                       NO_COLOR="1", CI="true")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        p = run([a.bin, "--local", "--profile", "fc", "-rs", "--json", report,
                 "tests-lua/test_06_server_sdk.lua", "tests-lua/test_07_declarative.lua"],
                env=env, timeout=600)
        sys.stdout.write(p.stdout[-3000:])
        doc = load_json(report)
    if not check(isinstance(doc, dict) and isinstance(doc.get("tests"), list),
                 "the run wrote its JSON report"):
        print(p.stderr[-3000:])
        done()
    tests = doc["tests"]
    bad = [t["nodeid"] for t in tests if t["outcome"] in ("failed", "error")]
    check(not bad, "no test failed or errored: " + ", ".join(bad))
    six = [t for t in tests if "test_06_server_sdk.lua" in t["nodeid"]]
    check(six and all(t["outcome"] == "skipped" and t.get("reason") == REASON for t in six),
          "test_06 skipped with %r: %s" % (
              REASON, sorted({(t["outcome"], t.get("reason")) for t in six})))
    seven = [t for t in tests if t["nodeid"].endswith(
        "::the template option picks the sandbox's template")]
    check(len(seven) == 1 and seven[0]["outcome"] == "skipped" and
          seven[0].get("reason") == REASON,
          "test_07's server-template test skipped: %s" % seven)
    fix = sum(1 for t in six if "(fixture server_sandbox)" in (t.get("skip_loc") or ""))
    check(fix >= 2 and "SKIPPED [%d] tests-lua/test_06_server_sdk.lua (fixture server_sandbox): %s"
          % (fix, REASON) in p.stdout, "-r s counts the fixture's skips on one line")
    check(p.returncode == 0, "abx-e2e exited %d" % p.returncode)
    done()


if __name__ == "__main__":
    main()
