#!/usr/bin/env python3
"""runner.ci_output: abx-e2e under GitHub Actions (host/report/ci_out.c).

Runs the cases of cases/ci/ with GITHUB_ACTIONS=true and checks:
  - one workflow command per failure, error, teardown error (::error) and
    flaky test (::warning): exact file, line (found by the "@ci:" markers
    of the case file: the innermost frame in the test's own file), title,
    and GitHub's escaping, which must round-trip to the JSON report's text;
  - the closing count line is still the last line of stdout;
  - a planted secret is in no output, raw or in its escaped forms (one in a
    test's message, one in a file path the runner reads raw);
  - the job summary appended to $GITHUB_STEP_SUMMARY: earlier content
    kept, counts equal to the JSON report's, failures with their
    file:line and text in a fence the text cannot close, flaky and slowest
    tests;
  - --no-ci-annotations, and GITHUB_ACTIONS unset: no annotation, no
    summary; an unwritable summary path: one warning, same exit code.

usage: ci_output.py --bin PATH/abx-e2e"""
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import (ALL_ABX, check, check_no_sanitizer, cli, done, eq, free_port,  # noqa: E402
                     load_json, read_text, remove, run, scratch, scrubbed_env,
                     secret_forms, summary_line, write_file)

CASE = "cases/ci/test_ci.lua"
ID = CASE + "::"
# ':' ',' '%' are escaped by GitHub; '=' '@' are not, but percent-encoding
# changes them: a secret escaped before masking would escape the masker.
SECRET = "sk:live=9f8e,7d6c@5b4a%z"
KEY = "key:ci=0d1e,2f3a@4b5c%y"   # the API key, in a file path below
EARLIER = "# an earlier step's summary\n\nkept as it was.\n"


def gh_data(s):
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_prop(s):
    return gh_data(s).replace(":", "%3A").replace(",", "%2C")


def gh_unescape(s):
    """What GitHub's runner makes of an escaped value (one pass)."""
    table = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}
    return re.sub(r"%(25|0D|0A|3A|2C)", lambda m: table[m.group(0)], s)


def annotations(stdout):
    """[(level, {property: value}, data)] of the workflow commands in stdout
    (values still escaped)."""
    out = []
    for line in stdout.splitlines():
        m = re.match(r"^::(error|warning)(?: ([^:]*))?::(.*)$", line)
        if not m:
            continue
        props = {}
        for prop in (m.group(2) or "").split(","):
            k, _, v = prop.partition("=")
            props[k] = v if k not in props else None  # None: given twice
        out.append((m.group(1), props, m.group(3)))
    return out


def marker_line(path, name):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if "@ci:" + name in line:
                return n
    raise SystemExit("no @ci:%s marker in %s" % (name, path))


def leak_forms(secret):
    forms = dict(secret_forms(secret))
    forms[gh_data(secret)] = "GitHub data escaping"
    forms[gh_prop(secret)] = "GitHub property escaping"
    forms[secret.replace("|", "\\|")] = "Markdown cell escaping"
    return forms


def check_no_leak(secret, texts, what):
    for name, text in texts.items():
        bad = [k for f, k in leak_forms(secret).items() if f in text]
        check(not bad, "%s: the secret is not in %s (%s)" % (what, name, ", ".join(bad) or "-"))


def last_line(stdout):
    lines = stdout.rstrip("\n").splitlines()
    return lines[-1] if lines else ""


def expected_text(msg, lr):
    """ci_out.c's text of a failure: the traceback (which starts with the
    message), or the message then the traceback."""
    if lr is not None and (msg is None or lr.startswith(msg)):
        return lr
    return (msg or "(no message)") + ("\n" + lr if lr else "")


def fenced_after(md, anchor):
    """The content of the first fenced block after anchor in md, and its
    fence: a line of 3+ backticks opens it, the same line closes it."""
    i = md.find(anchor)
    if i < 0:
        return None, None
    lines = md[i:].split("\n")
    for k, line in enumerate(lines):
        m = re.match(r"^(`{3,})text$", line)
        if m:
            fence = m.group(1)
            end = lines.index(fence, k + 1) if fence in lines[k + 1:] else None
            if end is None:
                return None, fence
            return "\n".join(lines[k + 1:end]), fence
    return None, None


class Run:
    def __init__(self, binary):
        self.bin = binary
        self.dir = scratch("abx-ci-out-")
        shutil.copytree(os.path.join(HERE, "cases", "ci"), os.path.join(self.dir, "cases", "ci"))
        self.summary = os.path.join(self.dir, "step_summary.md")
        self.case = os.path.join(self.dir, CASE)

    def env(self, **extra):
        env = scrubbed_env(ALL_ABX + ("GITHUB_", "RUNNER_"), ABX_E2E_SELFTEST="1",
                           NO_COLOR="1", CI="true", GITHUB_ACTIONS="true",
                           GITHUB_STEP_SUMMARY=self.summary, CI_CASE_SECRET=SECRET)
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def __call__(self, *args, **env):
        for name in ("flaky.count", "r.json"):
            if os.path.exists(os.path.join(self.dir, name)):
                os.unlink(os.path.join(self.dir, name))
        p = run([self.bin, *args], cwd=self.dir, env=self.env(**env))
        check_no_sanitizer(p.stdout + p.stderr, "abx-e2e " + " ".join(args))
        return p


