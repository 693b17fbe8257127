#!/usr/bin/env python3
"""The whole E2E suite on abx-local, as CI runs it, then checks its outputs.

usage: suite_local.py --bin PATH/abx-e2e --out DIR [--check-only]
                      [-- ABX-E2E OPTIONS ...]

Runs, from the current directory (the source tree):
  abx-e2e --local -n 2 -r a --junitxml DIR/junit.xml --evidence-dir DIR
          --evidence suite-local [OPTIONS] tests-lua
with its output shown and kept in DIR/suite-local.log, then checks:
  - the JUnit report parses, has tests, and no failures or errors;
  - the evidence record DIR/<date>-suite-local.md exists;
  - the run's closing sandboxes line says `0 left` (and nothing kept);
  - abx-e2e exited 0.
--check-only skips the run and checks what an earlier run left in DIR.
The platform variables (ABX_SANDBOX_*, E2B_*) are dropped from the
environment: the run uses abx-local only. Standard library only."""

import argparse
import glob
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

TOPIC = "suite-local"
SANDBOX_LINE = re.compile(
    r"^sandboxes: (\d+) created, (\d+) deleted, (\d+) kept, (\d+) left$",
    re.M)


def run_suite(binary, out, extra):
    for stale in ["junit.xml", TOPIC + ".log"]:
        if os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    for stale in glob.glob(os.path.join(out, "*-%s.md" % TOPIC)):
        os.unlink(stale)
    os.makedirs(out, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ABX_SANDBOX_", "E2B_"))}
    env.setdefault("CI", "true")
    env.setdefault("NO_COLOR", "1")
    cmd = [binary, "--local", "-n", "2", "-r", "a",
           "--junitxml", os.path.join(out, "junit.xml"),
           "--evidence-dir", out, "--evidence", TOPIC, *extra, "tests-lua"]
    print("suite.local: " + " ".join(cmd), flush=True)
    start = time.time()
    with open(os.path.join(out, TOPIC + ".log"), "wb") as log:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        for chunk in iter(lambda: p.stdout.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            log.write(chunk)
        rc = p.wait()
    print("suite.local: exit %d, wall time %.0f s" % (rc, time.time() - start),
          flush=True)
    return rc


def check_outputs(out):
    problems = []
    junit = os.path.join(out, "junit.xml")
    try:
        root = ET.parse(junit).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall(
            "testsuite")
        if not suites:
            problems.append("%s: no <testsuite>" % junit)
        totals = {k: sum(int(s.get(k, "0")) for s in suites)
                  for k in ("tests", "failures", "errors", "skipped")}
        cases = root.iter("testcase")
        bad = [c.get("classname", "") + "::" + c.get("name", "")
               for c in cases
               if c.find("failure") is not None or c.find("error") is not None]
        if totals["tests"] <= 0:
            problems.append("%s: no tests" % junit)
        if totals["failures"] or totals["errors"] or bad:
            problems.append("%s: %d failures, %d errors: %s" % (
                junit, totals["failures"], totals["errors"],
                ", ".join(bad[:20])))
        print("suite.local: JUnit: %(tests)d tests, %(failures)d failures, "
              "%(errors)d errors, %(skipped)d skipped" % totals)
    except (OSError, ET.ParseError, ValueError) as e:
        problems.append("%s: %s" % (junit, e))
    records = glob.glob(os.path.join(out, "*-%s.md" % TOPIC))
    if not records:
        problems.append("no evidence record %s/<date>-%s.md" % (out, TOPIC))
    else:
        print("suite.local: evidence: " + records[0])
    try:
        with open(os.path.join(out, TOPIC + ".log"), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        lines = SANDBOX_LINE.findall(text)
        if not lines:
            problems.append("no `sandboxes: ...` line in the run's output")
        else:
            created, _, kept, left = (int(x) for x in lines[-1])
            if left or kept:
                problems.append("sandboxes line says %d kept, %d left "
                                "(want 0 left)" % (kept, left))
            if created == 0:
                problems.append("the suite created no sandbox")
    except OSError as e:
        problems.append("run log: %s" % e)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    rc = 0
    if not a.check_only:
        rc = run_suite(os.path.abspath(a.bin), out, a.extra)
    problems = check_outputs(out)
    if rc != 0:
        problems.append("abx-e2e exited %d" % rc)
    for p in problems:
        print("suite.local: FAIL: " + p)
    if not problems:
        print("suite.local: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
