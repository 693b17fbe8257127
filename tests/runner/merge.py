"""`abx-e2e merge`: the JSON reports of `--shard K/N` runs combined into one
set of reports. The shards of a small suite are run for real (no platform
needed); their merge must equal the unsharded run, test by test, and every
problem (a missing shard, a duplicate, an unreadable file, shards of
different N) must be named and must fail the merge without losing the
rest. Usage: merge.py --bin ABX_E2E"""
import json
import os
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from abxtest import (ALL_ABX, check, check_no_sanitizer, check_not_printed,  # noqa: E402
                     cli, done, eq, load_json, remove, run, scratch,
                     scrubbed_env, secret_forms, write_file)

SECRET = "mrg-Sec7-Q2xkYWZq-lkjh-0987-ZZtop"

FILE_A = """local e2e = require "e2e"
local describe, it, expect = e2e.describe, e2e.test, e2e.expect
describe("alpha", function()
  it("one", function() expect(1):eq(1) end)
  it("two fails", function() expect(1 + 1):eq(3) end)
  it("three", function() end)
  it("four skips", { skip = "not today" }, function() end)
end)
it("five", function() end)
it("six prints", function() print("key " .. e2e.secret(os.getenv("MERGE_SECRET"))) end)
"""

FILE_B = """local e2e = require "e2e"
local it, expect = e2e.test, e2e.expect
it("b one", function() end)
it("b two", function() expect("x"):eq("y") end)
it("b three", function() end)
it("b four", function() end)
it("b five", function() error("boom") end)
"""

PASSING = """local e2e = require "e2e"
for i = 1, 6 do e2e.test("ok " .. i, function() end) end
"""


def env():
    return scrubbed_env(ALL_ABX, E2E_RUN_ID="merge-test-run",
                        MERGE_SECRET=SECRET, ABX_SANDBOX_API_KEY=None)


def abx(binary, args, cwd, e=None):
    p = run([binary, *args], cwd=cwd, env=e or env(), timeout=120)
    check_no_sanitizer(p.stdout + p.stderr, "abx-e2e " + " ".join(args[:2]))
    return p


def junit_counts(path):
    s = xml.dom.minidom.parse(path).getElementsByTagName("testsuite")[0]
    return {k: int(s.getAttribute(k)) for k in ("tests", "failures", "errors")}


def junit_properties(path):
    s = xml.dom.minidom.parse(path).getElementsByTagName("testsuite")[0]
    props = [p for p in s.getElementsByTagName("property")
             if p.parentNode.parentNode is s]
    return {p.getAttribute("name"): p.getAttribute("value") for p in props}


def outcomes(doc):
    return {t["nodeid"]: t["outcome"] for t in doc["tests"]}


def main():
    a = cli()
    d = scratch("abx-merge-")
    try:
        write_file(os.path.join(d, "suite", "test_a.lua"), FILE_A)
        write_file(os.path.join(d, "suite", "test_b.lua"), FILE_B)
        write_file(os.path.join(d, "green", "test_ok.lua"), PASSING)
        scenarios(a.bin, d)
    finally:
        remove(d)
    done()