def main_run(r):
    write_file(r.summary, EARLIER)
    p = r(CASE, "--reruns", "1", "--json", "r.json", "-q", "-rA")
    doc = load_json(os.path.join(r.dir, "r.json")) or {"tests": [], "summary": {}}
    tests = {t["nodeid"]: t for t in doc["tests"]}
    eq(p.returncode, 1, "exit code with failures")
    close = summary_line(p.stdout)
    eq(last_line(p.stdout).strip("= "), close, "the closing count line is the last line")
    eq(p.stderr, "", "nothing on stderr")

    ln = {k: marker_line(r.case, k) for k in ("same-file", "other-file", "fixture",
                                                "teardown", "odd", "flaky")}
    want = [  # level, line, title, the record and its fields of the text
        ("error", ln["other-file"], "failed: " + ID + "helper in another file", "main"),
        ("error", ln["same-file"], "failed: " + ID + "helper in this file", "main"),
        ("error", ln["fixture"], "error: " + ID + "fixture error", "main"),
        ("error", ln["teardown"], "error at teardown: " + ID + "teardown error", "teardown"),
        ("error", ln["odd"], "failed: " + ID + "odd, name: 100%", "main"),
        ("warning", ln["flaky"], "flaky: " + ID + "flaky", "flaky"),
    ]
    got = annotations(p.stdout)
    eq(len(got), len(want), "one annotation per failure, error, teardown error, flaky test")
    raw = [l for l in p.stdout.splitlines() if l.startswith("::")]
    for (level, line, title, kind), (_, props, data), rawline in zip(want, got, raw):
        nid = title.split(": ", 1)[1]
        prefix = "::%s file=%s,line=%d,title=%s::" % (level, gh_prop(CASE), line, gh_prop(title))
        check(rawline.startswith(prefix), "exact annotation of %s: %r starts with %r"
              % (title, rawline[:len(prefix) + 20], prefix))
        eq(gh_unescape(props.get("title", "")), title, "title round-trips")
        t = tests.get(nid, {})
        if kind == "main":
            text = expected_text(t.get("message"), t.get("longrepr"))
        elif kind == "teardown":
            text = expected_text(t.get("teardown_message"), t.get("teardown_longrepr"))
        else:
            a = (t.get("attempts") or [{}])[0]
            text = ("passed after 1 rerun; it failed first with:\n" +
                    expected_text(a.get("message"), a.get("longrepr")))
        eq(gh_unescape(data), text, "message of %s round-trips to the JSON report's" % title)
    odd = [d for _, pr, d in got if "odd" in pr.get("title", "")]
    check(odd and "%25%0D%0Asecond: line, with: [MASKED]" in odd[0],
          "the odd message escaped and masked: %r" % (odd[0][:200] if odd else None))
    lines = p.stdout.splitlines()
    last_note = max((i for i, l in enumerate(lines) if l.startswith("::")), default=-1)
    check(0 <= last_note < len(lines) - 1, "annotations come before the closing line")

    with open(r.summary, encoding="utf-8", errors="replace", newline="") as f:
        md = f.read()  # as written: a CR in a message stays one
    check(md.startswith(EARLIER), "the summary is appended: earlier content kept")
    md = md[len(EARLIER):]
    check(md.startswith("## abx-e2e: " + close + "\n"),
          "summary heading is the closing line: %r" % md[:100])
    counts = dict(re.findall(r"^\| (\w+) \| (\d+) \|$", md, re.M))
    for k in ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "flaky",
              "deselected", "total"):
        eq(int(counts.get(k, -1)), doc["summary"].get(k), "summary count %s = JSON's" % k)
    for level, line, title, kind in want[:-1]:
        what, nid = title.split(": ", 1)
        head = "#### %s: `%s`\n\nat `%s:%d`\n" % (what, nid, CASE, line)
        check(head in md, "summary lists %s at its line" % title)
    t = tests.get(ID + "odd, name: 100%", {})
    body, fence = fenced_after(md, "#### failed: `%sodd, name: 100%%`" % ID)
    eq(body, expected_text(t.get("message"), t.get("longrepr")),
       "a message holding ``` stays whole in its fence")
    check(fence and len(fence) > 3, "the fence is longer than the ``` in the text: %r" % fence)
    check(re.search(r"^\| `%sflaky` \| 1 \| `[^`]+` \|$" % re.escape(ID), md, re.M),
          "summary lists the flaky test with its first failure")
    slow = md[md.find("### Slowest tests"):]
    rows = re.findall(r"^\| (`+) ?(.*?) ?\1 \| (\d+\.\d\d)s \| (\w+) \|$", slow, re.M)
    eq(sorted(n.replace("\\|", "|") for _, n, _, _ in rows), sorted(tests),
       "slowest tests: every test (fewer than 10), node ids escaped")
    durs = [float(d) for _, _, d, _ in rows]
    eq(durs, sorted(durs, reverse=True), "slowest tests: longest first")
    check_no_leak(SECRET, {"stdout": p.stdout, "stderr": p.stderr, "summary": md}, "message")
    check(SECRET not in read_text(os.path.join(r.dir, "r.json"), ""), "JSON report masked too")
    return p.returncode


