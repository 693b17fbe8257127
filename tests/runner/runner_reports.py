"""harness.py's scenarios on what the runner writes: -rP/-rA sections,
--reruns (FLAKY), JUnit, masked secrets, lines cut to the terminal."""

import os
import re
import subprocess
import xml.etree.ElementTree as ET

from runner_common import SECRET, RUNTIME_SECRET, expect_outcomes, O  # first: puts tests/lib on sys.path
from abxtest import by_id, must, outcomes, secret_forms, summary_line


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
