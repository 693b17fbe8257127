#!/usr/bin/env python3
"""(h) Tagging: a test that passes metadata {e2e="evil", e2e_test="x",
e2e_nonce="n"} to sandbox_factory (and e2e="evil2" to sandbox.create)
still gets e2e=<run id>: checked through the platform's list filter while
the test waits, then the run must leave nothing behind."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, eq, outcomes, until  # noqa: E402
from glib import main, rc_is, Run  # noqa: E402

T = "cases/test_tagging.lua::"


def body(p):
    r = Run(p)
    try:
        proc = r.start("cases/test_tagging.lua", "--json", "r.json", "-s")
        until(lambda: r.side_file("ids") or proc.poll() is not None, 90, step=0.2)
        ids = (r.side_file("ids") or "").split()
        if check(len(ids) == 2, "the test created its sandboxes"):
            fac, direct = ids
            tagged = p.ids({"e2e": r.run_id})
            check(fac in tagged, "factory sandbox listed under e2e=<run id>")
            check(direct in tagged, "sandbox.create sandbox listed under e2e=<run id>")
            eq(p.ids({"e2e": "evil"}), [], "nothing listed under e2e=evil")
            eq(p.ids({"e2e": "evil2"}), [], "nothing listed under e2e=evil2")
            eq(p.ids({"e2e_test": "x"}), [], "nothing listed under e2e_test=x")
            eq(p.ids({"e2e_nonce": "n"}), [], "nothing listed under e2e_nonce=n")
            eq(p.ids({"e2e": r.run_id, "mine": "kept"}), [fac], "the caller's own key is kept")
            st, js, _, _ = p.get(fac)
            md = (js or {}).get("metadata", {})
            eq(md.get("e2e"), r.run_id, "GET: e2e")
            check(md.get("e2e_test") not in (None, "", "x"),
                  "GET: e2e_test is the test's id, not the caller's (%r)" % md.get("e2e_test"))
            check(md.get("e2e_nonce") not in (None, "", "n"), "GET: e2e_nonce set by the host")
            md2 = (p.get(direct)[1] or {}).get("metadata", {})
            eq(md2.get("e2e"), r.run_id, "GET direct: e2e")
            eq(md2.get("E2E"), "upper", "GET direct: other keys pass through")
        with open(os.path.join(r.side, "go"), "w"):
            pass
        until(lambda: r.side_file("base") or proc.poll() is not None, 90, step=0.2)
        base = (r.side_file("base") or "").strip()
        if check(base != "", "base_sandbox test started"):
            check(base in p.ids({"e2e": r.run_id}), "base_sandbox listed under e2e=<run id>")
        with open(os.path.join(r.side, "go2"), "w"):
            pass
        try:
            proc.wait(120)
        except Exception:  # noqa: BLE001
            proc.kill()
            proc.wait()
        out, err = r.outputs()
        rc_is(proc.returncode, 0, "exit code", out, err)
        got = outcomes(r.report())
        eq(got.get(T + "caller metadata cannot override the tags"), "passed", "tags seen in Lua")
        eq(got.get(T + "fixtures are tagged"), "passed", "fixture test")
        eq(p.ids(), [], "no sandbox left")
    finally:
        r.cleanup()


main(body)
