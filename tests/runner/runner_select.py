"""harness.py's scenarios on which tests run and where: -k/-m, -x and
--maxfail, --lf/--ff/--lfnf, --shard, longest files first, --dist and
file fixtures across workers."""

import json
import os

from runner_common import F, O  # first: puts tests/lib on sys.path
from abxtest import by_id, must, outcomes, summary_line


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
