"""Sandbox bindings against abx-local: starts `abx-local serve` on free
loopback ports (tests/lib/abxlocal.py), runs the built abx-e2e on the
Lua files in cases/ pointed at it, checks the outcome per node id (from
--json), and then lists the platform: no sandbox may be left behind
(except what --keep-failed keeps on purpose).

  run.py --bin ABX_E2E SCENARIO      (ABX_LOCAL_BIN / ABX_ENVD_BIN set)"""
import os
import re
import secrets
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxlocal import e2e_env, scenario_main  # noqa: E402
from abxtest import check, outcomes, remove, run, run_reported, scratch  # noqa: E402


def run_e2e(binary, server, files, extra=(), run_id=None, platform=True, drop=(),
            selftest=False):
    """Runs abx-e2e in a fresh directory; returns (process, report, run id).
    drop: server variables left out (e.g. the single data-plane URL);
    selftest: ABX_E2E_SELFTEST=1 (open stream/watcher counters)."""
    work = scratch("abx-bindings-", os.path.join(HERE, "cases"), link=True)
    run_id = run_id or "bind-" + secrets.token_hex(4)
    env = e2e_env(server if platform else None, run_id, hide=drop,
                  ABX_E2E_SELFTEST="1" if selftest else None)
    try:
        p, doc = run_reported(binary, [*extra, *files], work, env, timeout=220)
    finally:
        remove(work)
    if p.returncode not in (0, 1):
        print(p.stdout[-6000:], p.stderr[-3000:])
    return p, doc, run_id


def tagged(server, run_id):
    """Sandboxes on the platform carrying e2e=<run_id> (running or paused)."""
    return server.list({"e2e": run_id})


def expected_ids(rel):
    """Node ids of the top-level test("name", ...) calls of cases/<file>,
    so that a test that silently vanished fails too."""
    with open(os.path.join(HERE, rel), encoding="utf-8") as f:
        names = re.findall(r'^test\("((?:[^"\\]|\\.)*)"', f.read(), re.M)
    return {"%s::%s" % (rel, n) for n in names}


def all_passed(binary, server, files, selftest=False):
    p, doc, run_id = run_e2e(binary, server, files, selftest=selftest)
    got = outcomes(doc)
    if not check(len(got) > 0, "tests ran"):
        print(p.stdout[-3000:], p.stderr[-2000:])
    want = set().union(*(expected_ids(f) for f in files))
    check(want <= set(got), "every test ran: missing %r" % sorted(want - set(got)))
    for nodeid, outcome in sorted(got.items()):
        check(outcome == "passed", "%s: %s" % (nodeid, outcome))
    if any(o != "passed" for o in got.values()):
        print(p.stdout[-8000:])
    check(p.returncode == 0, "exit code %d" % p.returncode)
    left = tagged(server, run_id)
    check(left == [], "sandboxes left after the run: %r" % [s.get("sandboxID") for s in left])


FAILING = {
    "cases/test_failing.lua::failing test with a sandbox": "failed",
    "cases/test_failing.lua::erroring test with a sandbox": "error",
    "cases/test_failing.lua::fixture error after create": "error",
    "cases/test_failing.lua::file fixture error after create": "error",
    "cases/test_failing.lua::failing finalizer does not stop the kill": "passed",
    "cases/test_failing.lua::passing test keeps nothing": "passed",
    "cases/test_failing.lua::deadline cuts a blocked call": "failed",
    "cases/test_failing.lua::deadline cuts a blocked http call": "failed",
}


def sc_failing(binary, server):
    p, doc, run_id = run_e2e(binary, server, ["cases/test_failing.lua"])
    got = outcomes(doc)
    for nodeid, want in FAILING.items():
        check(got.get(nodeid) == want, "%s: %s, want %s" % (nodeid, got.get(nodeid), want))
    check(p.returncode == 1, "exit code %d" % p.returncode)
    check("finalizer failed" in p.stdout, "the failing finalizer is reported")
    for t in doc.get("tests", []):
        if "deadline" in t["nodeid"]:
            check("Timeout: test exceeded 2 s" in (t.get("message") or ""),
                  "%s: %r" % (t["nodeid"], t.get("message")))
            check(t.get("duration", 99) < 10, "%s cut in time" % t["nodeid"])
    # The failed test's sandbox id is named in its report.
    created = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("created ")]
    check(len(created) == 1, "the failing test printed its sandbox id")
    failed = [t for t in doc.get("tests", []) if t["nodeid"].endswith("failing test with a sandbox")]
    if created and failed:
        check(failed[0].get("sandbox_ids") == created, "report names the failed test's sandbox: %r"
              % failed[0].get("sandbox_ids"))
        check("sandboxes: " + created[0] in p.stdout, "terminal names the failed test's sandbox")
    for t in doc.get("tests", []):
        if t["outcome"] in ("failed", "error"):
            check(len(t.get("sandbox_ids") or []) >= 1, "%s names its sandbox" % t["nodeid"])
    left = tagged(server, run_id)
    check(left == [], "sandboxes left after failures: %r" % [s.get("metadata") for s in left])


def sc_keep_failed(binary, server):
    p, doc, run_id = run_e2e(binary, server, ["cases/test_failing.lua"], ["--keep-failed"])
    got = outcomes(doc)
    check(got.get("cases/test_failing.lua::failing test with a sandbox") == "failed", "failed test")
    left = tagged(server, run_id)
    cases = sorted(s.get("metadata", {}).get("case", s.get("templateID")) for s in left)
    # Kept: what failed/erroring tests used (the file's code_sandbox too:
    # the deadline tests failed with it); the rest is deleted.
    check(cases == ["broken-fixture", "code-interpreter-v1", "erroring", "failing", "file-fixture"],
          "kept sandboxes: %r" % cases)
    check("kept" in p.stdout and run_id in p.stdout, "the run says what it kept and how to clean up")
    for s in left:
        server.kill(s["sandboxID"])


