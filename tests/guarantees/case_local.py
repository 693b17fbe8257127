#!/usr/bin/env python3
"""--local: the runner starts its own abx-local; whatever stops the run, no
process of it is left (abx-local, bwrap sandboxes, envd, workers,
guardian) and the platform's temporary state dir is gone.

Processes of the run are found by E2E_RUN_ID=<run id> in their
environment (abx-local inherits it; its sandboxes start with an empty
one); sandboxes are its children (bwrap, or sandbox-enter under gVisor),
then any process naming one of their ids.
Round 1: SIGINT to the runner's process group (a terminal ^C) while a test
holds 3 sandboxes: exit 2 within ~10 s, nothing left.
Round 2: SIGKILL to the runner's process group (runner and workers): the
guardian sweeps and stops abx-local within ~30 s."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import all_pids, check, done, eq, proc_stat, until  # noqa: E402
from glib import LOCAL_BIN, need_binaries, rc_is, Run, run_processes  # noqa: E402


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def live(pid):
    st = proc_stat(pid)
    return st is not None and st[1][0] != "Z"   # a zombie is dead, only unreaped


def sandboxes(run_id):
    """Ids of the run's sandboxes: the children of its abx-local (found by
    E2E_RUN_ID, which sandboxes do not inherit: they start with an empty
    environment) that are bwrap (--hostname ID) or, under gVisor, the
    sandbox-enter step (--dir .../ID)."""
    servers = [pid for pid in run_processes(run_id) if b"serve" in cmdline(pid)]
    ids = set()
    for pid in all_pids():
        st = proc_stat(pid)
        if st is None or st[1][0] == "Z" or int(st[1][1]) not in servers:
            continue
        sid = sandbox_id(cmdline(pid))
        if sid:
            ids.add(sid)
    return ids


def sandbox_id(c):
    if c and c[0].endswith(b"bwrap") and b"--hostname" in c:
        return c[c.index(b"--hostname") + 1]
    if b"sandbox-enter" in c and b"--dir" in c:
        return os.path.basename(c[c.index(b"--dir") + 1])
    return None


def left_of(ids):
    """Live processes of any sandbox in ids, wherever they are now."""
    out = []
    for pid in all_pids():
        c = cmdline(pid)
        if live(pid) and (sandbox_id(c) in ids or (c and c[-1] in ids)):
            out.append(pid)
    return out


def state_dir(run_id):
    for pid in run_processes(run_id):
        c = cmdline(pid)
        if b"serve" in c and b"--state-dir" in c:
            return c[c.index(b"--state-dir") + 1].decode()
    return None


def one(sig, budget):
    r = Run(None)  # --local: the run starts its own
    name = signal.Signals(sig).name
    try:
        proc = r.start("--local", "cases/test_hold.lua", env={"ABX_LOCAL_BIN": LOCAL_BIN})
        until(lambda: len(sandboxes(r.run_id)) >= 3 or proc.poll() is not None, 90, step=0.2)
        state = state_dir(r.run_id)
        if not check(len(sandboxes(r.run_id)) == 3 and proc.poll() is None and state,
                     "%s: the run holds 3 sandboxes of its own abx-local" % name):
            out, err = r.outputs()
            print((out + err)[-3000:])
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return
        held = sandboxes(r.run_id)
        time.sleep(0.5)
        t0 = time.time()
        os.killpg(proc.pid, sig)
        proc.wait(60)
        if sig == signal.SIGINT:
            check(time.time() - t0 < 10, "SIGINT: exited within 10 s (%.1f s)" % (time.time() - t0))
            out, err = r.outputs()
            rc_is(proc.returncode, 2, "SIGINT", out, err)
        until(lambda: not run_processes(r.run_id), budget, step=0.5)
        dt = time.time() - t0
        lingering = run_processes(r.run_id)
        print("--local, %s: %d process(es) of the run left after %.1f s" % (name, len(lingering), dt))
        until(lambda: not left_of(held), 5, step=0.2)
        eq(left_of(held), [], "%s: no sandbox process left" % name)
        if not eq(lingering, [], "%s: no process of the run left within %d s" % (name, budget)):
            for pid in lingering:  # ours: started with this run's id
                print("  pid %d: %s" % (pid, b" ".join(cmdline(pid))[:120]))
                os.kill(pid, signal.SIGKILL)
        until(lambda: not os.path.exists(state), 5, step=0.2)
        check(not os.path.exists(state), "%s: the local state dir %s is removed" % (name, state))
    finally:
        r.cleanup()


def main():
    need_binaries()
    one(signal.SIGINT, 10)
    one(signal.SIGKILL, 30)
    done()


main()
