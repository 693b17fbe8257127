#!/usr/bin/env python3
"""The whole E2E suite on abx-local, as CI runs it, then checks its outputs.

usage: suite_local.py --bin PATH/abx-e2e --out DIR [--profile fc|e2b]
                      [--expect-skips FILE] [--compare-with OTHER-DIR]
                      [--check-only] [-- ABX-E2E OPTIONS ...]

Runs, from the current directory (the source tree):
  abx-e2e --local [--profile P] -n 2 -r a --junitxml DIR/junit.xml
          --json DIR/report.json --html DIR/report.html
          --evidence-dir DIR --evidence TOPIC
          [OPTIONS] tests-lua
(TOPIC is suite-local-P with --profile, else suite-local) with its output
shown and kept in DIR/TOPIC.log, writes the skipped tests to
DIR/skipped.txt (the --expect-skips format: a finished run's list is a
ready skip file), then checks:
  - the JUnit report parses, has tests, and no failures or errors;
  - the evidence record DIR/<date>-TOPIC.md exists;
  - the run's closing sandboxes line says `0 left` (and nothing kept);
  - abx-e2e exited 0;
  - with --expect-skips FILE: the skipped tests of the run (its JSON
    report) are exactly those FILE lists, each with a skip message starting with the
    reason FILE gives. FILE has one `NODE-ID<TAB>REASON-PREFIX` a line
    (or two spaces for the tab); blank lines and lines starting with #
    are ignored. DOC.md#NAME reads the fenced block after the line
    `<!-- skips:NAME -->` of DOC.md (docs/capabilities.md#fc). A difference is
    printed both ways: unexpectedly skipped, expected but not skipped,
    reason mismatch;
  - with --compare-with and --expect-diffs DOC.md#NAME: `abx-e2e
    diff-records OTHER-DIR/records DIR/records` (each run records every
    test's trace) shows only differences the fenced block after
    `<!-- diffs:NAME -->` of DOC.md lists, and each it lists;
  - with --compare-with OTHER-DIR (the other profile's output directory),
    when OTHER-DIR holds a finished run: both runs collected the same
    tests, and their skip lists differ only by tests skipped with
    `requires capability X (E2E_CAPS)` where X is absent from the
    skipping run's capabilities and present in the other's (each run's
    platform and capabilities are in its JSON report). Any other
    difference fails. Without a run in OTHER-DIR the comparison is
    skipped with a note, unless ABX_SUITE_COMPARE_WITH is set: it then
    stands for OTHER-DIR, and a missing run fails.
xfailed tests (known_issue) are not skips here.
--check-only skips the run and checks what an earlier run left in DIR.
The platform variables (ABX_SANDBOX_*, E2B_*) and the capability knobs
(E2E_PLATFORM, E2E_CAPS, ABX_LOCAL_PROFILE) are dropped from the
environment: the run uses abx-local only, with the profile's documented
capability set. Standard library only."""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (CAPS, PLATFORM, check, done, load_json, read_text,  # noqa: E402
                     run_tee, sandbox_counts, scrubbed_env, teller)

# The reason of a test skipped for a capability (docs/capabilities.md).
CAP_SKIP = re.compile(
    r"^requires capabilit(?:y|ies) ([a-z0-9, -]+?) \(E2E_CAPS\)")
SKIPPED_FILE = "skipped.txt"
RECORDS = "records"   # --record: each test's trace, for diff-records


def topic_of(profile):
    return "suite-local-" + profile if profile else "suite-local"


say = teller("suite.local")


