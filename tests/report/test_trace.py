#!/usr/bin/env python3
"""report.trace: what each test did, recorded (docs/reports.md "Traces").

A scratch project against its own abx-local, whose API key the test plants
in a file, reads back and prints; one test fails reading a file that does
not exist, one passes. Then:
  - retain-on-failure (the default): one trace file, the failed test's,
    named in the JSON report and on the terminal; its header, its events in
    time order: the fixture, the create, the command with its output as it
    arrived and its exit, each HTTP exchange with the request that failed
    (GET /files?path=..., 404, its body), the raise, the failure and the
    result; request header values other than the harmless ones not
    recorded; the key in none of its forms in the trace, the JSON and the
    HTML, and [MASKED] where it was;
  - --trace on keeps both tests' traces, --trace off none (and no trace
    field), --record DIR puts them all in DIR; a run removes the traces an
    earlier run left in its folder and nothing else there;
  - diff-records: a record against itself (nothing), against a copy with
    one status, one key and two types changed (exactly those; a key
    renamed inside a list's elements is data, not shape), and bad input
    (usage errors);
  - --trace-body-max cuts a long output chunk after masking, saying its
    size;
  - usage errors: a bad mode, --record with --trace off, --output naming a
    file;
  - the HTML page in headless Chromium: the failed test's row opens to a
    trace timeline; the entry of the failed request expands to its status
    and masked body; the command's output is there; nothing SEVERE logged.

usage: test_trace.py --bin PATH/abx-e2e"""
import argparse
import glob
import json
import os
import secrets
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxlocal import Server  # noqa: E402
from abxtest import (ALL_ABX, check, check_no_sanitizer, done, eq, load_json,  # noqa: E402
                     read_text, remove, run, scratch, scrubbed_env, secret_forms, write_file)
from test_html import browser, click_js, need_browser, row_of  # noqa: E402

TEST = r'''
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect
local key = os.getenv("ABX_SANDBOX_API_KEY")

test("reads a file that is not there", function(base_sandbox)
  local r = base_sandbox.commands:run("echo first-line; echo to-stderr >&2; head -c 300 /dev/zero | tr '\\0' x")
  expect(r.exit_code):eq(0)
  base_sandbox.files:write("/tmp/k", key)
  expect(base_sandbox.files:read("/tmp/k")):eq(key)
  print("the key: " .. base_sandbox.commands:run("cat /tmp/k").stdout)
  base_sandbox:http(49983, { path = "/health", headers = { Authorization = "Bearer unknown-cred-4711" } })
  -- an integer a double would round, as an argument: recorded exactly
  pcall(base_sandbox.http, base_sandbox, 49983, { path = "/health", timeout = 9007199254740993 })
  base_sandbox.files:read("/tmp/no-such-file")
end)

test("passes", function(base_sandbox)
  expect(base_sandbox.commands:run("echo ok").stdout):eq("ok\n")
end)
'''
FAILED = "tests/test_t.lua::reads a file that is not there"
PASSED = "tests/test_t.lua::passes"


def lines_of(path):
    out = []
    for line in read_text(path).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            check(False, "%s: a line is not JSON: %r" % (path, line[:200]))
    return out


def check_masked(text, secret, what):
    for form, kind in secret_forms(secret).items():
        check(form not in text, "%s: the key never appears (%s)" % (what, kind))


