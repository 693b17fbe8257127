#!/usr/bin/env python3
"""The whole suite without credentials: every test that needs the platform
is skipped with `E2E skipped: missing credentials [...]`, the others pass,
the run exits 0 and creates nothing (the suite spec's promise).

usage: no_credentials.py --bin PATH/abx-e2e --src SOURCE_DIR

The test files are copied into a scratch directory (never a .env of the
developer's) and the platform variables are dropped from the environment.
Standard library only."""

import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (PLATFORM, Fail, check, cli, copy_suite, done, run,  # noqa: E402
                     scrubbed_env, summary_counts, summary_line)

SKIP = "E2E skipped: missing credentials [ABX_SANDBOX_API_KEY]"


def main():
    a = cli(src=True)
    with tempfile.TemporaryDirectory(prefix="abx-nocred-") as tmp:
        copy_suite(a.src, tmp)
        p = run([a.bin, "-r", "a", "-v", "--json", os.path.join(tmp, "r.json"), "tests-lua"],
                cwd=tmp, env=scrubbed_env(PLATFORM, NO_COLOR="1"))
        out = p.stdout + p.stderr
        print(out[-3000:])
        check(p.returncode == 0, "exit %d, expected 0" % p.returncode)
        try:
            counts = summary_counts(summary_line(p.stdout))
        except Fail:
            counts = {}
        check(not (counts.get("failed") or counts.get("error") or counts.get("errors")),
              "no failures or errors: %s" % counts)
        check(counts.get("skipped", 0) >= 150, "the platform tests skipped: %s" % counts)
        reasons = set(re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", out, re.M))
        check(reasons == {SKIP}, "skip reasons %r, expected only %r" % (reasons, SKIP))
        runs = os.path.join(tmp, ".abx-e2e", "runs")
        check(not (os.path.isdir(runs) and any(
            open(os.path.join(runs, n)).read().strip() for n in os.listdir(runs))),
            "no ledger lists sandboxes")
    done()


if __name__ == "__main__":
    main()
