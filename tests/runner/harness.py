#!/usr/bin/env python3
"""Runner self-tests: runs the built abx-e2e on the Lua files in cases/ and
checks what it reports (outcome per node id via --json, exit code, summary
line, JUnit validity, fixture logs, masking).

usage: harness.py --bin PATH/abx-e2e SCENARIO   (or "all")

Each scenario runs in a fresh temporary directory holding a copy of cases/,
so node ids read "cases/test_x.lua::name". Standard library only."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import (ALL_ABX, Fail, by_id, cli, must, outcomes, remove, run,  # noqa: E402
                     run_scenarios, scratch, scrubbed_env, secret_forms, summary_line)

SECRET = "e2b_" + "3f9a1c7e5b2d4086" * 2  # planted API key (fake)
RUNTIME_SECRET = "tok_" + "7" * 24


class Ctx:
    """A scratch directory holding a copy of this folder's `cases` (as
    cases/) where abx-e2e runs in self-test mode, its fixtures logging to
    fixtures.log; hostile.py's Ctx takes hostile/ instead."""
    cases = "cases"
    prefix = "abx-runner-"

    def __init__(self, binary):
        self.bin = binary
        self.dir = scratch(self.prefix, os.path.join(HERE, self.cases))
        self.log = os.path.join(self.dir, "fixtures.log")

    def env(self, extra=None):
        env = scrubbed_env(ALL_ABX, ABX_E2E_SELFTEST="1", ABX_SELFTEST_LOG=self.log,
                           NO_COLOR="1", CI="true")
        env.update(extra or {})
        return env

    def run(self, *args, env=None, timeout=120):
        return run([self.bin, *args], cwd=self.dir, env=self.env(env), timeout=timeout)

    def json_run(self, *args, env=None, name="report.json"):
        path = os.path.join(self.dir, name)
        if os.path.exists(path):
            os.unlink(path)
        p = self.run(*args, "--json", name, env=env)
        must(os.path.exists(path), "no JSON report written\n" + p.stdout + p.stderr)
        with open(path) as f:
            return p, json.load(f)

    def log_lines(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [l.rstrip("\n") for l in f]

    def cleanup(self):
        remove(self.dir)


def expect_outcomes(got, want):
    for nid, o in want.items():
        must(got.get(nid) == o, f"{nid}: expected {o}, got {got.get(nid)}")


F = "cases/test_fixtures.lua::"
O = "cases/test_outcomes.lua::"
T = "cases/test_timeouts.lua::"

OUTCOMES = {
    O + "passes": "passed",
    O + "fails with assertion": "failed",
    O + "errors with lua error": "error",
    O + "static skip": "skipped",
    O + "runtime skip": "skipped",
    O + "known issue fails": "xfailed",
    O + "known issue passes": "failed",
    O + "needs platform": "skipped",
    O + "slow one": "passed",
    O + "files::read works": "passed",
    O + "files::nested::write works": "passed",
    O + "assertion messages": "passed",
    O + "eventually passes": "passed",
    O + "eventually times out": "failed",
    O + "typo in global": "error",
}


# ---- scenarios -----------------------------------------------------------

def sc_outcomes(c):
    p, doc = c.json_run("cases/test_outcomes.lua", "-rA")
    must(p.returncode == 1, f"exit code {p.returncode}, want 1")
    expect_outcomes(outcomes(doc), OUTCOMES)
    t = by_id(doc)
    must(t[O + "known issue passes"]["message"].startswith(
       "[XPASS(strict)] KI-002: fixed upstream?"), "strict XPASS message")
    must(t[O + "needs platform"]["reason"] ==
         "E2E skipped: missing credentials [ABX_SANDBOX_API_KEY]",
         "missing-credentials skip reason: " + str(t[O + "needs platform"].get("reason")))
    must(t[O + "fails with assertion"]["message"].startswith(
       "cases/test_outcomes.lua:11: expected values to be equal"),
       "assertion message carries file:line: " + t[O + "fails with assertion"]["message"])
    must('expected: "world"' in t[O + "fails with assertion"]["longrepr"], "expected vs actual")
    must("e2e" in t[O + "passes"]["markers"], "every test carries e2e")
    must("e2e_slow" in t[O + "slow one"]["markers"], "e2e_slow marker")
    must("known_issue" in t[O + "known issue fails"]["markers"], "known_issue marker")
    must("output of a failing test" in p.stdout, "captured output of a failure shown")
    head, _, passes = p.stdout.partition(" PASSES ")  # -rA includes P (pytest)
    must("output of a passing test" not in head, "captured output of a pass hidden")
    must("output of a passing test" in passes, "-rA: pass output in PASSES")
    p2 = c.run("cases/test_outcomes.lua::passes", "-s")
    must("output of a passing test" in p2.stdout, "-s passes output through")
    line = summary_line(p.stdout)
    must(re.fullmatch(r"3 failed, 6 passed, 3 skipped, 1 xfailed, 2 errors in [\d.]+s", line),
         "summary line: " + line)
    for shape in ["FAILED " + O + "known issue passes - [XPASS(strict)] KI-002: fixed upstream?",
                  "XFAIL " + O + "known issue fails - KI-001: product returns 500",
                  "SKIPPED [1] cases/test_outcomes.lua:19: not supported here",
                  "PASSED " + O + "passes",
                  "ERROR " + O + "typo in global - cases/test_outcomes.lua:69: undefined global"]:
        must(shape in p.stdout, "short summary lacks: " + shape)


def sc_fixtures(c):
    p, doc = c.json_run("cases/test_fixtures.lua")
    must(p.returncode == 1, f"exit code {p.returncode}")
    got = outcomes(doc)
    expect_outcomes(got, {
        F + "order under failure": "failed",
        F + "setup failure still tears down": "error",
        F + "teardown error reported separately": "passed",
        F + "session fixture shared": "passed",
        F + "missing fixture is an error": "error",
        F + "platform fixture skips without credentials": "skipped",
        F + "c fixture seam": "passed",
        F + "last": "passed",
    })
    t = by_id(doc)
    must("teardown exploded" in (t[F + "teardown error reported separately"].get("teardown_message") or ""),
         "teardown error reported separately")
    must(t[F + "setup failure still tears down"]["when"] == "setup", "setup phase")
    want = ["setup fileres", "setup a", "setup b", "call order", "teardown b", "teardown a",
            "setup a", "deferred of broken", "teardown a", "bad teardown runs",
            "session setup", "sess session-value", "teardown fileres", "session teardown"]
    must(c.log_lines() == want, "fixture order:\n" + "\n".join(c.log_lines()))
    must("ERROR at teardown of " + F + "teardown error reported separately" in p.stdout,
         "ERROR at teardown section")


def sc_skip_credentials(c):
    _, doc = c.json_run("cases/test_outcomes.lua::needs platform")
    must(outcomes(doc) == {O + "needs platform": "skipped"}, str(outcomes(doc)))
    p, doc = c.json_run("cases/test_outcomes.lua::needs platform",
                        env={"E2B_API_KEY": SECRET})
    must(outcomes(doc) == {O + "needs platform": "passed"}, "with E2B_API_KEY: " + str(outcomes(doc)))
    must(p.returncode == 0, f"exit {p.returncode}")


C = "cases/test_caps.lua::"
S = "cases/test_skips.lua::"


def sc_skips(c):
    """Green means ran: a skip that a declared capability (requires), the
    envd the platform reports (requires_envd), the credentials or the
    test's own skip = "why" explain is a skip; any other e2e.skip, a
    fixture's included, fails the test naming its reason, and the run
    with it. --allow-skips keeps them skips."""
    p, doc = c.json_run("cases/test_skips.lua")
    must(p.returncode == 1, f"exit code {p.returncode}, want 1")
    expect_outcomes(outcomes(doc), {
        S + "declared skip": "skipped", S + "requires skips": "skipped",
        S + "requires at run time": "skipped", S + "envd below the gate": "skipped",
        S + "unexplained skip": "failed", S + "a fixture's skip": "failed"})
    t = by_id(doc)
    must(t[S + "unexplained skip"]["message"] == "skipped for a reason no declared capability "
         "explains: decided at runtime (declare it: requires = {...} or skip = \"why\"; "
         "--allow-skips keeps it a skip)", str(t[S + "unexplained skip"].get("message")))
    must("a fixture's own skip" in t[S + "a fixture's skip"]["message"],
         str(t[S + "a fixture's skip"].get("message")))
    p, doc = c.json_run("cases/test_skips.lua", "--allow-skips")
    must(p.returncode == 0, f"--allow-skips: exit code {p.returncode}, want 0")
    must(set(outcomes(doc).values()) == {"skipped"}, "--allow-skips: " + str(outcomes(doc)))
    must(by_id(doc)[S + "unexplained skip"]["reason"] == "decided at runtime",
         str(by_id(doc)[S + "unexplained skip"].get("reason")))


def sc_caps(c):
    """Capabilities: fc (the default) declares none, e2b all; E2E_CAPS
    adjusts; a missing one skips naming it (terminal -r s, JSON, JUnit).
    A file fixture's own skip is kept for the file like an error (here
    with --allow-skips: without, it fails its tests, sc_skips)."""
    p, doc = c.json_run("cases/test_caps.lua", "-rs", "--junitxml", "out/caps.xml",
                        "--allow-skips")
    got, tests = outcomes(doc), by_id(doc)
    expect_outcomes(got, {
        C + "needs pause": "skipped", C + "signed::inherits the group's": "skipped",
        C + "signed::adds its own": "skipped", C + "has says what is declared": "passed",
        C + "requires at run time": "skipped", C + "envd below the gate": "skipped",
        C + "envd at the gate": "passed", C + "envd not a version": "error",
        C + "fixture skip one": "skipped", C + "fixture skip two": "skipped",
        C + "fixture error one": "error", C + "fixture error two": "error"})
    must(tests[C + "needs pause"]["reason"] == "requires capability pause (E2E_CAPS)",
         tests[C + "needs pause"]["reason"])
    must(tests[C + "signed::adds its own"]["reason"] ==
         "requires capabilities signed-urls, pause (E2E_CAPS)", tests[C + "signed::adds its own"]["reason"])
    must(tests[C + "envd below the gate"]["reason"] ==
         "requires envd 0.6.2 or later for file metadata (the sandbox reports 0.5.2)",
         tests[C + "envd below the gate"]["reason"])
    must("not an envd version: 'banana'" in tests[C + "envd not a version"]["message"],
         tests[C + "envd not a version"]["message"])
    # a file fixture's skip or error is kept for the file: one attempt
    for n in ("one", "two"):
        must(tests[C + "fixture skip " + n]["reason"] == "template x not found (attempt 1)",
             tests[C + "fixture skip " + n]["reason"])
        must("broken setup 1" in tests[C + "fixture error " + n]["message"],
             tests[C + "fixture error " + n]["message"])
    must("platform=fc pause=false proxy=false" in tests[C + "has says what is declared"]["output"],
         tests[C + "has says what is declared"]["output"])
    must("SKIPPED [1] cases/test_caps.lua:6: requires capability pause (E2E_CAPS)" in p.stdout, p.stdout)
    root = ET.parse(os.path.join(c.dir, "out/caps.xml")).getroot()
    sk = [tc for tc in root.iter("testcase") if tc.get("name") == "needs pause"][0].find("skipped")
    must(sk is not None and sk.get("message") == "requires capability pause (E2E_CAPS)",
         "JUnit skipped message: " + ET.tostring(root, encoding="unicode")[:400])
    # e2b declares them all; E2E_CAPS takes one away
    _, doc = c.json_run("cases/test_caps.lua", env={"E2E_PLATFORM": "e2b", "E2E_CAPS": " -pause "})
    got = outcomes(doc)
    expect_outcomes(got, {C + "needs pause": "skipped", C + "signed::inherits the group's": "passed",
                          C + "signed::adds its own": "skipped", C + "requires at run time": "passed"})
    must(by_id(doc)[C + "needs pause"]["reason"] == "requires capability pause (E2E_CAPS)", "e2b -pause")
    # fc plus two
    _, doc = c.json_run("cases/test_caps.lua", env={"E2E_CAPS": "+pause,signed-urls"})
    expect_outcomes(outcomes(doc), {C + "needs pause": "passed", C + "signed::adds its own": "passed",
                                    C + "requires at run time": "skipped"})
    out = by_id(doc)[C + "has says what is declared"]["output"]
    must("capabilities=pause,signed-urls local=false plane=nil" in out, out)
    # bad configuration: usage errors naming the problem
    for env, frag in [({"E2E_CAPS": "+pause,+bogus"}, "unknown capability 'bogus'"),
                      ({"E2E_CAPS": "pause,,signed-urls"}, "empty item"),
                      ({"E2E_PLATFORM": "aws"}, "E2E_PLATFORM expects e2b or fc, got 'aws'")]:
        p = c.run("cases/test_caps.lua", env=env)
        must(p.returncode == 4 and frag in p.stderr, f"{env}: exit {p.returncode} {p.stderr}")
    # a test declaring an unknown capability is a collection error naming it
    with open(os.path.join(c.dir, "cases", "test_badcap.lua"), "w") as f:
        f.write('local e2e = require "e2e"\n'
                'e2e.test("x", { requires = { "teleport" } }, function() end)\n')
    p = c.run("cases/test_badcap.lua")
    must(p.returncode == 2 and "unknown capability \"teleport\"" in p.stdout,
         f"unknown capability in a test: exit {p.returncode}\n{p.stdout}{p.stderr}")


def sc_known_issue(c):
    """known_issue ids: KI- and three or more digits, a reason required; with
    a KNOWN-ISSUES.md above the file, the id must have an entry there."""
    def write(name, ki):
        with open(os.path.join(c.dir, "cases", name), "w") as f:
            f.write('local e2e = require "e2e"\n'
                    'e2e.test("pinned", { known_issue = %s }, function() error("still broken") end)\n' % ki)
        return "cases/" + name
    ok = write("test_ki_ok.lua", '"KI-100: the hundredth"')
    p, doc = c.json_run(ok)
    must(p.returncode == 0 and outcomes(doc) == {ok + "::pinned": "xfailed"},
         f"KI-100 without a KNOWN-ISSUES.md: {p.returncode} {outcomes(doc)}")
    for ki, frag in (('"KI-001"', 'known_issue must be "KI-NNN: reason"'),
                     ('"KI-01: two digits"', 'known_issue must be "KI-NNN: reason"'),
                     ('"KI-001:   "', 'known_issue must be "KI-NNN: reason"')):
        bad = write("test_ki_bad.lua", ki)
        p = c.run(bad)
        must(p.returncode == 2 and frag in p.stdout, f"{ki}: exit {p.returncode}\n{p.stdout}")
    with open(os.path.join(c.dir, "KNOWN-ISSUES.md"), "w") as f:
        f.write("# Known issues\n\n## Open\n\n### KI-100: the hundredth\n\nSymptom.\n"
                "\n### KI-0007: four digits\n")
    p, doc = c.json_run(ok, write("test_ki_4.lua", '"KI-0007: four digits"'))
    must(p.returncode == 0 and set(outcomes(doc).values()) == {"xfailed"},
         f"ids with entries: {p.returncode} {outcomes(doc)}")
    missing = write("test_ki_missing.lua", '"KI-101: not recorded"')
    p = c.run(missing)
    must(p.returncode == 2 and "known_issue KI-101 has no entry in " in p.stdout
         and "KNOWN-ISSUES.md" in p.stdout, f"unrecorded id: exit {p.returncode}\n{p.stdout}")


def sc_dsl(c):
    """eventually retries raised errors (retry_on narrows), names the last
    one; raises() by class/text/pattern returns the error; known_issue
    narrowed by raises; parametrize with pytest's ids."""
    DS = "cases/test_dsl.lua::"
    p, doc = c.json_run("cases/test_dsl.lua")
    want = {DS + n: "passed" for n in (
        "eventually retries a raised error", "eventually retry_on lets other classes through",
        "eventually names the last error", "raises by class, text and pattern",
        "adds[1]", "adds[65536]", "adds[x y]", "tables[size0]", "tables[size1]",
        "dups[a0]", "dups[a1]", "dups[b]", "named[user-port]", "named[envd]")}
    want[DS + "pinned failure"] = "xfailed"
    want[DS + "pinned but broken differently"] = "error"   # not hidden as XFAIL
    must(outcomes(doc) == want, "got %s" % outcomes(doc))
    must(p.returncode == 1, f"exit {p.returncode}")
    must("e2e_slow" in by_id(doc)[DS + "named[envd]"]["markers"], "parametrize keeps opts")
    p, doc = c.json_run("cases/test_dsl.lua", "-k", "65536")
    must(list(outcomes(doc)) == [DS + "adds[65536]"], "-k by id: %s" % list(outcomes(doc)))
    p, doc = c.json_run(DS + "named[envd]")
    must(list(outcomes(doc)) == [DS + "named[envd]"], "node id: %s" % list(outcomes(doc)))
    bad = os.path.join(c.dir, "cases", "test_dsl_bad.lua")
    for src, frag in (('e2e.parametrize("p", {}, function(v) end)', "cases must be a non-empty list"),
                      ('e2e.parametrize("p", {1}, {ids = {"a::b"}}, function(v) end)', "no usable id"),
                      ('e2e.test("t", {raises = "NotFound"}, function() end)', "raises needs known_issue")):
        with open(bad, "w") as f:
            f.write('local e2e = require "e2e"\n' + src + "\n")
        p = c.run("cases/test_dsl_bad.lua")
        must(p.returncode == 2 and frag in p.stdout and "test_dsl_bad.lua:2:" in p.stdout,
             f"{src}: exit {p.returncode}\n{p.stdout}")


def sc_longest_first(c):
    """With several workers the files whose tests took longest last time
    start first (.abx-e2e/durations.json); one worker keeps file order."""
    d = os.path.join(c.dir, "lf_order")
    os.makedirs(d)
    log = os.path.join(c.dir, "order.log")
    for name, secs in (("a_fast", 0), ("b_mid", 0.4), ("c_slow", 0.8)):
        with open(os.path.join(d, "test_%s.lua" % name), "w") as f:
            f.write('local e2e = require "e2e"\n'
                    'e2e.test("t", function()\n'
                    '  local f = assert(io.open(%r, "a")); f:write("%s\\n"); f:close()\n'
                    '  if %s > 0 then e2e.sleep(%s) end\n'
                    'end)\n' % (log, name, secs, secs))

    def order(*args):
        if os.path.exists(log):
            os.unlink(log)
        p = c.run("lf_order", *args)
        must(p.returncode == 0, "exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
        with open(log) as f:
            return [l.strip() for l in f]

    # No cache yet: collection order, so a_fast starts before c_slow.
    first = order("-n", "2")
    must(first.index("a_fast") < first.index("c_slow"), "no cache: %s" % first)
    with open(os.path.join(c.dir, ".abx-e2e", "durations.json")) as f:
        cache = json.load(f)
    must(cache["lf_order/test_c_slow.lua::t"] > cache["lf_order/test_a_fast.lua::t"], str(cache))
    # Now the two long files take both workers; a_fast waits for one.
    must(order("-n", "2")[-1] == "a_fast", "longest first")
    # One worker: the files' own order, whatever the cache says.
    must(order() == ["a_fast", "b_mid", "c_slow"], "-n 1 keeps collection order")
    # A damaged cache orders nothing and is replaced.
    with open(os.path.join(c.dir, ".abx-e2e", "durations.json"), "w") as f:
        f.write("{not json")
    second = order("-n", "2")
    must(second.index("a_fast") < second.index("c_slow"), "damaged cache: %s" % second)
    with open(os.path.join(c.dir, ".abx-e2e", "durations.json")) as f:
        must(len(json.load(f)) == 3, "cache rewritten")


RR = "cases/test_reruns.lua::"


def sc_reruns(c):
    """--reruns: a failed test runs again with fresh fixtures; one that then
    passes is FLAKY (progress, closing line, -r R, JSON attempts, JUnit
    flakyFailure/rerunFailure, evidence); never rerun: known issues, a
    file fixture's kept failure, a run stopped by -x."""
    def fresh():
        for n in os.listdir(c.dir):
            if n.endswith(".count"):
                os.unlink(os.path.join(c.dir, n))

    fresh()
    p, doc = c.json_run("cases/test_reruns.lua", "--reruns", "2", "-rR", "-v",
                        "--junitxml", "out/rr.xml", "--evidence", "rr",
                        "--evidence-dir", "ev")
    t = by_id(doc)
    expect_outcomes(outcomes(doc), {
        RR + "passes": "passed", RR + "fails once then passes": "flaky",
        RR + "always fails": "failed", RR + "errors in setup once": "flaky",
        RR + "its own reruns": "flaky", RR + "known issue fails": "xfailed",
        RR + "file fixture broken": "error"})
    for nid, n in ((RR + "passes", 0), (RR + "fails once then passes", 1),
                   (RR + "always fails", 2), (RR + "errors in setup once", 1),
                   (RR + "its own reruns", 3), (RR + "known issue fails", 0),
                   (RR + "file fixture broken", 0)):
        must(t[nid]["rerun"] == n and len(t[nid].get("attempts", [])) == n,
             "%s: rerun %s, attempts %s" % (nid, t[nid]["rerun"], t[nid].get("attempts")))
    a = t[RR + "fails once then passes"]["attempts"][0]
    must(a["outcome"] == "failed" and "attempt 1" in a["message"] and
         "attempt 1" in a.get("output", ""), str(a))
    must("attempt 2" in t[RR + "fails once then passes"]["output"], "final output")
    must(t[RR + "errors in setup once"]["attempts"][0]["outcome"] == "error",
         str(t[RR + "errors in setup once"]["attempts"]))
    must("still broken on attempt 3" in t[RR + "always fails"]["message"],
         t[RR + "always fails"]["message"])
    line = summary_line(p.stdout)
    must("1 failed" in line and "1 passed" in line and "3 flaky" in line and
         "1 error" in line and "7 rerun" in line, line)
    must(p.returncode == 1, "exit %d" % p.returncode)
    must(p.stdout.count(RR + "always fails RERUN") == 2, "two RERUN lines")
    must(RR + "fails once then passes FLAKY" in p.stdout, "FLAKY progress word")
    must("FLAKY %sfails once then passes (1 rerun) - " % RR in p.stdout, "-r R line")
    root = ET.parse(os.path.join(c.dir, "out/rr.xml")).getroot()
    case = {tc.get("name"): tc for tc in root.iter("testcase")}
    ff = case["fails once then passes"]
    must(ff.find("failure") is None and len(ff.findall("flakyFailure")) == 1 and
         "attempt 1" in ff.find("flakyFailure").get("message") and
         ff.find("flakyFailure").find("stackTrace") is not None, ET.tostring(ff)[:400])
    must(len(case["errors in setup once"].findall("flakyError")) == 1, "flakyError")
    al = case["always fails"]
    must(al.find("failure") is not None and len(al.findall("rerunFailure")) == 2,
         ET.tostring(al)[:400])
    suite = root.find("testsuite")
    must(suite.get("failures") == "1" and suite.get("errors") == "1", str(suite.attrib))
    ev = [n for n in os.listdir(os.path.join(c.dir, "ev")) if n.endswith("-rr.md")]
    must(ev, "no evidence record")
    with open(os.path.join(c.dir, "ev", ev[0])) as f:
        text = f.read()
    must("## Flaky tests" in text and "| `%sfails once then passes` | 2 |" % RR in text,
         text[text.find("## Flaky"):][:300])
    # flaky passes the run, unless --fail-on-flaky
    fresh()
    p = c.run("cases/test_reruns.lua", "-k", "once or passes", "--reruns", "1")
    must(p.returncode == 0, "flaky passes: exit %d\n%s" % (p.returncode, p.stdout))
    fresh()
    p = c.run("cases/test_reruns.lua", "-k", "once or passes", "--reruns", "1",
              "--fail-on-flaky")
    must(p.returncode == 1, "--fail-on-flaky: exit %d" % p.returncode)
    # without --reruns nothing is rerun (the per-test option still is)
    fresh()
    _, doc = c.json_run("cases/test_reruns.lua")
    got = outcomes(doc)
    must(got[RR + "fails once then passes"] == "failed" and
         got[RR + "its own reruns"] == "flaky", str(got))
    # -x: the failing test uses its reruns, then the run stops
    fresh()
    _, doc = c.json_run("cases/test_reruns.lua", "-x", "--reruns", "1",
                        "-k", "always or own")
    got = outcomes(doc)
    must(got == {RR + "always fails": "failed"}, "-x: %s" % got)
    must(by_id(doc)[RR + "always fails"]["rerun"] == 1, "-x reruns before stopping")
    for args, frag in ((("--reruns", "x"), "--reruns expects"),
                       (("--reruns", "101"), "--reruns expects"),
                       (("--reruns-delay", "-1"), "--reruns-delay expects")):
        p = c.run("cases/test_reruns.lua", *args)
        must(p.returncode == 4 and frag in p.stderr, "%s: %d %s" % (args, p.returncode, p.stderr))
    with open(os.path.join(c.dir, "cases", "test_badreruns.lua"), "w") as f:
        f.write('require("e2e").test("x", { reruns = -1 }, function() end)\n')
    p = c.run("cases/test_badreruns.lua")
    must(p.returncode == 2 and "reruns must be an integer from 0 to 100" in p.stdout,
         "bad reruns option: %d %s" % (p.returncode, p.stdout))


def sc_dotenv(c):
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("# local settings\nexport ABX_SANDBOX_API_KEY=\"%s\"  # key\n" % SECRET)
    p, doc = c.json_run("cases/test_outcomes.lua::needs platform")
    must(outcomes(doc) == {O + "needs platform": "passed"}, ".env key not used: " + str(outcomes(doc)))
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("GOOD=1\nthis line is broken\n")
    p = c.run("cases/test_outcomes.lua")
    must(p.returncode == 4, f"malformed .env: exit {p.returncode}")
    must(".env:2" in p.stderr, "malformed line named by file:line: " + p.stderr)


def sc_select(c):
    p, doc = c.json_run("cases/test_outcomes.lua", "-k", "files and not write")
    must(outcomes(doc) == {O + "files::read works": "passed"}, str(outcomes(doc)))
    must(doc["summary"]["deselected"] == 14, "deselected count %s" % doc["summary"])
    must("14 deselected" in summary_line(p.stdout), summary_line(p.stdout))
    _, doc = c.json_run("cases/test_outcomes.lua", "-k", "(PASSES or SLOW) and not skip")
    must(set(outcomes(doc)) == {O + "passes", O + "slow one", O + "eventually passes",
                                O + "known issue passes"}, str(outcomes(doc)))
    _, doc = c.json_run("cases/test_outcomes.lua", "-m", "e2e_slow")
    must(set(outcomes(doc)) == {O + "slow one"}, str(outcomes(doc)))
    _, doc = c.json_run("cases/test_outcomes.lua", "-m", "known_issue and not e2e_slow")
    must(set(outcomes(doc)) == {O + "known issue fails", O + "known issue passes"}, str(outcomes(doc)))
    _, doc = c.json_run("cases/test_outcomes.lua", "-m", "E2E_SLOW")  # exact names
    must(outcomes(doc) == {}, "-m is case-sensitive")
    p = c.run("cases/test_outcomes.lua", "-k", "passes and (")
    must(p.returncode == 4 and "-k" in p.stderr, f"bad -k: exit {p.returncode} {p.stderr}")
    p = c.run("cases/test_outcomes.lua", "-k", "nothing_matches_this")
    must(p.returncode == 5, f"all deselected: exit {p.returncode}")
    p = c.run("cases/test_bad_marker.lua")
    must(p.returncode == 4 and "no_such_marker" in p.stderr, f"unknown marker: {p.returncode} {p.stderr}")
    p = c.run("--collect-only", "cases/test_outcomes.lua", "-k", "files")
    must(p.returncode == 0 and O + "files::nested::write works" in p.stdout, p.stdout)
    p = c.run("--no-such-option")
    must(p.returncode == 4, f"unknown option: exit {p.returncode}")
    p = c.run("cases/test_outcomes.lua::no such test")
    must(p.returncode == 4 and "not found" in p.stderr, f"unknown node id: {p.returncode}")


def sc_exitfirst(c):
    p, doc = c.json_run("cases/test_outcomes.lua", "-x")
    must(p.returncode == 1, f"exit {p.returncode}")
    must(list(outcomes(doc)) == [O + "passes", O + "fails with assertion"], str(outcomes(doc)))
    must("stopping after 1 failure" in p.stdout, "stop banner")
    p, doc = c.json_run("cases/test_outcomes.lua", "--maxfail", "2")
    must(len(doc["tests"]) == 3, "maxfail 2 ran %d" % len(doc["tests"]))


def sc_lastfailed(c):
    c.json_run("cases/test_outcomes.lua", "cases/test_fixtures.lua")
    p, doc = c.json_run("--lf", "cases/test_outcomes.lua", "cases/test_fixtures.lua")
    want = {O + "fails with assertion", O + "errors with lua error", O + "known issue passes",
            O + "eventually times out", O + "typo in global", F + "order under failure",
            F + "setup failure still tears down", F + "teardown error reported separately",
            F + "missing fixture is an error"}
    must(set(outcomes(doc)) == want, "--lf ran: %s" % sorted(outcomes(doc)))
    must(doc["summary"]["deselected"] > 0, "others deselected")
    _, doc = c.json_run("--ff", "cases/test_outcomes.lua", "cases/test_fixtures.lua")
    must(len(outcomes(doc)) == 23, "--ff runs everything (%d)" % len(outcomes(doc)))
    # Per test: the last failures run first, whatever their file.
    first = [t["nodeid"] for t in doc["tests"][:len(want)]]
    must(set(first) == want, "--ff ran first: %s" % first)
    for extra in (["-n", "2"], ["-n", "2", "--dist", "loadfile"]):
        _, doc = c.json_run("--lf", *extra, "cases/test_outcomes.lua", "cases/test_fixtures.lua")
        must(set(outcomes(doc)) == want, "--lf %s ran: %s" % (extra, sorted(outcomes(doc))))


def sc_lfnf(c):
    for opt in (["--lfnf", "none"], ["--last-failed-no-failures=none"]):
        p, doc = c.json_run("--lf", *opt, "cases/test_outcomes.lua")
        must(p.returncode == 5 and doc["tests"] == [], f"none: exit {p.returncode} {outcomes(doc)}")
        must("no previously failed tests, deselecting all items." in p.stdout, p.stdout)
    p, doc = c.json_run("--lf", "--lfnf", "all", "cases/test_outcomes.lua")
    must(len(doc["tests"]) == 15 and "not deselecting items." in p.stdout, p.stdout)
    p, doc = c.json_run("--lf", "--lfnf", "none", "cases/test_outcomes.lua")  # failures now
    must(p.returncode == 1 and O + "fails with assertion" in outcomes(doc), str(outcomes(doc)))
    must(c.run("--lfnf", "some").returncode == 4, "--lfnf some accepted")


def sc_passes(c):
    for r in ("P", "A"):
        p = c.run("-r" + r, "cases/test_outcomes.lua")
        must(re.search(r"^=+ PASSES =+$", p.stdout, re.M), "no PASSES section:\n" + p.stdout)
        sec = p.stdout.split(" PASSES ")[1]
        must(re.search(r"^_+ " + re.escape(O + "passes") + r" _+\n-+ Captured output -+\n"
                       r"output of a passing test\n", sec, re.M), sec)
        must("output of a failing test" not in sec, "failure output in PASSES")
        must((("\nPASSED " + O + "passes\n") in p.stdout) == (r == "A"), "-r%s PASSED lines" % r)
    must(" PASSES " not in c.run("cases/test_outcomes.lua").stdout, "PASSES without -rP")
    with open(os.path.join(c.dir, "cases", "test_key.lua"), "w") as f:
        f.write('require "e2e".test("k", function() print("key", os.getenv("ABX_SANDBOX_API_KEY")) end)\n')
    p = c.run("-rP", "cases/test_key.lua", env={"ABX_SANDBOX_API_KEY": SECRET})
    must(SECRET not in p.stdout and "key\t[MASKED]" in p.stdout.split(" PASSES ")[1], p.stdout)


def pty_run(c, args, env):
    import fcntl, pty, struct, termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 70, 0, 0))
    e = {k: v for k, v in c.env(env).items() if v is not None}
    p = subprocess.Popen([c.bin, *args], cwd=c.dir, env=e, stdin=subprocess.DEVNULL,
                         stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(timeout=60)
    text = out.decode("utf-8")  # strict: a cut UTF-8 character raises
    return [l for l in text.replace("\r", "").split("\n") if l.startswith(("FAILED ", "ERROR "))]


def sc_truncate(c):
    with open(os.path.join(c.dir, "cases", "test_wide.lua"), "w") as f:
        f.write('require "e2e".test("w", function() error("' + "é✓" * 40 + '", 0) end)\n')
    args = ["-q", "cases/test_outcomes.lua", "cases/test_wide.lua"]
    for width, env in ((60, {"COLUMNS": "60"}), (70, {"COLUMNS": None})):
        lines = pty_run(c, args, {"CI": None, "BUILD_NUMBER": None, **env})
        must(len(lines) == 6, "summary lines: %r" % lines)
        for l in lines:
            must(len(l) <= width and l.endswith("..."), f"not cut to {width}: {l!r}")
        must(any(len(l) == width for l in lines), f"none exactly {width}: {lines!r}")
    for env in ({"CI": "true"}, {"CI": None, "BUILD_NUMBER": "7"}):
        lines = pty_run(c, args, {"COLUMNS": "60", **env})
        must(any("condition returned a falsy value" in l for l in lines), f"{env} cut: {lines!r}")
    lines = pty_run(c, args + ["-vv"], {"COLUMNS": "60", "CI": None, "BUILD_NUMBER": None})
    must(any(l.endswith("é✓" * 40) for l in lines), f"-vv cut: {lines!r}")


def sc_parallel(c):
    files = ["cases/test_outcomes.lua", "cases/test_fixtures.lua", "cases/test_timeouts.lua"]
    p1, serial = c.json_run(*files, name="serial.json")
    os.unlink(c.log)
    p2, par = c.json_run(*files, "-n", "2", name="par.json")
    must(outcomes(serial) == outcomes(par), "-n 2 differs from serial")
    must(p1.returncode == p2.returncode == 1, "exit codes")
    workers = {t["worker"] for t in par["tests"]}
    must(workers == {0, 1}, "both workers used: %s" % workers)
    setups = c.log_lines().count("session setup")
    must(1 <= setups <= 2, "one session per worker, got %d" % setups)
    must(summary_line(p1.stdout).split(" in ")[0] == summary_line(p2.stdout).split(" in ")[0],
         "summary differs")


def sc_pid1(c):
    """The runner as pid 1 (a container started without --init): its
    workers' parent is pid 1, which is not an orphan's sign here."""
    files = ["cases/test_outcomes.lua", "cases/test_fixtures.lua"]
    _, normal = c.json_run(*files, "-n", "2", name="normal.json")
    pre = ["unshare", "--pid", "--fork", "--mount-proc"]
    if os.geteuid() != 0:
        pre += ["--user", "--map-root-user"]
    p = run(pre + [c.bin, *files, "-n", "2", "--json", "pid1.json"], cwd=c.dir,
            env=c.env(None), timeout=120)
    path = os.path.join(c.dir, "pid1.json")
    must(os.path.exists(path), "no JSON report as pid 1\n" + p.stdout + p.stderr)
    with open(path) as f:
        got = json.load(f)
    must(outcomes(got) == outcomes(normal), "as pid 1 the outcomes differ: %s" % {
        k: v for k, v in outcomes(got).items() if outcomes(normal).get(k) != v})


def sc_shard(c):
    files = ["cases/test_outcomes.lua", "cases/test_fixtures.lua"]
    _, a = c.json_run(*files, "--shard", "1/2", name="a.json")
    _, b = c.json_run(*files, "--shard", "2/2", name="b.json")
    _, full = c.json_run(*files, name="full.json")
    sa, sb = set(outcomes(a)), set(outcomes(b))
    must(not (sa & sb), "shards overlap")
    must(sa | sb == set(outcomes(full)), "shards do not cover the run")
    _, a2 = c.json_run(*files, "--shard", "1/2", name="a2.json")
    must(set(outcomes(a2)) == sa, "shard not deterministic")


def sc_timeouts(c):
    p, doc = c.json_run("cases/test_timeouts.lua")
    got = outcomes(doc)
    for name in ["busy loop", "inside pcall", "inside coroutine", "teardown runs after timeout",
                 "sleep hits deadline", "blocked in os.execute", "blocked in a pipe"]:
        must(got[T + name] == "failed", f"{name}: {got[T + name]}")
        must("Timeout" in by_id(doc)[T + name]["message"], "timeout message")
    must(got[T + "after timeouts still fine"] == "passed", "run continues")
    must("timeout teardown ran" in c.log_lines(), "teardown after timeout")
    must(p.returncode == 1, f"exit {p.returncode}")


def sc_crash(c):
    p, doc = c.json_run("cases/test_crash.lua", "cases/test_fixtures.lua")
    got = outcomes(doc)
    t = by_id(doc)
    must(got["cases/test_crash.lua::before crash"] == "passed", str(got))
    must(got["cases/test_crash.lua::crashes"] == "error", str(got))
    # The rest of the dead worker's batch runs on its replacement, once.
    must(got["cases/test_crash.lua::after crash"] == "passed", str(got))
    must(len(doc["tests"]) == len(got), "a node id reported twice")
    msg = t["cases/test_crash.lua::crashes"]["message"]
    must(msg == "worker crashed: signal 11 (Segmentation fault) while running "
                "cases/test_crash.lua::crashes", msg)
    must(got[F + "last"] == "passed", "run goes on after the crash")
    must(p.returncode == 1, f"exit {p.returncode}")
    # A crash after the last test (session teardown) still fails the run.
    S = "cases/session_crash/test_session_crash.lua::uses doomed"
    p, doc = c.json_run("cases/session_crash/test_session_crash.lua")
    t = by_id(doc)[S]
    must(t["outcome"] == "passed", str(t))
    must("worker crashed: signal 11" in (t.get("teardown_message") or ""), str(t))
    must(p.returncode == 1, f"session crash: exit {p.returncode}")


D = "cases/dist/"


def worker_logs(lines):
    """{worker: [event, ...]} from "gwN event" log lines, in log order."""
    out = {}
    for l in lines:
        w, _, ev = l.partition(" ")
        out.setdefault(w, []).append(ev)
    return out


def check_file_fixtures(logs, fixtures):
    """Per worker and file: each file fixture set up at most once, torn
    down once after that worker's last test of the file, LIFO."""
    for w, evs in logs.items():
        for f, names in fixtures.items():
            calls = [i for i, e in enumerate(evs) if e.startswith("call " + f + ".")]
            setups = [e for e in evs if e.startswith("setup " + f + ".")]
            downs = [i for i, e in enumerate(evs) if e.startswith("teardown " + f + ".")]
            must(len(setups) == len(set(setups)), f"{w}: {f} fixtures set up twice: {evs}")
            must(len(downs) == len(setups), f"{w}: {f} setups {setups} vs teardowns")
            if downs:
                must(calls and min(downs) > max(calls), f"{w}: {f} torn down before its last test: {evs}")
                order = [evs[i].split(" ", 1)[1] for i in downs]
                want = [n for n in reversed(names) if "setup " + n in setups]
                must(order == want, f"{w}: {f} teardown order {order}, want {want}")
        must(evs.count("setup session") <= 1, f"{w}: session set up twice")
        must(evs.count("teardown session") == evs.count("setup session"), f"{w}: session teardown")


def sc_dist(c):
    files = [D + "test_dist_a.lua", D + "test_dist_b.lua"]
    fixtures = {"a": ["a.base", "a.top"], "b": ["b.bfile"]}
    for mode in ("load", "loadfile", "loadgroup"):
        if os.path.exists(c.log):
            os.unlink(c.log)
        p, doc = c.json_run(*files, "-n", "2", "--dist", mode)
        t = by_id(doc)
        must(p.returncode == 0 and len(t) == 22 == len(doc["tests"]), f"{mode}: {p.returncode} {len(t)}")
        lines = c.log_lines()
        for nid in t:  # every test ran exactly once, on the worker reported
            tail = nid.split("::", 1)[1].replace("::", ".")
            f = "a" if "test_dist_a" in nid else "b"
            want = "gw%d call %s.%s" % (t[nid]["worker"], f, tail)
            must(lines.count(want) == 1, f"{mode}: {want!r} x{lines.count(want)}")
        logs = worker_logs(lines)
        check_file_fixtures(logs, fixtures)
        per_file = {}
        for nid, r in t.items():
            per_file.setdefault(nid.split("::")[0], set()).add(r["worker"])
        if mode == "load":  # a file's tests spread over both workers
            must(per_file[files[0]] == {0, 1}, f"load: {per_file}")
        if mode == "loadfile":
            must(all(len(v) == 1 for v in per_file.values()), f"loadfile: {per_file}")
        if mode == "loadgroup":
            grp = {t[files[0] + "::grp::g%d" % i]["worker"] for i in range(1, 5)}
            must(len(grp) == 1, f"describe split over workers {grp}")
            x = {t[files[0] + "::x1"]["worker"], t[files[1] + "::x2"]["worker"]}
            must(len(x) == 1, f"group = 'shared' split over workers {x}")
    must(c.run("--dist", "each").returncode == 4, "--dist each accepted")
    # --ff interleaves files (every last failure first): one worker keeps
    # at most 8 file states open, closing the least recently used one
    # (set up again when needed); every setup is torn down.
    many = []
    for k in range(10):
        many.append(D + "test_many_%d.lua" % k)
        with open(os.path.join(c.dir, many[-1]), "w") as f:
            f.write('local e2e = require "e2e"\n'
                    'e2e.fixture("ff", { scope = "file" }, function(log)\n'
                    '  log("gw0 setup m%d")\n'
                    '  return 1, function() log("gw0 teardown m%d") end\n'
                    'end)\n'
                    'e2e.test("a", function(ff) assert(os.getenv("MANY_FAIL") == nil) end)\n'
                    'e2e.test("b", function(ff) end)\n' % (k, k))
    c.run(*many, env={"MANY_FAIL": "1"})
    os.unlink(c.log)
    p, doc = c.json_run("--ff", *many)
    must(p.returncode == 0 and len(doc["tests"]) == 20, f"--ff many: {p.returncode}")
    must([t["nodeid"].endswith("::a") for t in doc["tests"]] == [True] * 10 + [False] * 10,
         "--ff did not run every last failure first")
    live, peak = set(), 0
    for l in c.log_lines():
        ev, m = l.split()[1:]
        live.add(m) if ev == "setup" else live.discard(m)
        peak = max(peak, len(live))
    must(peak == 8 and not live, f"open file states peaked at {peak}, left {live}")
    # One worker: a file's fixtures are torn down as soon as its last test
    # is handed out, before the next file's tests start (not at the end).
    os.unlink(c.log)
    p = c.run(*files)
    evs = worker_logs(c.log_lines())["gw0"]
    first_b = min(i for i, e in enumerate(evs) if e.startswith(("setup b.", "call b.")))
    last_a = max(i for i, e in enumerate(evs) if e.startswith(("teardown a.", "call a.")))
    must(p.returncode == 0 and last_a < first_b, f"file a torn down after file b began: {evs}")
    # A worker crashing mid-file: only the test it ran fails; its unstarted
    # tests run once on another worker (or its replacement).
    for mode in ("load", "loadfile"):
        os.unlink(c.log)
        p, doc = c.json_run(D + "test_dist_crash.lua", "-n", "2", "--dist", mode)
        got = outcomes(doc)
        must(len(doc["tests"]) == 10 == len(got), f"{mode}: {len(doc['tests'])} results")
        want = {D + "test_dist_crash.lua::c%d" % i: "passed" for i in range(1, 11)}
        want[D + "test_dist_crash.lua::c3"] = "error"
        must(got == want, f"{mode}: {got}")
        calls = [l.split(" ", 1)[1] for l in c.log_lines() if " call " in l]
        must(sorted(calls) == sorted("call crash.c%d" % i for i in range(1, 11)),
             f"{mode}: a test ran twice or never: {calls}")
        must(p.returncode == 1, f"crash exit {p.returncode}")
    # -x with workers: after the failure no test starts anywhere; a test a
    # worker already began finishes and is reported.
    os.unlink(c.log)
    p, doc = c.json_run(D + "test_dist_stop.lua", "-n", "2", "-x")
    got = outcomes(doc)
    must(got.get(D + "test_dist_stop.lua::fails first") == "failed", str(got))
    calls = [l for l in c.log_lines() if " call " in l]
    must(len(calls) == len(doc["tests"]) <= 2, f"-x -n 2 ran {calls}, reported {got}")
    must(p.returncode == 1 and "stopping after 1 failure" in p.stdout, p.stdout)


def sc_watchdog(c):
    t0 = time.time()
    p, doc = c.json_run("cases/test_blocked.lua", "cases/test_fixtures.lua",
                        env={"ABX_E2E_WATCHDOG_EXTRA": "1"})
    t = by_id(doc)["cases/test_blocked.lua::blocked in C"]
    must(t["outcome"] == "error" and "killed by the watchdog" in t["message"], str(t))
    must(time.time() - t0 < 5.5, "watchdog too slow")
    must(outcomes(doc)[F + "last"] == "passed", "run goes on")
    must(p.returncode == 1, f"exit {p.returncode}")


def sc_sigint(c):
    junit = os.path.join(c.dir, "j.xml")
    proc = subprocess.Popen([c.bin, "cases/test_slow.lua", "cases/test_outcomes.lua",
                             "--junitxml", "j.xml", "--json", "j.json"],
                            cwd=c.dir, env=c.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while "long started" not in c.log_lines():
        must(time.time() < deadline, "test never started")
        time.sleep(0.05)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    must(time.time() - t0 < 10, "interrupt took too long")
    must(proc.returncode == 2, f"exit {proc.returncode}\n{out}\n{err}")
    must("interrupted teardown ran" in c.log_lines(), "teardown after SIGINT")
    must("session teardown" in c.log_lines(), "session teardown after SIGINT")
    ET.parse(junit)
    with open(os.path.join(c.dir, "j.json")) as f:
        doc = json.load(f)
    got = outcomes(doc)
    must(got == {"cases/test_slow.lua::quick": "passed"}, str(got))
    must("Interrupted: run stopped by a signal while running cases/test_slow.lua::long" in out,
         "interrupt banner:\n" + out)

    # A teardown stuck past the first signal: the second one exits at once.
    proc = subprocess.Popen([c.bin, "cases/test_stuck_teardown.lua"], cwd=c.dir, env=c.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while "waits started" not in c.log_lines():
        must(time.time() < deadline, "stuck test never started")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    while "stubborn teardown started" not in c.log_lines():
        must(time.time() < deadline, "teardown never started after SIGTERM")
        time.sleep(0.05)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    must(time.time() - t0 < 5, "second signal did not exit at once")
    must(proc.returncode == 2, f"second signal: exit {proc.returncode}")
    time.sleep(0.2)
    ps = subprocess.run(["pgrep", "-f", "test_stuck_teardown"], capture_output=True, text=True)
    must(ps.stdout.strip() == "", "workers left behind: " + ps.stdout)


def sc_syntax(c):
    # pytest's default: a file that does not load stops the run before any
    # test, reported as the error alone, exit 2.
    p, doc = c.json_run("cases/test_syntax_error.lua", "cases/test_fixtures.lua")
    got = outcomes(doc)
    must(got == {"cases/test_syntax_error.lua": "error"}, str(got))
    t = by_id(doc)["cases/test_syntax_error.lua"]
    must(t["when"] == "collect" and "test_syntax_error.lua:" in t["message"], str(t))
    must(p.returncode == 2, f"exit {p.returncode}")
    must("ERROR collecting cases/test_syntax_error.lua" in p.stdout, "collect error section")
    must(re.search(r"^!+ Interrupted: 1 error during collection !+$", p.stdout, re.M), p.stdout)
    must(summary_line(p.stdout).startswith("1 error in"), summary_line(p.stdout))
    p = c.run("--collect-only", "cases/test_syntax_error.lua", "cases/test_fixtures.lua")
    must(p.returncode == 2 and "Interrupted: 1 error during collection" in p.stdout, p.stdout)
    # --continue-on-collection-errors: the other files still run.
    p, doc = c.json_run("--continue-on-collection-errors", "cases/test_syntax_error.lua",
                        "cases/test_fixtures.lua")
    got = outcomes(doc)
    must(got.get("cases/test_syntax_error.lua") == "error", str(got))
    must(got[F + "last"] == "passed", "other files still run")
    must(p.returncode == 1 and "during collection" not in p.stdout, f"exit {p.returncode}")
    # A crash while loading a file (its top-level code) is that file's
    # collection error; the files after it are still collected.
    p, doc = c.json_run("--continue-on-collection-errors", "cases/test_top_crash.lua",
                        "cases/test_fixtures.lua")
    got = outcomes(doc)
    t = by_id(doc).get("cases/test_top_crash.lua", {})
    must(t.get("outcome") == "error" and "collector crashed: signal 11" in t.get("message", ""), str(t))
    must(got[F + "last"] == "passed", "files after the crash still run")
    must(p.returncode == 1, f"exit {p.returncode}")


def sc_junit(c):
    p = c.run("cases/test_outcomes.lua", "cases/test_fixtures.lua", "--junitxml", "out/j.xml")
    root = ET.parse(os.path.join(c.dir, "out/j.xml")).getroot()
    must(root.tag == "testsuites", root.tag)
    suite = root.find("testsuite")
    must(suite is not None, "no testsuite")
    for a in ["name", "errors", "failures", "skipped", "tests", "time", "timestamp", "hostname"]:
        must(a in suite.attrib, "testsuite lacks " + a)
    cases = suite.findall("testcase")
    must(int(suite.get("failures")) == 4, "failures=%s" % suite.get("failures"))
    must(int(suite.get("errors")) == 5, "errors=%s" % suite.get("errors"))
    must(int(suite.get("tests")) == 23, "tests=%s" % suite.get("tests"))
    names = {(tc.get("classname"), tc.get("name")) for tc in cases}
    must(("cases.test_outcomes.files.nested", "write works") in names, str(sorted(names))[:300])
    xp = [tc for tc in cases if tc.get("name") == "known issue passes"][0]
    must(xp.find("failure").get("message").startswith("[XPASS(strict)]"), "strict xpass failure")
    xf = [tc for tc in cases if tc.get("name") == "known issue fails"][0]
    must(xf.find("skipped").get("type") == "pytest.xfail", "xfail shape")
    must(p.returncode == 1, f"exit {p.returncode}")


def leak_forms():
    """The two secrets raw and in base64 (both alphabets, with and without
    padding)."""
    return {f for s in (SECRET, RUNTIME_SECRET)
            for f, kind in secret_forms(s).items() if kind in ("raw", "base64")}


def sc_secret(c):
    env = {"ABX_SANDBOX_API_KEY": SECRET}
    outputs = []
    for extra in ([], ["-s"], ["-n", "2", "-rA", "-v"]):
        p = c.run("cases/test_secret.lua", "cases/test_outcomes.lua", *extra,
                  "--junitxml", "s.xml", "--json", "s.json", "--evidence", "secret-check",
                  env=env)
        must(p.returncode == 1, f"exit {p.returncode}: {p.stderr}")
        outputs += [p.stdout, p.stderr]
        must("[MASKED]" in p.stdout, "nothing was masked?\n" + p.stdout[:2000])
        must("shell:[MASKED]" in p.stdout + p.stderr, "stray output of a child process not masked")
        ET.parse(os.path.join(c.dir, "s.xml"))
    files = []
    for root, _, names in os.walk(c.dir):
        for n in names:
            if n.endswith((".xml", ".json", ".md", ".log")) and "cases" not in root:
                files.append(os.path.join(root, n))
    must(any(f.endswith("-secret-check.md") for f in files), "evidence missing: %s" % files)
    for f in files:
        if f == c.log:
            continue
        with open(f, errors="replace") as fh:
            outputs.append(fh.read())
    for form in leak_forms():
        for i, text in enumerate(outputs):
            must(form not in text, f"secret form {form[:8]}... leaked in output #{i}")


def sc_exec(c):
    script = os.path.join(c.dir, "script.lua")
    with open(script, "w") as f:
        f.write('local e2e = require "e2e"\nprint("args", ...)\nprint("key", os.getenv("ABX_SANDBOX_API_KEY"))\n'
                'e2e.expect(1):eq(1)\nif arg[1] == "fail" then error("boom") end\nos.exit(tonumber(arg[2] or 0))\n')
    p = c.run("exec", "script.lua", "ok", "3", env={"ABX_SANDBOX_API_KEY": SECRET})
    must(p.returncode == 3, f"exit {p.returncode} {p.stderr}")
    must("args\tok\t3" in p.stdout, p.stdout)
    must(SECRET not in p.stdout and "key\t[MASKED]" in p.stdout, "exec output masked")
    p = c.run("exec", "script.lua", "fail")
    must(p.returncode == 1 and "boom" in p.stderr, f"{p.returncode} {p.stderr}")


def sc_cli(c):
    p = c.run("--help")
    must(p.returncode == 0, "help exit")
    for opt in ["-k", "-m", "--lf", "--ff", "--shard", "--collect-only", "--list", "-x", "--maxfail",
                "--timeout", "-n", "-s", "-v", "-q", "-r", "--durations", "--junitxml", "--json",
                "--evidence", "--version", "exec", "--help", "--color", "--lfnf",
                "--last-failed-no-failures", "--reruns", "--reruns-delay", "--fail-on-flaky"]:
        must(re.search(r"(^|[\s,])" + re.escape(opt) + r"([\s,=]|$)", p.stdout, re.M),
             "help lacks " + opt)
    must("P passed with" in p.stdout and "BUILD_NUMBER" in p.stdout, "help lacks -r P / cutting")
    p = c.run("--version")
    must(p.returncode == 0 and p.stdout.startswith("abx-e2e "), p.stdout)
    p, doc = c.json_run("cases/test_outcomes.lua", "--durations", "3", "-q")
    must("slowest 3 durations" in p.stdout, p.stdout)
    os.makedirs(os.path.join(c.dir, "tests-lua"))
    shutil.copy(os.path.join(c.dir, "cases", "test_crash.lua"), os.path.join(c.dir, "tests-lua", "test_x.lua"))
    with open(os.path.join(c.dir, "tests-lua", "test_x.lua"), "w") as f:
        f.write('local e2e = require "e2e"\ne2e.test("default discovery", function() end)\n')
    p, doc = c.json_run()
    must(outcomes(doc) == {"tests-lua/test_x.lua::default discovery": "passed"}, str(outcomes(doc)))
    must(p.returncode == 0, f"exit {p.returncode}")
    shutil.rmtree(os.path.join(c.dir, "tests-lua"))
    os.makedirs(os.path.join(c.dir, "tests-lua"))
    p = c.run()
    must(p.returncode == 5, f"no tests: exit {p.returncode}")


def sc_sandbox_cli(c):
    """The sandbox options without a platform: --help names them, cleanup
    refuses bad usage (exit 4), --local fails clearly when abx-local is
    missing, and bad knob values are usage errors naming the variable."""
    p = c.run("--help")
    for opt in ["--local", "--profile", "--keep-failed", "--trace-http", "cleanup", "E2E_SANDBOX_TTL",
                "E2E_SERVER_TEMPLATE", "E2E_SERVER_PORT", "E2E_SHORT_TTL"]:
        must(re.search(r"(^|[\s,(])" + re.escape(opt) + r"([\s,=)]|$)", p.stdout, re.M),
             "help lacks " + opt)
    for args, want in [(["cleanup", "--bogus"], "unrecognized option '--bogus'"),
                       (["cleanup", "--older-than", "-3"], "--older-than"),
                       (["cleanup", "--run-id"], "--run-id expects an ID"),
                       (["cleanup", "--run-id", "a b"], "not a run id"),
                       (["cleanup", "--all-tagged", "--run-id", "x"], "exclude each other"),
                       (["cleanup"], "ABX_SANDBOX_API_KEY")]:
        p = c.run(*args)
        must(p.returncode == 4, f"{args}: exit {p.returncode} (want 4)")
        must(want in p.stderr, f"{args}: stderr lacks {want!r}: {p.stderr}")
    for args, want in [(["--local", "--profile", "aws", "cases/test_outcomes.lua"],
                        "--profile expects e2b or fc, got 'aws'"),
                       (["--profile", "fc", "cases/test_outcomes.lua"], "needs --local"),
                       (["--local", "--profile"], "--profile expects e2b or fc")]:
        p = c.run(*args)
        must(p.returncode == 4 and want in p.stderr, f"{args}: exit {p.returncode}, {p.stderr!r}")
    # The profile reaches abx-local as ABX_LOCAL_PROFILE.
    fake = os.path.join(c.dir, "fake-profile.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"fake abx-local: profile=$ABX_LOCAL_PROFILE\" >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    p = c.run("--local", "--profile=fc", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": fake})
    must(p.returncode == 3 and "profile=fc" in p.stderr, "--profile=fc reaches abx-local: " + p.stderr)
    p = c.run("cleanup", "--help")
    must(p.returncode == 0 and "--yes" in p.stdout and "--older-than" in p.stdout,
         "cleanup --help")
    p = c.run("--local", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": "/nonexistent"})
    must(p.returncode == 3, f"--local without abx-local: exit {p.returncode} (want 3)")
    must("ABX_LOCAL_BIN=/nonexistent is not an executable file" in p.stderr,
         "--local names the missing binary: " + p.stderr)
    fake = os.path.join(c.dir, "fake-local.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'fake abx-local: cannot bind' >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    p = c.run("--local", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": fake})
    must(p.returncode == 3 and "before it was ready" in p.stderr and
         "cannot bind" in p.stderr, "--local shows why abx-local failed: " + p.stderr)
    for var, val in [("E2E_SANDBOX_TTL", "ten"), ("E2E_SERVER_PORT", "70000"),
                     ("E2E_SERVER_TEMPLATE", "two words"), ("E2E_RUN_ID", "../up"),
                     ("E2E_SHORT_TTL", "ten"), ("E2E_SHORT_TTL", "0"),
                     ("E2E_SHORT_TTL", "3601")]:
        p = c.run("cases/test_outcomes.lua", env={var: val})
        must(p.returncode == 4 and var in p.stderr, f"{var}={val}: exit {p.returncode}, "
             f"stderr {p.stderr!r}")
    # The range's ends are accepted (1..3600).
    for val in ["1", "3600"]:
        p = c.run("cases/test_outcomes.lua", env={"E2E_SHORT_TTL": val})
        must(p.returncode != 4 and "E2E_SHORT_TTL" not in p.stderr,
             f"E2E_SHORT_TTL={val}: exit {p.returncode}, stderr {p.stderr!r}")
    p = c.run("cases/test_outcomes.lua::needs platform",
              env={"E2B_API_KEY": SECRET, "ABX_SANDBOX_BASE_URL": "ftp://nowhere"})
    must(p.returncode == 4 and "ftp://nowhere" in p.stderr and "http" in p.stderr,
         f"a bad base URL is a usage error: exit {p.returncode}, {p.stderr!r}")
    must(SECRET not in p.stdout + p.stderr, "the key is never printed")


def sc_subcommands(c):
    """Every sub-command of the one option table alike: its options before
    or after the word, its own usage line and --help, exit 4 for a usage
    error naming the option; exec's options before the script, the rest
    the script's."""
    with open(os.path.join(c.dir, "args.lua"), "w") as f:
        f.write('print("args", ...)\n')
    fake = os.path.join(c.dir, "fake-profile.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"fake abx-local: profile=$ABX_LOCAL_PROFILE\" >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    for args in (["exec", "--local", "--profile", "fc", "args.lua"],
                 ["--local", "exec", "--profile=fc", "args.lua"],
                 ["--local", "--profile", "fc", "exec", "args.lua"]):
        p = c.run(*args, env={"ABX_LOCAL_BIN": fake})
        must(p.returncode == 3 and "profile=fc" in p.stderr and "cannot open" not in p.stderr,
             f"{args}: the options reach abx-local (exit {p.returncode}, {p.stderr!r})")
    # One default for every --local: fc (the cloud the product ships
    # against); ABX_LOCAL_PROFILE and --profile choose the other.
    for args, extra, want in ((["--local", "cases/test_outcomes.lua"], {}, "fc"),
                              (["exec", "--local", "args.lua"], {}, "fc"),
                              (["--local", "cases/test_outcomes.lua"],
                               {"ABX_LOCAL_PROFILE": "e2b"}, "e2b"),
                              (["--local", "--profile", "e2b", "cases/test_outcomes.lua"],
                               {"ABX_LOCAL_PROFILE": "fc"}, "e2b")):
        p = c.run(*args, env=dict(extra, ABX_LOCAL_BIN=fake))
        must(("profile=%s\n" % want) in p.stderr, f"{args} {extra}: profile {want} "
             f"reaches abx-local: {p.stderr!r}")
    # abx-local starts only when a test or a script will run: a wrong
    # path, a script that does not compile, a selection of nothing or a
    # listing never start it.
    with open(os.path.join(c.dir, "broken.lua"), "w") as f:
        f.write("print(\n")
    for args, code in ((["--local", "no-such-file.lua"], 4),
                       (["--local", "-k", "zzz_no_test", "cases/test_outcomes.lua"], 5),
                       (["--local", "--collect-only", "cases/test_outcomes.lua"], 0),
                       (["exec", "--local", "broken.lua"], 4),
                       (["exec", "--local", "no-such-script.lua"], 4)):
        p = c.run(*args, env={"ABX_LOCAL_BIN": fake})
        must(p.returncode == code and "fake abx-local" not in p.stderr,
             f"{args}: exit {p.returncode} (want {code}) without starting abx-local: "
             f"{p.stderr!r}")
    p = c.run("exec", "args.lua", "--bogus", "-k", "x")
    must(p.returncode == 0 and "args\t--bogus\t-k\tx" in p.stdout,
         f"after the script, its own arguments: {p.returncode} {p.stdout!r} {p.stderr!r}")
    p = c.run("exec", "--", "args.lua", "1")
    must(p.returncode == 0 and "args\t1" in p.stdout, f"exec -- SCRIPT: {p.stderr!r}")
    for args, usage, want in (
            (["exec", "--bogus", "args.lua"], "exec", "unrecognized option '--bogus'"),
            (["exec"], "exec", "exec needs a SCRIPT.lua"),
            (["exec", "--local", "--profile", "aws", "args.lua"], "exec",
             "--profile expects e2b or fc, got 'aws'"),
            (["repl", "--profile", "fc"], "repl", "--profile fc: needs --local"),
            (["repl", "extra"], "repl", "unexpected argument 'extra'"),
            (["doctor", "--bogus"], "doctor", "unrecognized option '--bogus'"),
            (["doctor", "--keep-failed"], "doctor", "unrecognized option"),
            (["cleanup", "--local"], "cleanup", "unrecognized option '--local'"),
            (["cleanup", "extra"], "cleanup", "unexpected argument 'extra'"),
            (["cleanup", "--run-id", "x", "--all-tagged"], "cleanup",
             "--run-id and --all-tagged exclude each other"),
            (["--bogus"], "[run]", "unrecognized option '--bogus'"),
            (["cases/test_outcomes.lua", "--maxfail", "x"], "[run]",
             "--maxfail expects a number, got 'x'"),
            (["--junitxml="], "[run]", "--junitxml expects a FILE"),
            (["--timeout"], "[run]", "--timeout expects seconds"),
            (["--local", "cleanup"], "cleanup", "unrecognized option '--local'"),
            (["--local", "merge", "a.json"], "merge", "unrecognized option '--local'"),
            (["merge"], "merge", "no SHARD.json given"),
            (["merge", "a.json", "--json"], "merge", "--json expects a FILE"),
            (["merge", "--bogus", "a.json"], "merge", "unrecognized option '--bogus'"),
            (["diff-records", "a"], "diff-records", "expects two folders of traces"),
            (["diff-records", "a", "b", "c"], "diff-records",
             "expects two folders of traces (abx-e2e --record DIR), got 3"),
            (["diff-records", "--html", "x", "a", "b"], "diff-records",
             "unrecognized option '--html'"),
            (["diff-records", "no-such-a", "no-such-b"], "diff-records",
             "cannot read the folder no-such-a")):
        p = c.run(*args)
        must(p.returncode == 4, f"{args}: exit {p.returncode} (want 4): {p.stderr!r}")
        first = (p.stderr.splitlines() or [""])[0]
        must(first.startswith("usage: abx-e2e " + usage),
             f"{args}: the usage line is {usage}'s: {first!r}")
        who = "abx-e2e" + ("" if usage == "[run]" else " " + usage)
        must((who + ": error: " + want) in p.stderr, f"{args}: names {want!r}: {p.stderr!r}")
    for sub, opts in (("exec", ["--local", "--profile", "--trace-http", "-h"]),
                      ("repl", ["--local", "--profile", "--trace-http", "-h"]),
                      ("doctor", ["--local", "--profile", "--json", "--trace-http", "-h"]),
                      ("merge", ["--junitxml", "--json", "--html", "-q", "-h"]),
                      ("diff-records", ["--json", "-q", "-h"])):
        p = c.run(sub, "--help")
        must(p.returncode == 0 and p.stdout.startswith("usage: abx-e2e " + sub),
             f"{sub} --help: {p.returncode} {p.stdout[:80]!r}")
        listed = re.findall(r"^  (-[-\w]+)", p.stdout, re.M)
        must(sorted(listed) == sorted(opts), f"{sub} --help lists {listed}, want {opts}")
    # Each sub-command's --help and its parser agree (both are the one
    # table): every option listed is taken by that sub-command (with a
    # sample of the value its help names, then --help: nothing runs), and
    # the run command's options no other sub-command lists are refused there.
    samples = {"N": "100", "S": "1", "MB": "1", "EXPR": "x", "FILE": "f", "DIR": "d",
               "TOPIC": "t", "K/N": "1/2", "N|auto": "1", "CHARS": "fE", "all|none": "all",
               "e2b|fc": "fc", "yes|no|auto": "no", "ID": "run-1"}
    modes = {"--dist": "load", "--trace": "on"}
    listed = {}
    for sub in ("run", "exec", "repl", "doctor", "cleanup", "merge", "diff-records"):
        head = [] if sub == "run" else [sub]
        p = c.run(*head, "--help")
        opts = {}
        for m in re.finditer(r"^  ((?:-[-\w=]+(?:, )?)+)(?: (\S+))?(?:  |\n)", p.stdout, re.M):
            for name in m.group(1).split(", "):
                opts[name] = m.group(2)
        must(len(opts) >= (40 if sub == "run" else 3), f"{sub} --help lists {sorted(opts)}")
        listed[sub] = opts
        for name, meta in opts.items():
            if name in ("-h", "--help", "-V", "--version"):
                continue
            value = [] if meta is None else [modes.get(name) or samples.get(meta, "x")]
            p = c.run(*head, name, *value, "--help")
            must(p.returncode == 0 and "usage: abx-e2e" in p.stdout,
                 f"{sub}: {name} {value} is taken (exit {p.returncode}: {p.stderr!r})")
    for sub in ("exec", "repl", "doctor", "cleanup", "merge", "diff-records"):
        for name in sorted(set(listed["run"]) - set(listed[sub]) - {"-V", "--version"}):
            p = c.run(sub, name, "x", "--help")
            must(p.returncode == 4 and "unrecognized option" in p.stderr,
                 f"{sub}: {name} (not in its --help) is refused: {p.returncode} {p.stderr!r}")
    # The variables: the run's --help lists each with its default, the
    # doctor reports the same set, and a bad value is a usage error
    # naming the variable and where it came from.
    p = c.run("--help")
    env = p.stdout.split("\nenvironment", 1)[-1]
    helpvars = re.findall(r"^  ([A-Z][A-Z0-9_]+)", env, re.M)
    must(len(helpvars) >= 12 and "E2E_SERVER_PORT" in helpvars, f"--help variables: {helpvars}")
    blocks = re.split(r"^  (?=[A-Z])", env.split("\n\n")[0], flags=re.M)[1:]
    defaults = {}
    for b in blocks:
        m = re.search(r"\(default ([^)]+)\)", b)
        if m:
            defaults[b.split()[0]] = m.group(1)
    must(defaults.get("E2E_SERVER_PORT") == "8080" and defaults.get("E2E_SHORT_TTL") == "20",
         f"--help defaults: {defaults}")
    p = c.run("doctor", "--json")
    doc = json.loads(p.stdout)
    must([k for k in doc["config"] if k != "runId"] == helpvars,
         f"doctor's variables {list(doc['config'])} are --help's {helpvars}")
    for var, default in defaults.items():
        if doc["config"][var]["source"] != "default" or doc["config"][var]["value"] != default:
            must(False, f"doctor: {var} {doc['config'][var]} (--help: default {default})")
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("E2E_SHORT_TTL=0\n")
    p = c.run("cases/test_outcomes.lua")
    must(p.returncode == 4 and "abx-e2e: error: E2E_SHORT_TTL expects seconds (1-3600), got '0' "
         "(from .env)" in p.stderr, f"a bad .env value: {p.returncode} {p.stderr!r}")
    os.unlink(os.path.join(c.dir, ".env"))
    # Options after the paths, as pytest takes them; -- ends them.
    p, doc = c.json_run("cases/test_outcomes.lua", "-k", "passes", "-q")
    must(outcomes(doc) and all("passes" in k for k in outcomes(doc)),
         f"options after a path: {outcomes(doc)} {p.stderr!r}")
    p = c.run("--", "-q")
    must(p.returncode == 4 and "-q" in p.stderr and "unrecognized" not in p.stderr,
         f"after --, -q is a path: {p.returncode} {p.stderr!r}")


SCENARIOS = {name[3:]: fn for name, fn in globals().items() if name.startswith("sc_")}


def main(scenarios=None, ctx=None):
    """Runs one scenario by name, or "all"; shared by hostile.py. A failed
    scenario keeps its directory."""
    scenarios = SCENARIOS if scenarios is None else scenarios
    ctx = Ctx if ctx is None else ctx
    a = cli(scenarios, extra_names=["all"])
    names = sorted(scenarios) if a.scenario == "all" else [a.scenario]

    def one(name):
        c = ctx(a.bin)
        try:
            scenarios[name](c)
        except BaseException:
            print(f"     (kept {c.dir})")
            raise
        c.cleanup()
    return run_scenarios(names, one, (Fail, AssertionError, subprocess.TimeoutExpired,
                                      ET.ParseError, KeyError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