def scenarios(binary, d):
    whole = abx(binary, ["--json", "whole.json", "--junitxml", "whole.xml", "suite"], d)
    ref = load_json(os.path.join(d, "whole.json"))
    eq(whole.returncode, 1, "the unsharded run fails (2 failures, 1 error)")
    eq(len(ref["tests"]), 11, "the unsharded run ran the 11 tests")
    for k in (1, 2, 3):
        p = abx(binary, ["-n", "2", "--shard", "%d/3" % k, "--json",
                         "s%d.json" % k, "suite"], d)
        check(p.returncode in (0, 1), "shard %d/3 ran (exit %d)" % (k, p.returncode))
        eq(load_json(os.path.join(d, "s%d.json" % k))["shard"], {"k": k, "n": 3},
           "shard %d's report says which shard it is" % k)
    abx(binary, ["--shard", "1/2", "--json", "other.json", "suite"], d)

    # All three: the unsharded run again, test by test.
    p = abx(binary, ["merge", "--junitxml", "m.xml", "--html", "m.html",
                     "--json", "m.json", "s1.json", "s2.json", "s3.json"], d)
    eq(p.returncode, 1, "merge exits 1: the merged tests hold failures")
    m = load_json(os.path.join(d, "m.json"))
    eq(outcomes(m), outcomes(ref), "merged outcomes = the unsharded run's")
    eq(m["summary"], ref["summary"], "merged counts = the unsharded run's")
    eq(m["merge"], {"missing": [], "duplicates": [], "unreadable": []},
       "nothing missing, duplicated or unreadable")
    eq(sorted(s["k"] for s in m["shards"]), [1, 2, 3], "the shards are listed")
    eq(m["run_id"], "merge-test-run", "the pipeline's run id is kept")
    by_shard = {}
    for k in (1, 2, 3):
        for t in load_json(os.path.join(d, "s%d.json" % k))["tests"]:
            by_shard[t["nodeid"]] = k
    eq({t["nodeid"]: t["shard"] for t in m["tests"]}, by_shard,
       "each merged test names the shard that ran it")
    j = junit_counts(os.path.join(d, "m.xml"))
    eq(j, {"tests": 11, "failures": ref["summary"]["failed"],
           "errors": ref["summary"]["error"]}, "merged JUnit counts")
    # One report document: the merged JUnit says what a run's says.
    props = junit_properties(os.path.join(d, "m.xml"))
    eq(props, junit_properties(os.path.join(d, "whole.xml")),
       "merged JUnit properties = the unsharded run's")
    check(set(props) == {"platform", "capabilities"}, "JUnit properties: %r" % props)
    html = open(os.path.join(d, "m.html"), encoding="utf-8").read()
    check('id="abx-report-data"' in html and '"shards"' in html,
          "the merged HTML holds the merged document")
    check("merged 3 file(s), 3 shard(s): 2 failed" in p.stdout,
          "the closing line counts the merged tests: " + p.stdout.strip())
    texts = p.stdout + p.stderr + html + json.dumps(m)
    for form, what in secret_forms(SECRET).items():
        check(form not in texts, "merge outputs: the secret never appears (%s)" % what)

    # A missing shard: named, the rest merged, exit 1.
    p = abx(binary, ["merge", "--json", "miss.json", "s1.json", "s3.json"], d)
    eq(p.returncode, 1, "a missing shard fails the merge")
    check("shard 2/3 is missing" in p.stderr, "the missing shard is named")
    miss = load_json(os.path.join(d, "miss.json"))
    eq(miss["merge"]["missing"], [2], "the merged JSON lists it")
    eq(len(miss["tests"]), 11 - sum(1 for k in by_shard.values() if k == 2),
       "the other shards' tests are all kept")

    # A duplicate: the first one kept, each duplicate listed.
    p = abx(binary, ["merge", "--json", "dup.json", "s1.json", "s2.json",
                     "s3.json", "s3.json"], d)
    eq(p.returncode, 1, "duplicates fail the merge")
    dup = load_json(os.path.join(d, "dup.json"))
    eq(sorted(dup["merge"]["duplicates"]),
       sorted(n for n, k in by_shard.items() if k == 3), "duplicates listed")
    eq(len(dup["tests"]), 11, "each test once")
    check("was read already" in p.stderr, "the twice-read shard is named")

    # Unreadable files: named, the others still merged.
    write_file(os.path.join(d, "bad.json"), '{"tests": [')
    write_file(os.path.join(d, "notreport.json"), '{"x": 1}')
    p = abx(binary, ["merge", "--json", "u.json", "s1.json", "bad.json",
                     "s2.json", "gone.json", "notreport.json", "s3.json"], d)
    eq(p.returncode, 1, "unreadable files fail the merge")
    u = load_json(os.path.join(d, "u.json"))
    eq(u["merge"]["unreadable"], ["bad.json", "gone.json", "notreport.json"],
       "each unreadable file listed")
    eq(outcomes(u), outcomes(ref), "the readable shards are all merged")
    for name, why in (("bad.json", "not valid JSON"), ("gone.json", "no such file"),
                      ("notreport.json", "not an abx-e2e JSON report")):
        check("merge: %s: %s" % (name, why) in p.stderr, "%s: %s" % (name, why))

    # A file with one bad test record is taken whole or not at all.
    half = load_json(os.path.join(d, "s2.json"))
    half["tests"][-1]["outcome"] = "bogus"
    write_file(os.path.join(d, "half.json"), json.dumps(half))
    p = abx(binary, ["merge", "--json", "h.json", "s1.json", "half.json",
                     "s3.json"], d)
    h = load_json(os.path.join(d, "h.json"))
    eq(h["merge"]["unreadable"], ["half.json"], "a bad test record: the file is unreadable")
    check("half.json: test #%d" % len(half["tests"]) in p.stderr,
          "the bad record is named by its position: " + p.stderr.strip()[-200:])
    eq(sorted(t["shard"] for t in h["tests"] if t["shard"] == 2), [],
       "none of its tests is taken")
    eq(h["merge"]["missing"], [2], "so its shard is missing")

    # Shards of different matrices: refused, nothing written.
    p = abx(binary, ["merge", "--json", "mix.json", "s1.json", "other.json"], d)
    eq(p.returncode, 4, "shards of different N are a usage error")
    check("other.json is shard 1/2" in p.stderr, "the odd file is named")
    check(not os.path.exists(os.path.join(d, "mix.json")), "no report written")

    # The command line.
    eq(abx(binary, ["merge"], d).returncode, 4, "no file: usage error")
    p = abx(binary, ["merge", "--bogus", "s1.json"], d)
    eq(p.returncode, 4, "unknown option: usage error")
    check("--bogus" in p.stderr, "the unknown option is named")
    eq(abx(binary, ["merge", "--json"], d).returncode, 4, "--json without FILE")
    p = abx(binary, ["merge", "--help"], d)
    eq(p.returncode, 0, "merge --help exits 0")
    for opt in ("--junitxml", "--html", "--json"):
        check(opt in p.stdout, "merge --help lists " + opt)

    # Green shards merge green; --opt=FILE form.
    for k in (1, 2):
        abx(binary, ["--shard", "%d/2" % k, "--json", "g%d.json" % k, "green"], d)
    p = abx(binary, ["merge", "--json=g.json", "g1.json", "g2.json"], d)
    eq(p.returncode, 0, "a green matrix merges green")
    eq(load_json(os.path.join(d, "g.json"))["summary"]["passed"], 6, "6 passed")

    # A secret in a shard file (a shard run elsewhere, with another masker):
    # the merge's own masker still keeps it out of what it writes.
    raw = load_json(os.path.join(d, "s1.json"))
    raw["tests"][0]["message"] = "leaked " + SECRET
    write_file(os.path.join(d, "leak.json"), json.dumps(raw))
    p = abx(binary, ["merge", "--json", "l.json", "--html", "l.html",
                     "leak.json"], d, scrubbed_env(ALL_ABX,
                                                   ABX_SANDBOX_API_KEY=SECRET))
    out = open(os.path.join(d, "l.json")).read() + open(os.path.join(d, "l.html")).read()
    check_not_printed(out + p.stdout + p.stderr, {"the API key": SECRET},
                      "merge of a leaking shard")
    check("[MASKED]" in out, "the secret is replaced by the marker")


if __name__ == "__main__":
    main()