def plain_run(r):
    """Not quiet, no report: the closing line is the last line still."""
    os.unlink(r.summary)
    p = r("cases/ci")
    eq(last_line(p.stdout).strip("= "), summary_line(p.stdout), "closing line last (default -r)")
    check(any(l.startswith("::error ") for l in p.stdout.splitlines()), "annotations printed")
    check(os.path.exists(r.summary), "summary file created when missing")


def off_runs(r):
    for what, args, env in (("--no-ci-annotations", ("--no-ci-annotations",), {}),
                            ("GITHUB_ACTIONS unset", (), {"GITHUB_ACTIONS": None}),
                            ("GITHUB_ACTIONS=false", (), {"GITHUB_ACTIONS": "false"})):
        if os.path.exists(r.summary):
            os.unlink(r.summary)
        p = r("cases/ci", *args, **env)
        eq(p.returncode, 1, what + ": exit code")
        check(not any(l.startswith("::") for l in p.stdout.splitlines()),
              what + ": no workflow command")
        check(not os.path.exists(r.summary), what + ": no summary written")


def unwritable_run(r, code):
    p = r("cases/ci", "--reruns", "1", GITHUB_STEP_SUMMARY=r.dir)  # a directory
    eq(p.returncode, code, "unwritable summary: same exit code")
    warn = [l for l in p.stderr.splitlines() if "cannot append the job summary" in l]
    eq(len(warn), 1, "unwritable summary: one warning on stderr (%r)" % p.stderr[-300:])
    check(r.dir in (warn or [""])[0], "the warning names the path")
    check(any(l.startswith("::error ") for l in p.stdout.splitlines()), "annotations still printed")


def raw_path_run(r):
    """A secret the runner reads raw: the API key in a test file's path
    (collection errors carry the runner's own path). Its annotation's
    file= and title= must be masked before they are escaped."""
    bad = os.path.join(r.dir, "cases", "sec", KEY, "test_broken.lua")
    write_file(bad, "local x = = 1\n")
    p = r("cases/sec", ABX_SANDBOX_API_KEY=KEY,
          ABX_SANDBOX_BASE_URL="http://127.0.0.1:%d" % free_port())
    got = annotations(p.stdout)
    check(len(got) == 1 and got[0][1].get("file") == "cases/sec/[MASKED]/test_broken.lua",
          "collection error annotated, path masked: %r" % (got[:1],))
    check_no_leak(KEY, {"stdout": p.stdout, "stderr": p.stderr,
                        "summary": read_text(r.summary, "")}, "raw path")
    remove(os.path.join(r.dir, "cases", "sec"))


def capped_run(r):
    """More failures than annotations: 50, then one line for the rest; a
    long message cut to 4 KiB; the summary details 50 failures."""
    write_file(os.path.join(r.dir, "cases", "many", "test_many.lua"),
               'local e2e = require "e2e"\n'
               'e2e.test("long", function() e2e.fail(("x"):rep(10000)) end)\n'
               'for i = 1, 60 do e2e.test("fails " .. i, function() e2e.fail("no " .. i) end) end\n')
    if os.path.exists(r.summary):
        os.unlink(r.summary)
    p = r("cases/many", "cases/ci/test_ci.lua", "--reruns", "1")
    lines = [l for l in p.stdout.splitlines() if l.startswith("::")]
    eq(len(lines), 51, "50 annotations and one more line")
    eq(lines[-1] if lines else None,
       "::warning::17 more failures and flaky tests not annotated", "the line for the rest")
    long = [d for _, pr, d in annotations(p.stdout)
            if gh_unescape(pr.get("title") or "").endswith("::long")]
    text = gh_unescape(long[0]) if long else ""
    check(len(text.encode()) <= 4096 and text.endswith("\n[... truncated]"),
          "a long message is cut to 4 KiB (%d bytes)" % len(text.encode()))
    md = read_text(r.summary, "")
    eq(md.count("\n#### "), 50, "the summary details 50 failures")
    check("\n16 more failures and errors: see the job log.\n" in md, "and counts the rest")
    remove(os.path.join(r.dir, "cases", "many"))


def main():
    a = cli()
    r = Run(a.bin)
    try:
        code = main_run(r)
        plain_run(r)
        off_runs(r)
        unwritable_run(r, code)
        raw_path_run(r)
        capped_run(r)
    finally:
        remove(r.dir)
    done()


if __name__ == "__main__":
    main()