def check_trace(path, secret):
    evs = lines_of(path)
    head = evs[0] if evs else {}
    eq((head.get("ev"), head.get("version"), head.get("nodeid")), ("trace", 1, FAILED),
       "the trace opens with its header: format version 1, the node id")
    times = [e.get("t", 0) for e in evs[1:]]
    eq(times, sorted(times), "events are in the order they began")
    kinds = [e.get("ev") for e in evs]
    for k in ("fixture_setup", "call", "return", "http", "sandbox", "output", "exit", "raise",
              "failure", "result"):
        check(k in kinds, "the trace has a %r event" % k)
    calls = [e.get("name") for e in evs if e.get("ev") == "call"]
    check({"sandbox.create", "commands.run", "files.write", "files.read"} <= set(calls),
          "each SDK call is recorded (%r)" % calls)
    out = [e for e in evs if e.get("ev") == "output"]
    check(any(e.get("stream") == "stdout" and e.get("data", "").startswith("first-line\n")
              for e in out), "the command's stdout, as it arrived")
    check(any(e.get("stream") == "stderr" and e.get("data") == "to-stderr\n" for e in out),
          "... and its stderr")
    bad = [e for e in evs if e.get("ev") == "http" and e.get("status") == 404]
    ok = bad and bad[0].get("method") == "GET" and \
        "/files?path=%2Ftmp%2Fno-such-file" in bad[0].get("url", "") and \
        "does not exist" in bad[0].get("response", {}).get("body", "")
    check(ok, "the request that failed: GET /files?path=..., 404, its body (%r)" % bad[:1])
    hdrs = bad[0].get("request", {}).get("headers", {}) if bad else {}
    check(hdrs.get("X-Access-Token") == "[not recorded]" and hdrs.get("E2b-Sandbox-Port"),
          "a token header is named, its value not recorded; a harmless one is (%r)" % hdrs)
    creates = [e for e in evs if e.get("ev") == "http" and e.get("status") == 201]
    check(creates and creates[0]["request"]["headers"].get("X-API-KEY") == "[not recorded]",
          "the API key header is never recorded")
    raised = [e for e in evs if e.get("ev") == "raise"]
    check(raised and raised[-1].get("class") == "NotFound" and raised[-1].get("status") == 404
          and raised[-1].get("call") == "files.read",
          "the raise names its call, class and status (%r)" % raised[-1:])
    res = evs[-1] if evs else {}
    eq((res.get("ev"), res.get("outcome")), ("result", "error"), "the trace ends with the result")
    text = read_text(path)
    http_call = [e for e in evs if e.get("ev") == "call" and e.get("name") == "sandbox.http"]
    check(http_call and http_call[0]["args"]["2"]["headers"]["Authorization"] == "[not recorded]"
          and "unknown-cred-4711" not in text,
          "a credential the masker does not know, passed as an option, is not recorded")
    big = [e["args"]["2"].get("timeout") for e in http_call
           if isinstance(e.get("args", {}).get("2"), dict) and "timeout" in e["args"]["2"]]
    eq(big, [9007199254740993], "an integer beyond 2^53 in a call's arguments is recorded exactly")
    check_masked(text, secret, "trace")
    check("[MASKED]" in text, "trace: the key's places say [MASKED]")


def project(secret):
    proj = scratch("abx-trace-")
    write_file(os.path.join(proj, "tests", "test_t.lua"), TEST)
    return proj


def abx(binary, proj, env, *args):
    p = run([binary, "-q"] + list(args) + ["tests"], cwd=proj, env=env, timeout=240)
    check_no_sanitizer(p.stdout + p.stderr, "abx-e2e " + " ".join(args))
    return p


