"""Thousands of back-to-back Process/Start calls in one sandbox through the
data-plane proxy all succeed, and envd's open file descriptors stay bounded.

Regression: envd kept each exited process's pidfd open for the 30 s it
retains the process for late Connects, so ~1 fd leaked per Start; past
FD_SETSIZE (1024) fds its select()-based libmicrohttpd loop dropped new
connections and the proxy answered 502 "The sandbox did not answer on port
49983". The fd bound catches the leak even on a machine too slow to reach
1024 fds within the 30 s window. The second phase makes envd hold more than
1024 fds on purpose (background processes keep their output pipes open)
and checks that it still accepts connections (poll(), not select())."""
import base64
import http.client
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import run_with_server  # noqa: E402
from abxtest import Stream, check, envelope  # noqa: E402

STARTS = 3000
FD_BOUND = 128  # a handful per live connection/process, never one per Start
BACKGROUND = 600  # 2 pipe fds each: well past FD_SETSIZE


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def open_stream(s, sid, cmd):
    """A Process/Start whose response stream is left open (until closed)."""
    msg = {"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}
    h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
         "Authorization": "Basic " + base64.b64encode(b"user:").decode(),
         "E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"}
    c = http.client.HTTPConnection(s.data, timeout=60)
    c.request("POST", "/process.Process/Start", envelope(msg), h)
    r = c.getresponse()
    check(r.status == 200, "held stream started (HTTP %d)" % r.status)
    Stream(c, r).next()  # the start event: envd has the connection
    return c


def run(s):
    sb = s.create("base", timeout=300)
    sid = sb["sandboxID"]
    pid = s.envd_pid(sid)
    check(pid is not None, "found the sandbox's envd")
    failures, max_fds = [], 0
    for i in range(STARTS):
        try:
            code, _, _ = s.run(sid, "true")
            if code != 0:
                failures.append("%d: exit %r" % (i, code))
        except Exception as e:  # noqa: BLE001 - counted as a failure
            failures.append("%d: %s" % (i, e))
        if pid and i % 100 == 99:
            max_fds = max(max_fds, fd_count(pid))
    for f in failures[:5]:
        print("  " + f)
    check(failures == [], "%d sequential Process/Start through the proxy: %d failed"
          % (STARTS, len(failures)))
    if pid:
        check(0 < max_fds <= FD_BOUND,
              "envd's open fds stay bounded (max %d, bound %d)" % (max_fds, FD_BOUND))
    # Phase 2: > FD_SETSIZE fds held legitimately, connections still served.
    failures = []
    # Background commands as the SDKs start them: the Start stream is
    # dropped after its start event and envd keeps the process and its
    # output pipes.
    for i in range(BACKGROUND):
        try:
            open_stream(s, sid, "sleep 600").close()
        except Exception as e:  # noqa: BLE001 - counted as a failure
            failures.append("bg %d: %s" % (i, e))
    held = fd_count(pid) if pid else -1
    # A streaming Start held open takes the low fd each sequential request
    # reused, so the next connections get fds above all those pipes.
    hold = open_stream(s, sid, "sleep 60")
    for i in range(200):
        try:
            code, out, _ = s.run(sid, "echo ok")
            if code != 0 or out != "ok\n":
                failures.append("%d: exit %r out %r" % (i, code, out))
        except Exception as e:  # noqa: BLE001 - counted as a failure
            failures.append("%d: %s" % (i, e))
    hold.close()
    for f in failures[:5]:
        print("  " + f)
    check(failures == [], "Starts while envd holds %d fds: %d failed" % (held, len(failures)))
    if pid:
        check(held > 1100, "envd held more than FD_SETSIZE fds (%d)" % held)
    check(s.kill(sid) == 204, "sandbox killed")
    log = s.stderr()
    check("Sanitizer" not in log, "no sanitizer report in the server log")


if __name__ == "__main__":
    run_with_server(run)
