#!/usr/bin/env python3
"""Runs every example of the authoring reference and checks its outcome.

usage: run_examples.py --bin PATH/abx-e2e [--keep] [--list]

Reads docs/authoring.md and docs/authoring.zh-CN.md (from the source tree
this script lives in). An example is a fenced block whose first line is a
marker:

  ```lua                                 ```markdown
  -- example: NAME [(KIND)]              <!-- example: NAME (known-issues) -->

NAME is lower case letters, digits and '-', unique in the file. KIND:
  (none)      a test file; every test in it must pass
  (fails)     a test file showing a failure: every test failed or error
  (skips)     every test skipped
  (xfail)     every test xfailed (a known_issue pin)
  (flaky)     every test flaky (failed, then passed on a rerun)
  (conftest)  Lua appended to the examples' conftest.lua, not a test file
  (known-issues)  Markdown appended to the examples' KNOWN-ISSUES.md
A block whose first line is not a marker is an illustration: not run. A
line that starts like a marker but does not parse is an error (a typo must
not turn an example into an illustration).

Checks, in order:
  - both files hold the same examples, name for name, in the same order,
    byte for byte (the first difference is named, with both lines);
  - the run: each test example is written as test_<NAME>.lua ('-' -> '_')
    in a temporary directory, with tests-lua/suite.lua, a conftest.lua made
    of tests-lua/conftest.lua (when it exists) and the (conftest) blocks,
    and the (known-issues) blocks as KNOWN-ISSUES.md; then, from that
    directory:
      abx-e2e --local --profile fc -n 2 -r a --json report.json .
    with its output shown. The platform variables (ABX_SANDBOX_*, E2B_*)
    and capability knobs (E2E_PLATFORM, E2E_CAPS, ABX_LOCAL_PROFILE) are
    dropped from the environment, as tests/suite/suite_local.py does;
  - every example file was collected (has at least one test in the JSON
    report) and no test came from elsewhere;
  - every test's outcome is the one its example's KIND promises, and no
    finalizer failed (a teardown error) outside (fails) examples;
  - the closing line says `sandboxes: N created, N deleted, 0 kept, 0
    left`;
  - abx-e2e exited 1 when there are (fails) examples, else 0.
--keep leaves the temporary directory (its path is printed); --list prints
the examples and runs nothing. Standard library only."""

import argparse
import json
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from mdfence import fences  # noqa: E402
from abxtest import (CAPS, PLATFORM, Fail, check, done, remove, run_tee,  # noqa: E402
                     sandbox_counts, scratch, scrubbed_env, teller)

SRC = os.path.dirname(os.path.dirname(HERE))
DOCS = ["docs/authoring.md", "docs/authoring.zh-CN.md"]

# A marker, strictly; LOOSE catches a line meant as one that does not parse.
MARKER = {
    "lua": re.compile(r"^-- example: ([a-z0-9]+(?:-[a-z0-9]+)*)(?: \(([a-z-]+)\))?$"),
    "markdown": re.compile(
        r"^<!-- example: ([a-z0-9]+(?:-[a-z0-9]+)*)(?: \(([a-z-]+)\))? -->$"),
}
LOOSE = {
    "lua": re.compile(r"^\s*--\s*example\b", re.I),
    "markdown": re.compile(r"^\s*<!--\s*example\b", re.I),
}
LANGS = {"lua": "lua", "markdown": "markdown", "md": "markdown"}
KINDS = {
    "lua": {None: "passed", "fails": ("failed", "error"), "skips": "skipped",
            "xfail": "xfailed", "flaky": "flaky", "conftest": None},
    "markdown": {"known-issues": None},
}
say = teller("docs.examples")


class Example:
    def __init__(self, doc, line, lang, name, kind, code):
        self.doc, self.line, self.lang = doc, line, lang
        self.name, self.kind, self.code = name, kind, code

    def where(self):
        return "%s:%d" % (self.doc, self.line)

    def is_test(self):
        return self.lang == "lua" and self.kind != "conftest"

    def filename(self):
        return "test_%s.lua" % self.name.replace("-", "_")