def traces(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.trace.jsonl")))


def modes(binary, proj, env, secret):
    out = os.path.join(proj, "test-results")
    write_file(os.path.join(out, "old-run.trace.jsonl"), "{}\n")
    write_file(os.path.join(out, "notes.txt"), "mine\n")
    p = abx(binary, proj, env, "--json", "out/r.json", "--html", "out/r.html")
    eq(p.returncode, 1, "a failing run exits 1")
    files = traces(out)
    eq(len(files), 1, "retain-on-failure: one trace, the failed test's (%r)" % files)
    check(os.path.exists(os.path.join(out, "notes.txt")),
          "a run removes an earlier run's traces, nothing else (%r)" % os.listdir(out))
    doc = load_json(os.path.join(proj, "out", "r.json")) or {}
    by = {t["nodeid"]: t for t in doc.get("tests", [])}
    path = by.get(FAILED, {}).get("trace")
    check(path and os.path.basename(path) == (files or [""])[0] and PASSED in by
          and "trace" not in by[PASSED], "the JSON report names the failed test's trace only")
    check(("trace: " + str(path)) in p.stdout, "the terminal names it under the failure")
    if path:
        check_trace(os.path.join(proj, path), secret)
    for f in ("out/r.json", "out/r.html"):
        check_masked(read_text(os.path.join(proj, f)), secret, f)
    p = abx(binary, proj, env, "--trace", "on")
    eq(len(traces(out)), 2, "--trace on: both tests' traces (%r)" % traces(out))
    p = abx(binary, proj, env, "--trace", "off", "--json", "out/off.json")
    eq(traces(out), [], "--trace off: no trace, the earlier ones removed")
    doc = load_json(os.path.join(proj, "out", "off.json")) or {}
    check(all("trace" not in t for t in doc.get("tests", [])), "... and no trace field")
    rec = os.path.join(proj, "rec")
    p = abx(binary, proj, env, "--record", rec)
    eq(len(traces(rec)), 2, "--record DIR: every test's trace in DIR")
    for f in traces(rec):
        check_masked(read_text(os.path.join(rec, f)), secret, "record " + f)
    diff_records(binary, proj, env, rec)
    p = abx(binary, proj, env, "--trace", "on", "--trace-body-max", "64", "--output", "cut")
    evs = []
    for f in traces(os.path.join(proj, "cut")):
        evs += lines_of(os.path.join(proj, "cut", f))
    long = [e for e in evs if e.get("ev") == "output" and e.get("data_bytes")]
    check(long and len(long[0]["data"].encode()) <= 64 + 3 and long[0]["data"].endswith("\u2026"),
          "--trace-body-max 64: a longer chunk is cut, its size kept (%r)" % long[:1])
    for args, what in ((["--trace", "sometimes"], "a bad --trace mode"),
                       (["--record", "x", "--trace", "off"], "--record with --trace off"),
                       (["--output", "tests/test_t.lua"], "--output naming a file")):
        p = abx(binary, proj, env, *args)
        check(p.returncode == 4 and p.stderr.strip(),
              "%s: a usage error, exit 4 (%d %r)" % (what, p.returncode, p.stderr[-200:]))
    return os.path.join(proj, "out", "r.html")


def diff_records(binary, proj, env, rec):
    """diff-records: a folder against itself, against a copy with one
    reply changed, and against bad input."""
    def diff(*args):
        return run([binary, "diff-records"] + list(args), cwd=proj, env=env, timeout=60)
    p = diff(rec, rec)
    check(p.returncode == 0 and "0 of 2 tests differ" in p.stdout,
          "diff-records A A: nothing differs, exit 0 (%d %r)" % (p.returncode, p.stdout[-300:]))
    other = os.path.join(proj, "rec2")
    shutil.copytree(rec, other)
    name = [f for f in traces(other) if "not-there" in f][0]
    lines = read_text(os.path.join(other, name)).splitlines()
    health = None
    for i, line in enumerate(lines):
        e = json.loads(line)
        if e.get("ev") == "http" and e["url"].endswith("/health"):
            health, e["status"] = e["status"], 503   # another status
        if e.get("ev") == "http" and e.get("status") == 404:
            body = json.loads(e["response"]["body"])
            body["msg"] = body.pop("message")   # a key renamed
            body["code"] = "404"                # a type changed
            e["response"]["body"] = json.dumps(body)
        if e.get("ev") == "http" and e.get("method") == "POST" and "/files?" in e["url"]:
            body = json.loads(e["response"]["body"])
            body[0]["Name"] = body[0].pop("name")   # in a list: its elements' data
            body[0]["type"] = 7                     # a type, compared in a list too
            e["response"]["body"] = json.dumps(body)
        lines[i] = json.dumps(e)
    write_file(os.path.join(other, name), "\n".join(lines) + "\n")
    os.remove(os.path.join(other, [f for f in traces(other) if "passes" in f][0]))
    p = diff(rec, other, "--json", "out/diff.json")
    doc = load_json(os.path.join(proj, "out", "diff.json")) or {}
    got = sorted((d["at"], d["field"], str(d["a"]), str(d["b"]))
                 for t in doc.get("tests", []) for d in t["differences"])
    eq(got, sorted([("GET /health", "status", str(health), "503"),
                    ("GET /files?path", "body.message", "present", "absent"),
                    ("GET /files?path", "body.msg", "absent", "present"),
                    ("GET /files?path", "body.code", "number", "string"),
                    ("POST /files?path", "body[].type", "string", "number")]),
       "diff-records: exactly the changed status, key and types (in a list: types only)")
    check(p.returncode == 1 and doc.get("only_a") == [PASSED] and "1 only in" in p.stdout
          and "GET /health: status: %s | 503" % health in p.stdout,
          "... a test recorded on one side only is named; exit 1 (%d %r)" % (
              p.returncode, p.stdout[-600:]))
    write_file(os.path.join(other, "bad.trace.jsonl"), "not json\n")
    for args, what in (([rec], "one folder"), ([rec, os.path.join(proj, "tests")],
                                                "a folder without traces"),
                       ([rec, other], "a file that is not a trace")):
        p = diff(*args)
        check(p.returncode == 4 and "diff-records" in p.stderr,
              "diff-records with %s: a usage error, exit 4 (%d %r)" % (
                  what, p.returncode, p.stderr[-200:]))


def in_browser(html, secret):
    profile = tempfile.mkdtemp(prefix="abx-trace-chromium-")
    d = browser(profile)
    try:
        d.set_window_size(1280, 900)
        d.get("file://" + html)
        toggle = row_of(d, FAILED).find_element("css selector", ".toggle")
        click_js(d, toggle)
        detail = row_of(d, FAILED, " + tr")
        items = detail.find_elements("css selector", "ol.trace > li")
        check(len(items) >= 10, "the failed test opens to its trace timeline (%d entries)"
              % len(items))
        texts = [i.text for i in items]
        req = [i for i in items if "GET /files?path=%2Ftmp%2Fno-such-file" in i.text
               and "404" in i.text]
        check(req, "an entry names the failed request and its status (%r)" % texts[:20])
        if req:
            summary = req[0].find_element("css selector", "summary")
            body = req[0].find_element("css selector", "pre")
            check(not body.is_displayed(), "an entry is closed at first")
            click_js(d, summary)
            check(body.is_displayed() and '"status": 404' in body.text and
                  "does not exist" in body.text, "it expands to the exchange, its status and body")
        check(any("first-line" in t for t in texts), "the command's output is in the timeline")
        check(any("[MASKED]" in i.get_attribute("textContent") for i in items),
              "the key shows as [MASKED] in the page's trace")
        check_masked(d.page_source, secret, "the rendered page")
        severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        eq(severe, [], "the browser logged nothing SEVERE")
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    a = ap.parse_args()
    need_browser()
    secret = "e2b_" + secrets.token_hex(20)
    proj = project(secret)
    s = Server(api_key=secret)
    try:
        env = scrubbed_env(ALL_ABX, ABX_SANDBOX_API_KEY=secret, NO_COLOR="1", CI="true",
                           **{k: s.env[k] for k in ("ABX_SANDBOX_BASE_URL", "ABX_SANDBOX_URL",
                                                    "ABX_SANDBOX_DOMAIN")})
        html = modes(os.path.abspath(a.bin), proj, env, secret)
        in_browser(html, secret)
    finally:
        s.cleanup()
        remove(proj)
    done()


if __name__ == "__main__":
    main()
