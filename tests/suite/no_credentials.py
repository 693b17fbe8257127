#!/usr/bin/env python3
"""The whole suite without credentials: every test that needs the platform
is skipped with `E2E skipped: missing credentials [...]`, the others pass,
the run exits 0 and creates nothing (the suite spec's promise).

usage: no_credentials.py --bin PATH/abx-e2e --src SOURCE_DIR

The test files are copied into a scratch directory (never a .env of the
developer's) and the platform variables are dropped from the environment.
Standard library only."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = "E2E skipped: missing credentials [ABX_SANDBOX_API_KEY]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    fails = []
    with tempfile.TemporaryDirectory(prefix="abx-nocred-") as tmp:
        dst = os.path.join(tmp, "tests-lua")
        os.makedirs(dst)
        for f in glob.glob(os.path.join(a.src, "tests-lua", "*.lua")):
            shutil.copy(f, dst)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ABX_SANDBOX_", "E2B_"))}
        env["NO_COLOR"] = "1"
        p = subprocess.run([a.bin, "-r", "a", "-v", "--json",
                            os.path.join(tmp, "r.json"), "tests-lua"],
                           cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=120)
        out = p.stdout + p.stderr
        print(out[-3000:])
        if p.returncode != 0:
            fails.append("exit %d, expected 0" % p.returncode)
        m = re.search(r"=+ (.*) in [\d.]+s =+", out)
        counts = dict((k, int(n)) for n, k in
                      re.findall(r"(\d+) (\w+)", m.group(1))) if m else {}
        if counts.get("failed") or counts.get("error") or counts.get("errors"):
            fails.append("failures or errors: %s" % counts)
        if counts.get("skipped", 0) < 150:
            fails.append("expected the platform tests skipped, got %s" % counts)
        reasons = set(re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", out, re.M))
        if reasons != {SKIP}:
            fails.append("skip reasons %r, expected only %r" % (reasons, SKIP))
        if os.path.isdir(os.path.join(tmp, ".abx-e2e", "runs")) and any(
                open(os.path.join(tmp, ".abx-e2e", "runs", n)).read().strip()
                for n in os.listdir(os.path.join(tmp, ".abx-e2e", "runs"))):
            fails.append("a ledger lists sandboxes")
    for f in fails:
        print("FAIL " + f)
    print("no_credentials: %s" % ("ok" if not fails else "%d failed" % len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