def sc_parallel(binary, server):
    all_passed_files = ["cases/test_sandbox.lua", "cases/test_builtin_fixtures.lua", "cases/test_code.lua"]
    # A file per worker: these files' tests read what an earlier test of the
    # file left (the first base_sandbox, the factory's sandbox), so one
    # worker runs each file in order. --dist load would cut a file into
    # chunks whose split point moves with the recorded durations: a later
    # test on the other worker met a nil upvalue (CI, once).
    p, doc, run_id = run_e2e(binary, server, ["-n", "2", "--dist", "loadfile", *all_passed_files])
    got = outcomes(doc)
    check(len(got) >= 28, "all tests ran: %d" % len(got))
    bad = {k: v for k, v in got.items() if v != "passed"}
    check(bad == {}, "not passed: %r" % bad)
    check(tagged(server, run_id) == [], "nothing left after -n 2")


def sc_no_credentials(binary, server):
    """Without credentials every sandbox test skips; the scope check and
    the fixtures module still load."""
    p, doc, _ = run_e2e(binary, server, ["cases/"], platform=False)
    got = outcomes(doc)
    check(p.returncode == 0, "exit code %d" % p.returncode)
    check(got.get("cases/test_sandbox.lua::create outside a test or fixture raises") == "passed",
          "top-level create refused")
    others = [o for k, o in got.items() if not k.endswith("create outside a test or fixture raises")]
    check(len(others) > 30 and all(o == "skipped" for o in others), "all others skipped: %r" % set(others))
    check("missing credentials" in p.stdout, "the skip reason names the missing credentials")


def sc_host_routing(binary, server):
    """The data plane by host name: without ABX_SANDBOX_URL (E2B_SANDBOX_URL
    is never passed) the clients use http://<port>-<id>.localhost:PORT
    (curl resolves *.localhost to loopback), and abx-local routes by the
    Host's first label. The trace shows that form, signatures masked."""
    p, doc, run_id = run_e2e(binary, server, ["cases/test_host_routing.lua"],
                             ["--trace-http"], drop=("ABX_SANDBOX_URL",))
    got = outcomes(doc)
    if not check(len(got) >= 7, "tests ran: %d" % len(got)):
        print(p.stdout[-3000:], p.stderr[-2000:])
    bad = {k: v for k, v in got.items() if v != "passed"}
    if not check(bad == {}, "not passed: %r" % bad):
        print(p.stdout[-8000:])
    check(p.returncode == 0, "exit code %d" % p.returncode)
    out = p.stdout + p.stderr
    domain = server.env["ABX_SANDBOX_DOMAIN"]
    data_url = server.env["ABX_SANDBOX_URL"]
    for port in ("49983", "49999", "8000", "8080"):
        pat = re.compile(r"http: \w+ http://%s-[A-Za-z0-9_-]+\.%s/" % (port, re.escape(domain)))
        check(pat.search(out) is not None, "trace shows the host form for port " + port)
    check(data_url + "/" not in out, "the single data-plane URL is not used")
    check("signature=[MASKED]" in out or "signature=" not in out, "signatures masked in the trace")
    check(not re.search(r"signature=v1_[A-Za-z0-9]", out), "no signature in the output")
    check(tagged(server, run_id) == [], "nothing left after the host-routed run")


def sc_exec(binary, server):
    """`abx-e2e exec SCRIPT`: the script is a scope. Its sandboxes carry the
    run's tag, finalizers run before they are deleted, and nothing is left
    whether the script ends, fails or calls os.exit."""
    for mode, want in (("ok", 0), ("fail", 1), ("exit", 7)):
        run_id = "exec-" + secrets.token_hex(4)
        work = scratch("abx-exec-")
        try:
            p = run([binary, "exec", os.path.join(HERE, "cases", "exec_script.lua"), mode],
                    cwd=work, env=e2e_env(server, run_id))
        finally:
            remove(work)
        out = p.stdout + p.stderr
        if not check(p.returncode == want, "exec %s: exit %d, want %d" % (mode, p.returncode, want)):
            print(out[-3000:])
        check("tag " + run_id in out, "exec %s: the forged tag is replaced by the run's" % mode)
        check("out hi" in out, "exec %s: command ran" % mode)
        check("deferred true" in out, "exec %s: defer ran while the sandbox lived" % mode)
        check("sandboxes: 2 created, 2 deleted, 0 kept, 0 left" in out,
              "exec %s: the script's sandboxes were deleted" % mode)
        if mode == "fail":
            check("script failed on purpose" in out, "exec fail: the error is shown")
        left = tagged(server, run_id)
        check(left == [], "exec %s: left %r" % (mode, [s.get("sandboxID") for s in left]))


SCENARIOS = {
    "exec": sc_exec,
    "host_routing": sc_host_routing,
    "no_credentials": sc_no_credentials,
    "sandbox": lambda b, s: all_passed(b, s, ["cases/test_sandbox.lua"]),
    "code": lambda b, s: all_passed(b, s, ["cases/test_code.lua"]),
    "fixtures": lambda b, s: all_passed(b, s, ["cases/test_builtin_fixtures.lua"]),
    "commands": lambda b, s: all_passed(b, s, ["cases/test_commands.lua"], selftest=True),
    "files": lambda b, s: all_passed(b, s, ["cases/test_files.lua"], selftest=True),
    "failing": sc_failing,
    "keep_failed": sc_keep_failed,
    "parallel": sc_parallel,
}



if __name__ == "__main__":
    scenario_main(SCENARIOS)
