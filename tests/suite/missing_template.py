#!/usr/bin/env python3
"""The server template missing on the platform (issue: a cloud where it was
never built): test_06 and test_07's server-template test are skipped with
one reason naming it, one create attempted for the file, no error.

usage: missing_template.py --bin PATH/abx-e2e
Runs from the source tree on abx-local's fc profile with
E2E_SERVER_TEMPLATE=<a name no platform has>. Standard library only."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

NAME = "e2e-no-such-server-template"
REASON = "template %s not found: build it, see README" % NAME


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ABX_SANDBOX_", "E2B_", "E2E_"))}
    env.update({"E2E_SERVER_TEMPLATE": NAME, "NO_COLOR": "1", "CI": "true"})
    env.pop("ABX_LOCAL_PROFILE", None)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        p = subprocess.run([a.bin, "--local", "--profile", "fc", "-rs", "--json", report,
                            "tests-lua/test_06_server_sdk.lua",
                            "tests-lua/test_07_declarative.lua"],
                           env=env, capture_output=True, text=True, timeout=600)
        sys.stdout.write(p.stdout[-3000:])
        try:
            with open(report) as f:
                tests = json.load(f)["tests"]
        except (OSError, ValueError, KeyError) as e:
            print(p.stderr[-3000:])
            print("missing_template: FAIL: no JSON report: %s" % e)
            return 1
    bad = [t["nodeid"] for t in tests if t["outcome"] in ("failed", "error")]
    if bad:
        problems.append("failed or errored: " + ", ".join(bad))
    six = [t for t in tests if "test_06_server_sdk.lua" in t["nodeid"]]
    if not six or any(t["outcome"] != "skipped" or t.get("reason") != REASON for t in six):
        problems.append("test_06 not skipped with %r: %s" % (
            REASON, sorted({(t["outcome"], t.get("reason")) for t in six})))
    seven = [t for t in tests if t["nodeid"].endswith(
        "::the template option picks the sandbox's template")]
    if len(seven) != 1 or seven[0]["outcome"] != "skipped" or seven[0].get("reason") != REASON:
        problems.append("test_07's server-template test not skipped: %s" % seven)
    fix = sum(1 for t in six if "(fixture server_sandbox)" in (t.get("skip_loc") or ""))
    if fix < 2 or "SKIPPED [%d] tests-lua/test_06_server_sdk.lua (fixture server_sandbox): %s" % (
            fix, REASON) not in p.stdout:
        problems.append("-r s does not count the fixture's skips on one line")
    if p.returncode != 0:
        problems.append("abx-e2e exited %d" % p.returncode)
    for m in problems:
        print("missing_template: FAIL: " + m)
    print("missing_template: %s" % ("ok" if not problems else "failed"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
