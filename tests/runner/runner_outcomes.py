"""harness.py's scenarios on what a test comes to: outcomes per node id,
fixtures and their order, skips and capabilities, known issues, the DSL
(eventually, raises, parametrize), collection errors."""

import os
import re
import xml.etree.ElementTree as ET

from runner_common import SECRET, expect_outcomes, F, O  # first: puts tests/lib on sys.path
from abxtest import by_id, must, outcomes, summary_line


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
