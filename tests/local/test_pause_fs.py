"""abx-local: a filesystem-only pause (E2B's `memory: false`) ends the
sandbox's processes and keeps its files; connect boots it again.

  test_pause_fs.py [--runtime bwrap|gvisor]

E2B's pause with `{"memory": false}` (the SDKs' `keepMemory: false`),
and its auto-pause with `autoPauseMemory: false`, keep the filesystem
only: a connect cold-boots the sandbox, so a process started before is
gone, the boot id is new, envd is a fresh process, and the files written
before are there. Meanwhile the paused sandbox holds no process and no
mount (its disk is released), and traffic does not wake it (autoResume
or not: E2B's SDKs say such a sandbox is resumed by connect only). A
plain pause still keeps everything, and a filesystem-paused sandbox can
be killed.

Under gVisor the root's writable layer lives in the sentry's memory: it
cannot outlive the sandbox's processes, so there a filesystem-only pause
keeps memory (docs/capabilities.md) and the server's log says why.

On 899205f `memory` was read and ignored: the `sleep` lived on, the boot
id stayed."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, runtime_cli  # noqa: E402
from abxtest import check, done, pid_ns, pidns_procs, until  # noqa: E402
from test_disk import loops_of  # noqa: E402

BOOT_ID = "cat /proc/sys/kernel/random/boot_id"
FILE = "/home/user/kept.txt"
# The base template has no procps: the sleep is looked for in /proc.
SLEEPING = "grep -qx sleep /proc/[0-9]*/comm 2>/dev/null && echo alive || echo none"


def sh(s, sid, cmd, user="user"):
    code, out, err = s.run(sid, cmd, user=user, timeout=60)
    return out.strip() if code == 0 else "exit %s: %s" % (code, err.strip()[-200:])


def prepare(s, sid):
    """A file, a background sleep and the boot id; (boot id, host pids)."""
    check(sh(s, sid, "echo kept > %s && echo ok" % FILE) == "ok", "%s: a file written" % sid)
    code, _, _ = s.run(sid, "nohup sleep 600 >/dev/null 2>&1 &")
    check(code == 0 and sh(s, sid, SLEEPING) == "alive", "%s: a background sleep runs" % sid)
    boot = sh(s, sid, BOOT_ID)
    pids = set(pidns_procs(pid_ns(s.sandbox_pid(sid))))
    return boot, pids


def state(s, sid):
    st, js, _, _ = s.get(sid)
    return js.get("state") if st == 200 and js else "HTTP %d" % st


def check_booted_again(s, sid, boot, pids, how):
    st, js, _, text = s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": 120})
    check(st == 201, "%s: connect boots it again: 201 (%d %s)" % (how, st, text[:200]))
    check(state(s, sid) == "running", "%s: running after connect" % how)
    check(sh(s, sid, "cat " + FILE) == "kept", "%s: the file written before is there" % how)
    check(sh(s, sid, SLEEPING) == "none",
          "%s: the sleep started before is gone" % how)
    new = sh(s, sid, BOOT_ID)
    check(len(new) == 36 and new != boot, "%s: a new boot id (%s, was %s)" % (how, new, boot))
    now = set(pidns_procs(pid_ns(s.sandbox_pid(sid))))
    check(not (now & pids), "%s: no process of the first boot (shared: %s)" % (how, now & pids))
    check(sh(s, sid, "echo again >> %s && wc -l < %s" % (FILE, FILE)) == "2",
          "%s: its disk is writable after the boot" % how)


def pause_fs(s, rt):
    sid = s.create("base", timeout=300)["sandboxID"]
    boot, pids = prepare(s, sid)
    st, _, _, text = s.request("POST", "/sandboxes/%s/pause" % sid, {"memory": False})
    check(st == 204, "pause {memory: false}: 204 (%d %s)" % (st, text[:200]))
    check(state(s, sid) == "paused", "paused after the pause")
    if rt == "gvisor":
        check("a filesystem-only pause keeps memory here (gVisor" in s.stderr(),
              "gVisor: the log says memory is kept, and why")
        st, _, _, _ = s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
        check(st == 201, "gVisor: connect resumes it (%d)" % st)
        check(sh(s, sid, SLEEPING) == "alive",
              "gVisor: the sleep lived through the pause (memory kept)")
        s.kill(sid)
        return
    left = [p for p in pids if os.path.exists("/proc/%d" % p)]
    check(not left, "paused: none of its processes is left on the host (%s)" % left)
    check(not loops_of(s.state_dir), "paused: its disk is not attached (%s)"
          % loops_of(s.state_dir))
    st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid, {"memory": False})
    check(st == 409, "a second pause: 409 (%d)" % st)
    check_booted_again(s, sid, boot, pids, "pause {memory: false}")
    # Paused again and killed: nothing of it is left.
    st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid, {"memory": False})
    check(st == 204 and s.kill(sid) == 204, "a filesystem-paused sandbox is killed: 204")
    check(not os.path.exists(os.path.join(s.state_dir, "sandboxes", sid)),
          "its folder is gone with it")


def auto_pause_fs(s, rt):
    # autoPause with autoPauseMemory: false, on a short timeout.
    sid = s.create("base", timeout=4, autoPause=True, autoPauseMemory=False,
                   autoResume={"enabled": True})["sandboxID"]
    boot, pids = prepare(s, sid)
    paused = until(lambda: state(s, sid) == "paused", 30, step=0.2)
    check(paused, "autoPause at the timeout (%s)" % state(s, sid))
    if rt != "gvisor":
        # E2B boots it again on an explicit connect only (its SDKs say so)
        st = s.data_request(sid, 49983, "GET", "/health")[0]
        check(st == 502 and state(s, sid) == "paused",
              "traffic does not wake a sandbox paused without memory (%s)" % st)
        check_booted_again(s, sid, boot, pids, "autoPauseMemory: false")
    s.kill(sid)


def pause_keeps_memory(s):
    sid = s.create("base", timeout=300)["sandboxID"]
    boot, _ = prepare(s, sid)
    st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid, {})
    check(st == 204, "a plain pause: 204")
    st, _, _, _ = s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})
    check(st == 201, "connect resumes it: 201")
    check(sh(s, sid, SLEEPING) == "alive",
          "a plain pause keeps the sleep")
    check(sh(s, sid, BOOT_ID) == boot, "a plain pause keeps the boot id")
    s.kill(sid)


def main():
    rt, runtime = runtime_cli()
    with Server(extra=["--profile", "e2b"] + runtime) as s:
        t0 = time.time()
        pause_fs(s, rt)
        auto_pause_fs(s, rt)
        pause_keeps_memory(s)
        print("     (%.1f s)" % (time.time() - t0))
        check(until(lambda: not loops_of(s.state_dir), 15, step=0.2),
              "no loop device holds a file of the state dir at the end")
    done()


if __name__ == "__main__":
    main()