def extract(rel):
    """The examples of one Markdown file, in order."""
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, seen = [], {}
    for start, _, lang, body in fences(lines, rel):
        start += 1  # the line after the fence (0-based): the marker's
        kind_lang = LANGS.get(lang)
        if not body or kind_lang is None:
            continue
        first = body[0]
        mm = MARKER[kind_lang].match(first)
        if not mm:
            if LOOSE[kind_lang].match(first):
                raise Fail("%s:%d: malformed example marker %r (want `%s`)" % (
                    rel, start + 1, first,
                    "-- example: NAME [(KIND)]" if kind_lang == "lua"
                    else "<!-- example: NAME (known-issues) -->"))
            continue
        name, kind = mm.group(1), mm.group(2)
        if kind not in KINDS[kind_lang]:
            raise Fail("%s:%d: example %s: unknown kind (%s) for a %s block "
                       "(known: %s)" % (rel, start + 1, name, kind, kind_lang,
                                        ", ".join(k or "none" for k in KINDS[kind_lang])))
        if name in seen:
            raise Fail("%s:%d: example %s defined twice (first at line %d)" % (
                rel, start + 1, name, seen[name]))
        seen[name] = start + 1
        out.append(Example(rel, start + 1, kind_lang, name, kind,
                           "\n".join(body) + "\n"))
    files = {}
    for ex in out:
        if ex.is_test():
            other = files.setdefault(ex.filename(), ex)
            if other is not ex:
                raise Fail("%s: examples %s and %s both make %s" % (
                    ex.where(), other.name, ex.name, ex.filename()))
    return out


def compare(a, b):
    """Raises Fail naming the first difference of two example lists."""
    names_a, names_b = [e.name for e in a], [e.name for e in b]
    for ea in a:
        if ea.name not in names_b:
            raise Fail("example %s (%s) is missing from %s" % (
                ea.name, ea.where(), DOCS[1]))
    for eb in b:
        if eb.name not in names_a:
            raise Fail("example %s (%s) is missing from %s" % (
                eb.name, eb.where(), DOCS[0]))
    for ea, eb in zip(a, b):
        if ea.name != eb.name:
            raise Fail("examples in a different order: %s has %s where %s "
                       "has %s" % (ea.where(), ea.name, eb.where(), eb.name))
        if ea.lang != eb.lang or ea.code != eb.code:
            la, lb = ea.code.split("\n"), eb.code.split("\n")
            n = next((k for k in range(max(len(la), len(lb)))
                      if k >= len(la) or k >= len(lb) or la[k] != lb[k]), 0)
            raise Fail("example %s differs: %s:%d: %r\n  vs %s:%d: %r" % (
                ea.name, ea.doc, ea.line + n,
                la[n] if n < len(la) else "<end of block>",
                eb.doc, eb.line + n,
                lb[n] if n < len(lb) else "<end of block>"))


def prepare(examples, work):
    """Writes the example files, conftest.lua, KNOWN-ISSUES.md, suite.lua."""
    tests_lua = os.path.join(SRC, "tests-lua")
    shutil.copy(os.path.join(tests_lua, "suite.lua"), work)
    conftest = []
    base = os.path.join(tests_lua, "conftest.lua")
    if os.path.exists(base):
        with open(base, encoding="utf-8") as f:
            conftest.append(f.read())
    known = ["# Known issues of the authoring examples\n\n## Open\n"]
    for ex in examples:
        if ex.kind == "conftest":
            conftest.append(ex.code)
        elif ex.kind == "known-issues":
            known.append(ex.code)
        else:
            with open(os.path.join(work, ex.filename()), "w", encoding="utf-8") as f:
                f.write(ex.code)
    if conftest:
        with open(os.path.join(work, "conftest.lua"), "w", encoding="utf-8") as f:
            f.write("\n".join(conftest))
    if len(known) > 1:
        with open(os.path.join(work, "KNOWN-ISSUES.md"), "w", encoding="utf-8") as f:
            f.write("\n".join(known))


