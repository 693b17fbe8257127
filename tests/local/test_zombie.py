"""A server killed under a parent that never reaps it (a container's pid 1
without --init) stays a zombie: its pid and start time are still in
/proc, but it is dead. The next server, and `abx-local gc`, must take it
for dead and remove its sandboxes' cgroups (within 5 s of starting), and
a live server's are left alone."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, Server, cgroup_dirs  # noqa: E402
from abxtest import check, done, until  # noqa: E402


def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def zombie_server():
    """A server with two sandboxes, SIGKILLed and left unreaped: its
    Popen is never waited for (this process is the parent that does not
    reap). Returns (server, sandbox ids)."""
    dead = Server()
    ids = [dead.create("base", timeout=300)["sandboxID"] for _ in range(2)]
    os.kill(dead.proc.pid, signal.SIGKILL)
    check(until(lambda: state(dead.proc.pid) == "Z", 5),
          "the killed server is a zombie (state %s)" % state(dead.proc.pid))
    check(all(cgroup_dirs(x) for x in ids), "its sandboxes' cgroups are still there")
    return dead, ids


def main():
    live = Server()
    keep = live.create("base", timeout=300)["sandboxID"]
    for how in ("next server", "abx-local gc"):
        dead, ids = zombie_server()
        t0 = time.monotonic()
        if how == "next server":
            nxt = Server()
        else:
            r = subprocess.run([LOCAL_BIN, "gc"], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, "abx-local gc: exit 0 (%r)" % r.stderr[-300:])
        gone = until(lambda: not any(cgroup_dirs(x) for x in ids), 5 - (time.monotonic() - t0))
        check(gone, "%s: the zombie server's cgroups are removed within 5 s of its start (%s)"
              % (how, [x for x in ids if cgroup_dirs(x)]))
        if how == "next server":
            nxt.cleanup()
        dead.proc.wait()   # reaped at last
        dead.cleanup()
        check(cgroup_dirs(keep) and live.run(keep, "echo ok")[1].strip() == "ok",
              "%s: a live server's sandbox is left alone" % how)
    live.cleanup()
    done()


if __name__ == "__main__":
    main()
