#!/usr/bin/env python3
"""--evidence / --evidence-dir: where the Markdown record of a run goes.

usage: evidence_dir.py --bin PATH/abx-e2e

Runs the built abx-e2e on a tiny Lua file (no platform needed) in a fresh
temporary directory and checks: the default directory
(.agents/evidence/verify), a given directory (created with its parents),
the record's content, the usage errors (no --evidence, an existing
file as DIR, an empty DIR), and a record that cannot be written (exit 3). Standard library only."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (ALL_ABX, Fail, cli, must, remove, run as run_in,  # noqa: E402
                     run_scenarios, scratch, scrubbed_env, write_file)

TEST_FILE = """\
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect
test("one passes", function() expect(1 + 1):eq(2) end)
test("one fails", function() expect("a"):eq("b") end)
"""


def run(binary, cwd, *args):
    return run_in([binary, *args], cwd=cwd, env=scrubbed_env(ALL_ABX, NO_COLOR="1", CI="true"))


def dates(before, after):
    """The UTC dates the run may have stamped (it may cross midnight)."""
    return {time.strftime("%Y-%m-%d", time.gmtime(t)) for t in (before, after)}


def find_record(directory, topic, before, after):
    names = ["%s-%s.md" % (d, topic) for d in dates(before, after)]
    found = [n for n in names if os.path.exists(os.path.join(directory, n))]
    must(found, "no %s in %s (has: %s)" % (
       " or ".join(names), directory,
       os.listdir(directory) if os.path.isdir(directory) else "missing"))
    with open(os.path.join(directory, found[0]), encoding="utf-8") as f:
        return f.read()


def case_default(binary, d):
    before = time.time()
    p = run(binary, d, "--evidence", "ev-default", "tests")
    after = time.time()
    must(p.returncode == 1, "exit %d, want 1 (one failure)\n%s%s"
         % (p.returncode, p.stdout, p.stderr))
    text = find_record(os.path.join(d, ".agents/evidence/verify"),
                       "ev-default", before, after)
    must("# Verification: ev-default" in text, "title missing:\n" + text)
    must("tests/test_ev.lua::one passes` | passed" in text,
         "passed row missing:\n" + text)
    must("tests/test_ev.lua::one fails` | failed" in text,
         "failed row missing:\n" + text)
    must("evidence: .agents/evidence/verify/" in p.stdout,
         "path not printed:\n" + p.stdout)


def case_given_dir(binary, d):
    target = os.path.join(d, "out", "deep", "e2e")   # parents missing
    before = time.time()
    p = run(binary, d, "--evidence=ev given", "--evidence-dir", target,
            "tests")
    after = time.time()
    must(p.returncode == 1, "exit %d, want 1\n%s%s"
         % (p.returncode, p.stdout, p.stderr))
    text = find_record(target, "ev-given", before, after)  # ' ' -> '-'
    must("--evidence-dir" in text, "command line not recorded:\n" + text)
    must("evidence: " + target + "/" in p.stdout,
         "given path not printed:\n" + p.stdout)
    # The default directory stays untouched when another one is given.
    default = os.path.join(d, ".agents/evidence/verify")
    must(not os.path.exists(default) or
         not any("ev-given" in n for n in os.listdir(default)),
         "record also written to the default directory")
    # --evidence-dir=DIR form, with a trailing slash.
    other = os.path.join(d, "other")
    p = run(binary, d, "--evidence", "ev-eq", "--evidence-dir=" + other + "/",
            "tests")
    find_record(other, "ev-eq", before, time.time())
    must("evidence: " + other + "/2" in p.stdout,
         "path not printed as DIR/DATE-TOPIC.md:\n" + p.stdout)


def case_usage(binary, d):
    afile = os.path.join(d, "plain-file")
    with open(afile, "w") as f:
        f.write("x")
    for args, want in (
        (["--evidence-dir", os.path.join(d, "x")], "needs --evidence"),
        (["--evidence", "t", "--evidence-dir", afile], "not a directory"),
        (["--evidence", "t", "--evidence-dir="], "expects a DIR"),
        (["--evidence", "t", "--evidence-dir"], "expects a DIR"),
    ):
        p = run(binary, d, "tests", *args)
        must(p.returncode == 4, "%s: exit %d, want 4\n%s%s"
             % (args, p.returncode, p.stdout, p.stderr))
        must(want in p.stderr, "%s: stderr lacks %r:\n%s"
             % (args, want, p.stderr))
    must(not os.path.exists(os.path.join(d, "x")),
         "a usage error still created the directory")


def case_unwritable(binary, d):
    """A record that cannot be written fails an otherwise green run (3)."""
    afile = os.path.join(d, "plain-file")
    with open(afile, "w") as f:
        f.write("x")
    p = run(binary, d, "--evidence", "t", "--evidence-dir",
            os.path.join(afile, "sub"), "tests", "-k", "passes")
    must(p.returncode == 3, "exit %d, want 3 (internal error)\n%s%s"
         % (p.returncode, p.stdout, p.stderr))
    must("evidence" in p.stderr, "no error naming the evidence:\n" + p.stderr)


CASES = {c.__name__: c for c in (case_default, case_given_dir, case_usage, case_unwritable)}


def main():
    binary = cli().bin

    def one(name):
        d = scratch("abx-evidence-")
        try:
            write_file(os.path.join(d, "tests", "test_ev.lua"), TEST_FILE)
            CASES[name](binary, d)
        finally:
            remove(d)
    return run_scenarios(CASES, one, (Fail, subprocess.TimeoutExpired))


if __name__ == "__main__":
    sys.exit(main())