def run(binary, work):
    env = scrubbed_env(PLATFORM + CAPS)
    env.setdefault("CI", "true")
    env.setdefault("NO_COLOR", "1")
    cmd = [binary, "--local", "--profile", "fc", "-n", "2", "-r", "a",
           "--json", "report.json", "."]
    say("(in %s) %s" % (work, " ".join(cmd)))
    start = time.time()
    rc, output = run_tee(cmd, work, env, os.path.join(work, "run.log"))
    say("exit %d, wall time %.1f s" % (rc, time.time() - start))
    return rc, output


def problems_of(examples, work, rc, output):
    problems = []
    tests = [e for e in examples if e.is_test()]
    path = os.path.join(work, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            records = json.load(f)["tests"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return ["%s: %s" % (path, e)]
    by_file = {}
    for t in records:
        f = t.get("file") or ""
        by_file.setdefault(f[2:] if f.startswith("./") else f, []).append(t)
    for ex in tests:
        got = by_file.pop(ex.filename(), [])
        if not got:
            problems.append("%s: example %s: no test collected from %s" % (
                ex.where(), ex.name, ex.filename()))
            continue
        want = KINDS["lua"][ex.kind]
        want = want if isinstance(want, tuple) else (want,)
        for t in got:
            if t.get("outcome") not in want:
                msg = (t.get("message") or "").split("\n")[0]
                problems.append("%s: example %s: %s is %s, want %s%s" % (
                    ex.where(), ex.name, t.get("nodeid"), t.get("outcome"),
                    " or ".join(want), (": " + msg) if msg else ""))
            if t.get("teardown_message") and ex.kind != "fails":
                problems.append("%s: example %s: %s: error at teardown: %s" % (
                    ex.where(), ex.name, t.get("nodeid"),
                    t["teardown_message"].split("\n")[0]))
    for f, got in sorted(by_file.items()):
        problems.append("%s: %d test(s) from no example" % (f, len(got)))
    counts = sandbox_counts(output)
    if not counts:
        problems.append("no `sandboxes: ...` line in the run's output")
    else:
        created, deleted, kept, left = counts
        if kept or left or created != deleted:
            problems.append("sandboxes: %d created, %d deleted, %d kept, %d "
                            "left (want all deleted, 0 left)" % (
                                created, deleted, kept, left))
    want_rc = 1 if any(e.kind == "fails" for e in tests) else 0
    if rc != want_rc:
        problems.append("abx-e2e exited %d, want %d" % (rc, want_rc))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="abx-e2e to run the examples with")
    ap.add_argument("--keep", action="store_true",
                    help="leave the temporary directory")
    ap.add_argument("--list", action="store_true",
                    help="list the examples, run nothing")
    a = ap.parse_args()
    try:
        en, zh = extract(DOCS[0]), extract(DOCS[1])
        compare(en, zh)
    except (Fail, OSError, UnicodeDecodeError) as e:
        say("FAIL: %s" % e)
        return 1
    kinds = {}
    for ex in en:
        kinds[ex.kind or "passes"] = kinds.get(ex.kind or "passes", 0) + 1
    summary = ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items()))
    say("%d examples (%s), identical in %s and %s" % (
        len(en), summary, DOCS[0], DOCS[1]))
    if a.list:
        for ex in en:
            print("%-32s %-14s %s" % (ex.name, ex.kind or "", ex.where()))
        return 0
    if not a.bin:
        ap.error("--bin is required to run the examples")
    work = scratch("abx-docs-")
    try:
        prepare(en, work)
        fails = sum(1 for e in en if e.kind == "fails")
        if fails:
            say("%d examples show a failure: the run's FAILED/ERROR lines "
                "for them, and its exit 1, are expected" % fails)
        rc, output = run(os.path.abspath(a.bin), work)
        problems = problems_of(en, work, rc, output)
    finally:
        if a.keep:
            say("kept " + work)
        else:
            remove(work)
    for p in problems:
        say("FAIL: " + p)
    check(not problems, "%d examples, %d test files, every outcome as marked, "
          "0 sandboxes left (%d problem(s))"
          % (len(en), sum(1 for e in en if e.is_test()), len(problems)))
    done()


if __name__ == "__main__":
    sys.exit(main())