def run_suite(binary, out, profile, extra, vary=None):
    topic = topic_of(profile)
    for stale in ["junit.xml", "report.json", "report.html", SKIPPED_FILE,
                  topic + ".log"]:
        if os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    for stale in glob.glob(os.path.join(out, "*-%s.md" % topic)):
        os.unlink(stale)
    shutil.rmtree(os.path.join(out, RECORDS), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    env = scrubbed_env(PLATFORM + CAPS)
    env.setdefault("CI", "true")
    env.setdefault("NO_COLOR", "1")
    env.pop("ABX_LOCAL_VARY", None)
    if vary is not None:
        # abx-local reads it: every detail FC never promised drawn from it
        env["ABX_LOCAL_VARY"] = str(vary)
        say("vary seed %s (replay: make e2e-local VARY=%s PROFILE=%s)" % (
            vary, vary, profile or "e2b"))
    cmd = [binary, "--local"]
    if profile:
        cmd += ["--profile", profile]
    cmd += ["-n", "2", "-r", "a",
            "--junitxml", os.path.join(out, "junit.xml"),
            "--json", os.path.join(out, "report.json"),
            "--html", os.path.join(out, "report.html"),
            "--evidence-dir", out, "--evidence", topic,
            # every test's trace, for diff-records between the profiles
            "--record", os.path.join(out, RECORDS), "--trace-body-max", "65536",
            *extra, "tests-lua"]
    say(" ".join(cmd))
    start = time.time()
    rc, _ = run_tee(cmd, None, env, os.path.join(out, topic + ".log"))
    say("exit %d, wall time %.0f s" % (rc, time.time() - start))
    return rc


def read_junit(out, problems):
    """Totals and the failed or errored cases of DIR/junit.xml; None when
    it does not parse."""
    junit = os.path.join(out, "junit.xml")
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        problems.append("%s: %s" % (junit, e))
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        problems.append("%s: no <testsuite>" % junit)
    try:
        totals = {k: sum(int(s.get(k, "0")) for s in suites)
                  for k in ("tests", "failures", "errors", "skipped")}
    except ValueError as e:
        problems.append("%s: %s" % (junit, e))
        return None
    bad = [c.get("classname", "") + "::" + c.get("name", "")
           for c in root.iter("testcase")
           if c.find("failure") is not None or c.find("error") is not None]
    return totals, bad


def read_report(out, problems):
    """From the run's own record, DIR/report.json: ({node id: skip
    reason}, the set of node ids, (platform, set of capabilities)); None
    when it cannot be read. xfailed tests are not skips."""
    path = os.path.join(out, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        tests = doc["tests"]
        skips = {t["nodeid"]: t.get("reason") or t.get("message") or ""
                 for t in tests if t["outcome"] == "skipped"}
        collected = {t["nodeid"] for t in tests}
        caps = (doc["platform"], set(doc["capabilities"]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        problems.append("%s: %s" % (path, e))
        return None
    return skips, collected, caps


def check_outputs(out, profile):
    problems = []
    topic = topic_of(profile)
    junit = os.path.join(out, "junit.xml")
    got = read_junit(out, problems)
    if got:
        totals, bad = got
        if totals["tests"] <= 0:
            problems.append("%s: no tests" % junit)
        if totals["failures"] or totals["errors"] or bad:
            problems.append("%s: %d failures, %d errors: %s" % (
                junit, totals["failures"], totals["errors"],
                ", ".join(bad[:20])))
        say("JUnit: %(tests)d tests, %(failures)d failures, "
            "%(errors)d errors, %(skipped)d skipped" % totals)
    report = read_report(out, problems)
    if report:
        write_skipped(out, profile, report[0])
    records = glob.glob(os.path.join(out, "*-%s.md" % topic))
    if not records:
        problems.append("no evidence record %s/<date>-%s.md" % (out, topic))
    else:
        say("evidence: " + records[0])
    log = os.path.join(out, topic_of(profile) + ".log")
    text = read_text(log)
    counts = sandbox_counts(text or "")
    if text is None:
        problems.append("run log: cannot read %s" % log)
    elif not counts:
        problems.append("no `sandboxes: ...` line in the run's output")
    else:
        created, _, kept, left = counts
        if left or kept:
            problems.append("sandboxes line says %d kept, %d left "
                            "(want 0 left)" % (kept, left))
        if created == 0:
            problems.append("the suite created no sandbox")
        problems += check_timeline(out, created)
    if not os.path.exists(os.path.join(out, "report.html")):
        problems.append("no HTML report %s/report.html" % out)
    return problems, report


def check_timeline(out, created):
    """The timeline's facts in DIR/report.json: every test that ran has
    its start, and every sandbox the run created its whole lifetime, in
    the run's time span, on one of the 2 workers."""
    doc = load_json(os.path.join(out, "report.json"), {})
    problems = []
    t0 = doc.get("created", 0)
    t1 = t0 + doc.get("duration", 0)
    ran = [t for t in doc.get("tests", []) if t.get("when") != "collect"]
    nostart = [t["nodeid"] for t in ran if not t0 <= t.get("start", 0) <= t1]
    if nostart:
        problems.append("tests without a start in the run's span: %s" %
                        ", ".join(nostart[:5]))
    sbx = doc.get("sandboxes", [])
    if len(sbx) != created:
        problems.append("report.json lists %d sandbox lifetimes, the run "
                        "created %d" % (len(sbx), created))
    bad = [s.get("id") for s in sbx
           if not (t0 <= s.get("created", 0) <= (s.get("ended") or 0) <= t1)
           or s.get("worker") not in (0, 1)]
    if bad:
        problems.append("sandboxes whose lifetime is not within the run on "
                        "a worker: %s" % ", ".join(map(str, bad[:5])))
    if not problems:
        say("timeline: %d tests with a start, %d sandbox lifetimes" % (
            len(ran), len(sbx)))
    return problems


def write_skipped(out, profile, skips):
    """DIR/skipped.txt: what the run skipped, in the --expect-skips format
    (to start or update the lists of docs/capabilities.md from)."""
    lines = ["# Skipped by the run in %s%s (suite_local.py)\n" % (
        out, ", profile " + profile if profile else "")]
    for nodeid in sorted(skips):
        lines.append("%s\t%s\n" % (nodeid, skips[nodeid].split("\n")[0]))
    tmp = os.path.join(out, SKIPPED_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(tmp, os.path.join(out, SKIPPED_FILE))


def skip_lines(path):
    """(line number, text) of an --expect-skips file; for DOC.md#NAME, of
    the fenced block after the line `<!-- skips:NAME -->` in DOC.md (the
    docs are the list: docs/capabilities.md explains each skip)."""
    path, _, name = path.partition("#")
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\r\n") for l in f]
    if not name:
        return list(enumerate(lines, 1))
    marker = "<!-- skips:%s -->" % name
    if marker not in lines:
        raise OSError("no %s in %s" % (marker, path))
    i = lines.index(marker) + 1
    while i < len(lines) and not lines[i].startswith("```"):
        i += 1
    out = []
    for n in range(i + 1, len(lines)):
        if lines[n].startswith("```"):
            return out
        out.append((n + 1, lines[n]))
    raise OSError("the block after %s in %s does not end" % (marker, path))


def read_expected(path, problems):
    """{node id: reason prefix} of an --expect-skips file: one
    NODE-ID<TAB or two spaces>REASON-PREFIX a line."""
    want = {}
    try:
        for n, line in skip_lines(path):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = re.split(r"\t| {2,}", line.strip(), maxsplit=1)
            nodeid, reason = parts[0], parts[1].strip() if len(parts) > 1 else ""
            if not nodeid or not reason:
                problems.append("%s:%d: want NODE-ID<TAB>REASON-PREFIX, "
                                "got %r" % (path, n, line))
            elif nodeid in want:
                problems.append("%s:%d: %s listed twice" % (path, n, nodeid))
            else:
                want[nodeid] = reason
    except (OSError, UnicodeDecodeError) as e:
        problems.append("%s: %s" % (path, e))
    return want


def check_skips(path, skips):
    """The run's skips against the expected ones: a list of problems."""
    problems = []
    want = read_expected(path, problems)
    if problems:
        return problems
    extra = sorted(set(skips) - set(want))
    missing = sorted(set(want) - set(skips))
    wrong = sorted(k for k in set(want) & set(skips)
                   if not skips[k].startswith(want[k]))
    for k in extra:
        problems.append("unexpectedly skipped: %s (%s)" % (k, skips[k]))
    for k in missing:
        problems.append("expected skipped but not skipped: %s (want %s)" % (
            k, want[k]))
    for k in wrong:
        problems.append("reason mismatch: %s: skipped with %r, want a "
                        "reason starting %r" % (k, skips[k], want[k]))
    if not problems:
        say("skips: the %d expected (%s)" % (len(want), path))
    return problems


def only_by_caps(nodeid, reason, here, there, name_here, name_there):
    """None if skipping nodeid here and not there is explained by a
    capability absent here and present there, else the problem."""
    m = CAP_SKIP.match(reason)
    if not m:
        return ("%s: skipped on %s only, not for a capability: %r" % (
            nodeid, name_here, reason))
    needed = {c.strip() for c in m.group(1).split(",") if c.strip()}
    for cap in sorted(needed):
        if cap in here:
            return ("%s: skipped on %s for %s, which %s has" % (
                nodeid, name_here, cap, name_here))
        if cap not in there:
            return ("%s: skipped on %s for %s, absent on %s too, yet it "
                    "runs there" % (nodeid, name_here, cap, name_there))
    return None


def compare_runs(out, profile, report, other, binary=None, diffs_doc=None):
    """Problems of the comparison of the run in out with the one in
    other; None when other holds no finished run (nothing compared)."""
    if not os.path.exists(os.path.join(other, "report.json")):
        say("compare: no finished run in %s, not compared" % other)
        return None
    problems = []
    theirs = read_report(other, problems)
    if not theirs:
        return ["compare: " + p for p in problems]
    skips, collected, mine = report
    oskips, ocollected, theirs = theirs
    name, oname = profile or mine[0], theirs[0]
    here, there = mine[1], theirs[1]
    say("compare: %s (%s) with %s (%s)" % (
        name, ", ".join(sorted(here)) or "none",
        oname, ", ".join(sorted(there)) or "none"))
    for k in sorted(collected - ocollected):
        problems.append("%s: collected on %s only" % (k, name))
    for k in sorted(ocollected - collected):
        problems.append("%s: collected on %s only" % (k, oname))
    for k in sorted(set(skips) - set(oskips)):
        p = only_by_caps(k, skips[k], here, there, name, oname)
        if p:
            problems.append(p)
    for k in sorted(set(oskips) - set(skips)):
        p = only_by_caps(k, oskips[k], there, here, oname, name)
        if p:
            problems.append(p)
    for k in sorted(set(skips) & set(oskips)):
        if skips[k] != oskips[k]:
            problems.append("%s: skipped on both with different reasons: "
                            "%r on %s, %r on %s" % (
                                k, skips[k], name, oskips[k], oname))
    if not problems:
        say("compare: the skip lists differ by capabilities only "
            "(%d on %s only, %d on %s only, %d on both)" % (
                len(set(skips) - set(oskips)), name,
                len(set(oskips) - set(skips)), oname,
                len(set(skips) & set(oskips))))
    if binary and diffs_doc:
        problems += compare_records(binary, out, other, oname, name, diffs_doc)
    return ["compare: " + p for p in problems]


def read_diff_patterns(path):
    """The documented differences: DOC.md#NAME, the fenced block after
    `<!-- diffs:NAME -->`, one `KIND<TAB>AT<TAB>FIELD<TAB>A<TAB>B` a line
    (* matches anything, a trailing * any rest)."""
    doc, _, name = path.partition("#")
    text = read_text(doc) or ""
    m = re.search(r"<!-- diffs:%s -->\s*```[^\n]*\n(.*?)```" % re.escape(name), text, re.S)
    out = []
    for line in (m.group(1) if m else "").splitlines():
        if line.strip() and not line.startswith("#"):
            out.append(tuple(re.split(r"\t| {2,}", line.strip())))
    return out


def matches(pattern, value):
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return pattern == value


def compare_records(binary, out, other, oname, name, diffs_doc):
    """diff-records between the two runs' records (the other run as A):
    every difference is one docs/profiles.md documents, and each it
    documents shows."""
    a, b = os.path.join(other, RECORDS), os.path.join(out, RECORDS)
    if not (os.path.isdir(a) and os.path.isdir(b)):
        return ["diff-records: no records in %s or %s" % (a, b)]
    js = os.path.join(out, "diff-records.json")
    p = subprocess.run([binary, "diff-records", "-q", "--json", js, a, b],
                       capture_output=True, text=True, timeout=300)
    doc = load_json(js)
    if p.returncode not in (0, 1) or not isinstance(doc, dict):
        return ["diff-records %s %s: exit %d: %s" % (a, b, p.returncode, p.stderr[-500:])]
    pats = read_diff_patterns(diffs_doc)
    if not pats:
        return ["diff-records: no documented differences in %s" % diffs_doc]
    seen, problems = set(), []
    for t in doc.get("tests", []):
        for d in t["differences"]:
            got = (d["kind"], d["at"], d["field"], str(d["a"]), str(d["b"]))
            hit = [i for i, pt in enumerate(pats)
                   if len(pt) == 5 and all(matches(x, y) for x, y in zip(pt, got))]
            seen.update(hit)
            if not hit:
                problems.append("diff-records: %s: %s | %s (%s vs %s), not in %s" % (
                    t["nodeid"], "  ".join(got[1:3]), " | ".join(got[3:]), oname, name,
                    diffs_doc))
    for i, pt in enumerate(pats):
        if i not in seen:
            problems.append("diff-records: %s documents %r, which no test showed" % (
                diffs_doc, "  ".join(pt)))
    for k in ("only_a", "only_b"):
        for n in doc.get(k, []):
            problems.append("diff-records: %s recorded on %s only" % (
                n, oname if k == "only_a" else name))
    say("diff-records %s %s: %d tests differ, each as %s documents%s" % (
        oname, name, len(doc.get("tests", [])), diffs_doc,
        "" if not problems else " (but: %d problems)" % len(problems)))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", choices=["fc", "e2b"])
    ap.add_argument("--expect-skips", metavar="FILE")
    ap.add_argument("--compare-with", metavar="DIR")
    ap.add_argument("--expect-diffs", metavar="DOC.md#NAME",
                    help="with --compare-with: diff-records of the two runs shows "
                         "exactly the differences DOC.md lists")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--vary", metavar="SEED",
                    help="abx-local serve --vary SEED (docs/profiles.md)")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    rc = 0
    if not a.check_only:
        rc = run_suite(os.path.abspath(a.bin), out, a.profile, a.extra, a.vary)
    problems, report = check_outputs(out, a.profile)
    if rc != 0:
        problems.append("abx-e2e exited %d" % rc)
    if a.expect_skips and report is not None:
        problems += check_skips(a.expect_skips, report[0])
    # make test runs the fc profile on the sanitizer build and this one
    # on the release build: the environment names that run, which must
    # then be there (scripts/test.sh).
    other = a.compare_with and (os.environ.get("ABX_SUITE_COMPARE_WITH") or a.compare_with)
    if other and report is not None:
        compared = compare_runs(out, a.profile, report, os.path.abspath(other),
                                os.path.abspath(a.bin), a.expect_diffs)
        if compared is None and os.environ.get("ABX_SUITE_COMPARE_WITH"):
            compared = ["compare: no finished run in %s (ABX_SUITE_COMPARE_WITH)" % other]
        problems += compared or []
    for p in problems:
        say("FAIL: " + p)
    check(not problems, "the run and its outputs in %s: %d problem(s)" % (out, len(problems)))
    done()


if __name__ == "__main__":
    main()
