"""abx-local: a command's timeout ends everything the command started
(docs/security.md, "A timeout ends everything").

  test_deadline.py [--runtime bwrap|gvisor]

envd's deadline (Connect-Timeout-Ms on Process/Start) must reach what
left the command's process group: a new session (setsid), a double fork,
the child of timeout(1), a new session's double fork. Each leaves a
`sleep 60N` behind; none may outlive the deadline by more than a few
seconds. Then (bubblewrap) a fork bomb in a new session, on a server
capped at 300 pids: the sandbox answers `echo` within 5 s of the deadline
and its processes come back to their idle count. Under gVisor a bomb may
take its own sandbox down (docs/security.md): test_hostile.py covers it."""
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, runtime_cli  # noqa: E402
from abxtest import check, done, until  # noqa: E402

ESCAPES = [
    ("setsid", "setsid sleep 601 & sleep 60"),
    ("a double fork", "(sleep 602 &); sleep 60"),
    ("timeout(1)'s child", "timeout 300 sleep 603 & sleep 60"),
    ("a new session's double fork", "setsid bash -c '(sleep 604 &)'; sleep 60"),
    ("nohup in a new session", "setsid nohup sleep 605 >/dev/null 2>&1 & sleep 60"),
]
# How many `sleep 60N` run: command lines one a line (NULs made spaces);
# the pattern does not match the grep that looks for it.
SLEEPERS = ("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done "
            "| grep -c '^sleep 60[%d] *$' || true")
ERRORS = (OSError, ValueError, RuntimeError, http.client.HTTPException)


def sleepers(s, sid, n):
    code, out, _ = s.run(sid, SLEEPERS % n, user="root", timeout=30)
    return int(out.strip()) if code == 0 and out.strip().isdigit() else -1


def escapes(s, sid):
    for n, (name, cmd) in enumerate(ESCAPES, 1):
        t0 = time.time()
        _, _, _, _, error = s.run_end(sid, cmd, user="user", timeout=60, deadline_ms=1500,
                                      errors=False)
        check(time.time() - t0 < 20 and error is not None,
              "%s: the command ended at its deadline (%.1f s, %s)"
              % (name, time.time() - t0, (error or {}).get("code")))
        left = until(lambda: sleepers(s, sid, n) == 0, 5, step=0.2)
        check(left, "%s: nothing it started outlives the deadline (%d sleeping)"
              % (name, sleepers(s, sid, n)))


def answers(s, sid):
    try:
        code, out, _ = s.run(sid, "echo alive", user="root", timeout=5)
        return code == 0 and "alive" in out
    except ERRORS:
        return False


def session_bomb(s, sid):
    before = s.procs_inside(sid)
    t0 = time.time()
    try:
        s.run_end(sid, "setsid bash -c 'bomb() { bomb | bomb & }; bomb'; sleep 60",
                  user="user", timeout=120, deadline_ms=4000, errors=False)
    except ERRORS as e:
        print("     (the bomb's stream ended: %s)" % type(e).__name__)
    ended = time.time()
    check(ended - t0 < 30, "the session bomb's command ended at its timeout (%.1f s)"
          % (ended - t0))
    ok = until(lambda: answers(s, sid), 5, step=0.2)
    check(ok, "the sandbox answers echo within 5 s of the deadline (%.1f s)"
          % (time.time() - ended))
    after = until(lambda: (lambda n: n if n <= before else None)(s.procs_inside(sid)), 10,
                  step=0.5)
    check(after is not None, "its processes are back to their idle count (%d before, %d now)"
          % (before, s.procs_inside(sid)))


def main():
    rt, runtime = runtime_cli()
    with Server(extra=["--max-pids", "300"] + runtime) as s:
        sid = s.create("base", timeout=300)["sandboxID"]
        escapes(s, sid)
        if rt != "gvisor":
            session_bomb(s, sid)
        s.kill(sid)
    done()


if __name__ == "__main__":
    main()
