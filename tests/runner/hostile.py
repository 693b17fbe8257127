#!/usr/bin/env python3
"""Hostile-input self-tests of abx-e2e: what a careless or hostile test
author can throw at the runner (odd error values, NUL bytes, huge values,
fixture graph mistakes, memory bombs, symlink loops, bad report paths).
Every case must end in a clear, bounded report and a valid JUnit/JSON file,
serially and with -n 2.

usage: hostile.py --bin PATH/abx-e2e SCENARIO   (or "all")
       hostile.py --list       the scenario names, one a line, sorted (the
                               ctest cases runner.hostile_NAME)

Uses harness.py's main and runner_common.py's helpers; the Lua files are
in hostile/ (copied to a fresh directory as cases/, so node ids read
"cases/test_x.lua::name")."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
import runner_common  # noqa: E402
from abxtest import by_id, must, outcomes, write_file  # noqa: E402
from runner_common import expect_outcomes  # noqa: E402


class Ctx(runner_common.Ctx):
    cases = "hostile"
    prefix = "abx-hostile-"

    def write(self, rel, text):
        write_file(os.path.join(self.dir, rel), text)
        return rel

    def reports(self, *args, env=None):
        """Runs with --junitxml and --json; both must parse."""
        for n in ("r.xml", "r.json"):
            if os.path.exists(os.path.join(self.dir, n)):
                os.unlink(os.path.join(self.dir, n))
        p = self.run(*args, "--junitxml", "r.xml", "--json", "r.json", env=env)
        must(os.path.exists(os.path.join(self.dir, "r.json")),
             "no JSON report\n" + p.stdout[-3000:] + p.stderr[-3000:])
        ET.parse(os.path.join(self.dir, "r.xml"))
        with open(os.path.join(self.dir, "r.json"), encoding="utf-8") as f:
            doc = json.load(f)
        return p, doc


def for_each_n(c, fn):
    for n in ("1", "2"):
        fn(n)


# ---- scenarios -----------------------------------------------------------

EV = "cases/test_error_values.lua::"


def sc_error_values(c):
    def one(n):
        p, doc = c.reports(EV[:-2], "-n", n)
        got = outcomes(doc)
        want = {EV + k: "error" for k in (
            "nil_error", "table_error", "number_error", "tostring_fails",
            "tostring_not_string", "tostring_ok", "nul_in_message",
            "bad_utf8_output", "huge_message", "huge_multiline",
            "fake_interrupt", "fake_skip")}
        want[EV + "nul_in_failure"] = "failed"
        want[EV + "passes"] = "passed"
        expect_outcomes(got, want)
        t = by_id(doc)
        must(p.returncode == 1, f"exit {p.returncode}")
        must(t[EV + "nil_error"]["message"] == "(error object is a nil value)",
             t[EV + "nil_error"]["message"])
        must("__tostring failed" in t[EV + "tostring_fails"]["message"]
             and "boom in tostring" in t[EV + "tostring_fails"]["message"],
             t[EV + "tostring_fails"]["message"])
        must("__tostring returned a table" in t[EV + "tostring_not_string"]["message"],
             t[EV + "tostring_not_string"]["message"])
        must(t[EV + "tostring_ok"]["message"] == "custom text", t[EV + "tostring_ok"]["message"])
        must(t[EV + "number_error"]["message"].endswith("42"), t[EV + "number_error"]["message"])
        # NUL bytes are shown, not where the text silently stops.
        must(t[EV + "nul_in_message"]["message"] == "before\\0after",
             repr(t[EV + "nul_in_message"]["message"]))
        must(t[EV + "nul_in_failure"]["message"].endswith("left\\0right"),
             repr(t[EV + "nul_in_failure"]["message"]))
        must("tail" in t[EV + "bad_utf8_output"]["output"], repr(t[EV + "bad_utf8_output"]["output"]))
        # Huge messages are bounded in the result, the terminal and reports.
        for k in ("huge_message", "huge_multiline"):
            r = t[EV + k]
            must(len(r["message"]) <= 4096, f"{k}: message of {len(r['message'])} chars")
            must(len(r["longrepr"]) < 2 * 1024 * 1024, f"{k}: longrepr of {len(r['longrepr'])}")
            must("more bytes not shown" in r["longrepr"], f"{k}: no truncation note")
        must(len(p.stdout) < 8 * 1024 * 1024, f"terminal got {len(p.stdout)} bytes")
    for_each_n(c, one)


FM = "cases/test_fixture_misuse.lua::"


def sc_fixture_misuse(c):
    def one(n):
        p, doc = c.reports(FM[:-2], "-n", n)
        expect_outcomes(outcomes(doc), {
            FM + "override_conftest": "passed",
            FM + "cycle": "error",
            FM + "scope_mismatch": "error",
            FM + "non_function_teardown": "error",
            FM + "unknown_fixture": "error",
            FM + "fixture_at_run_time": "error",
            FM + "describe_at_run_time": "error",
            FM + "test_at_run_time": "error",
            FM + "uses_later_fixture": "passed",
        })
        t = by_id(doc)
        must("dependency cycle" in t[FM + "cycle"]["message"], t[FM + "cycle"]["message"])
        must("scope mismatch: file fixture 'wide' requests test fixture 'narrow'"
             in t[FM + "scope_mismatch"]["message"], t[FM + "scope_mismatch"]["message"])
        must("non-function teardown" in t[FM + "non_function_teardown"]["message"], "teardown msg")
        must("'no_such_fixture' not found" in t[FM + "unknown_fixture"]["message"], "unknown msg")
        must("fixture() cannot be called while tests are running"
             in t[FM + "fixture_at_run_time"]["message"], t[FM + "fixture_at_run_time"]["message"])
        must("describe() cannot be called" in t[FM + "describe_at_run_time"]["message"], "describe msg")
    for_each_n(c, one)


# Registration mistakes that make the whole file a collection ERROR.
COLLECT_CASES = {
    "test_kw_fixture.lua": ('require("e2e").fixture("end", function() end)\n',
                            '"end" is reserved'),
    "test_env_fixture.lua": ('require("e2e").fixture("_ENV", function() end)\n',
                             '"_ENV" is reserved'),
    "test_dup_fixture.lua": ('local e2e = require "e2e"\n'
                             'e2e.fixture("twice", function() return 1 end)\n'
                             'e2e.fixture("twice", function() return 2 end)\n'
                             'e2e.test("t", function(twice) end)\n',
                             'fixture "twice" defined twice (first at coll/test_dup_fixture.lua:2)'),
    "test_nul_name.lua": (b'local e2e = require "e2e"\ne2e.test("a\\0b", function() end)\n',
                          'contains a NUL byte'),
    "test_bad_utf8_name.lua": (b'local e2e = require "e2e"\ne2e.test("caf\xe9", function() end)\n',
                               'is not valid UTF-8'),
    "test_nan_timeout.lua": ('require("e2e").test("t", {timeout = 0/0}, function() end)\n',
                             'timeout must be a positive, finite number'),
    "test_top_block.lua": ('os.execute("sleep 8")\n',
                           'collector killed by the watchdog: loading coll/test_top_block.lua'),
    "test_dup_test.lua": ('local e2e = require "e2e"\ne2e.test("same", function() end)\n'
                          'e2e.test("same", function() end)\n', 'duplicate test name'),
    "test_describe_nonfn.lua": ('require("e2e").describe("x", 42)\n', 'describe: missing function'),
    "test_os_exit.lua": ('os.exit(3)\n', 'os.exit is not allowed'),
    "test_top_loop.lua": ('while true do end\n',
                          'Timeout: loading coll/test_top_loop.lua took longer than 2 s'),
}


def sc_collect_misuse(c):
    files = []
    for name, (src, _) in COLLECT_CASES.items():
        files.append(c.write("coll/" + name, src))
    c.write("coll/test_ok.lua", 'local e2e = require "e2e"\ne2e.test("fine", function() end)\n')

    def one(n):
        p, doc = c.reports("coll", "-n", n, "--timeout", "2",
                           "--continue-on-collection-errors",
                           env={"ABX_E2E_WATCHDOG_EXTRA": "1"})
        t = by_id(doc)
        for name, (_, msg) in COLLECT_CASES.items():
            r = t.get("coll/" + name)
            must(r is not None, f"{name}: no collection error in {sorted(t)}")
            must(r["outcome"] == "error" and msg in r["message"], f"{name}: {r['outcome']} {r['message']!r}")
        must(t["coll/test_ok.lua::fine"]["outcome"] == "passed", "ok file")
        must(p.returncode == 1, f"exit {p.returncode}")
    for_each_n(c, one)


AS = "cases/test_assertions.lua::"


def sc_assertions(c):
    def one(n):
        p, doc = c.reports(AS[:-2], "-n", n, "--timeout", "120")
        expect_outcomes(outcomes(doc), {
            AS + "cycle_equal": "passed",
            AS + "cycle_mutual_differs": "failed",
            AS + "meta_eq_honoured": "passed",
            AS + "meta_raw_walk": "failed",
            AS + "tostring_key": "failed",
            AS + "negzero_equal": "passed",
            AS + "int_float_equal": "passed",
            AS + "nan_differs": "failed",
            AS + "long_string": "failed",
            AS + "big_table": "failed",
            AS + "deep_nesting": "failed",
            AS + "raises_non_function": "failed",
            AS + "near_non_number": "error",
        })
        t = by_id(doc)
        ls = t[AS + "long_string"]["longrepr"]
        must("first difference at byte 1048577" in ls, ls[:500])
        must(len(ls) < 32 * 1024, f"long_string message of {len(ls)} bytes")
        bt = t[AS + "big_table"]["longrepr"]
        must("first difference at [100000]: expected 0, got 100000" in bt, bt[:500])
        must("more)" in bt and len(bt) < 256 * 1024, f"big_table message of {len(bt)} bytes")
        must("near: expected a number" in t[AS + "near_non_number"]["message"], "near msg")
    for_each_n(c, one)


def sc_memory(c):
    M = "cases/test_memory.lua::"
    def one(n):
        p, doc = c.reports(M[:-2], "-n", n, "--max-memory", "256")
        expect_outcomes(outcomes(doc), {M + "bomb": "error", M + "after_bomb": "passed"})
        r = by_id(doc)[M + "bomb"]
        must("Lua heap limit of 256 MiB" in r["message"] and "--max-memory" in r["message"], r["message"])
        must("teardown ran" in (r.get("teardown_message") or ""), f"teardown lost: {r}")
    for_each_n(c, one)
    p = c.run(M[:-2], "--max-memory", "lots")
    must(p.returncode == 4 and "--max-memory expects megabytes" in p.stderr, p.stderr)


def sc_discovery(c):
    # A symlink loop and a second link to the same folder collect once.
    c.write("tests-lua/sub/test_a.lua", 'local e2e = require "e2e"\ne2e.test("u", function() end)\n')
    os.symlink("..", os.path.join(c.dir, "tests-lua/sub/loop"))
    os.symlink("../sub", os.path.join(c.dir, "tests-lua/sub/again"))
    p, doc = c.reports("-n", "2")
    must([t["nodeid"] for t in doc["tests"]] == ["tests-lua/sub/test_a.lua::u"],
         f"collected {len(doc['tests'])}: {[t['nodeid'] for t in doc['tests']][:5]}")
    # A report path that is a directory is a usage error before the run.
    os.mkdir(os.path.join(c.dir, "somedir"))
    for opt in ("--junitxml", "--json", "--html"):
        p = c.run(opt, "somedir")
        must(p.returncode == 4 and "is a directory" in p.stderr, f"{opt}: {p.returncode} {p.stderr}")
    # A damaged --lf cache is said, then replaced.
    c.write(".abx-e2e/lastfailed.json", "{not json")
    p = c.run("--lf")
    must(p.returncode == 0 and "ignoring .abx-e2e/lastfailed.json" in p.stderr, p.stderr)
    with open(os.path.join(c.dir, ".abx-e2e/lastfailed.json")) as f:
        json.load(f)
    # A FIFO or device named as a test file is refused, not read forever.
    os.mkfifo(os.path.join(c.dir, "test_fifo.lua"))
    for arg in ("test_fifo.lua", "/dev/null"):
        p = c.run(arg, timeout=30)
        must(p.returncode == 4 and "not a regular file" in p.stderr, f"{arg}: {p.returncode} {p.stderr}")
    # "./" and ".//" mean this directory (".//" once walked "/").
    for arg in ("./", ".//", "./."):
        p = c.run(arg, "--co", "-q", timeout=60)
        must("\ncases/test_memory.lua::bomb" in "\n" + p.stdout and "./" not in p.stdout,
             f"{arg}: {p.returncode} {p.stdout[:300]} {p.stderr[:300]}")
    # 10 000 tests in one file run in one go, serially and in parallel.
    c.write("big/test_many.lua", 'local e2e = require "e2e"\n'
            'for i = 1, 10000 do e2e.test("t" .. i, function() end) end\n')
    for n in ("1", "2"):
        p = c.run("big", "-q", "-n", n)
        must(p.returncode == 0 and "10000 passed" in p.stdout, p.stdout[-500:])


def sc_runtime(c):
    R = "cases/test_runtime.lua::"
    for n in ("1", "2"):
        # stdin is a pipe that never closes: a test reading it must not hang.
        p = subprocess.Popen([c.bin, R[:-2], "-n", n, "--json", "r.json"], cwd=c.dir,
                             env=c.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            # The test leaves "sleep 60" running: waiting for it would be a hang.
            out, err = p.communicate(timeout=45)
        finally:
            p.kill() if p.poll() is None else None
        with open(os.path.join(c.dir, "r.json")) as f:
            doc = json.load(f)
        expect_outcomes(outcomes(doc), {
            R + "stdin_is_empty": "passed",
            R + "sethook_refused": "error",
            R + "background_process": "passed",
            R + "recursion": "error",
            R + "string_too_large": "error",
            R + "print_bad_tostring": "error",
            R + "close_stdout": "passed",
            R + "after": "passed",
        })
        t = by_id(doc)
        must("debug.sethook is not allowed" in t[R + "sethook_refused"]["message"],
             t[R + "sethook_refused"]["message"])
        must("stack overflow" in t[R + "recursion"]["message"], t[R + "recursion"]["message"])


SCENARIOS = {name[3:]: fn for name, fn in globals().items() if name.startswith("sc_")}


if __name__ == "__main__":
    sys.exit(harness.main(SCENARIOS, Ctx))
