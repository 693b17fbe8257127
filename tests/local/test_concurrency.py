"""abx-local under concurrent use: parallel create / run / list / pause /
kill from several threads; everything succeeds and nothing is left."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import run_with_server  # noqa: E402
from abxtest import check  # noqa: E402

THREADS, ROUNDS = 8, 3


def worker(s, n, errors):
    try:
        for r in range(ROUNDS):
            sb = s.create("base", timeout=120, metadata={"w": str(n)}, secure=(r % 2 == 0))
            sid, tok = sb["sandboxID"], sb.get("envdAccessToken")
            code, out, _ = s.run(sid, "echo w%d-r%d; hostname" % (n, r), token=tok)
            if code != 0 or out.split() != ["w%d-r%d" % (n, r), sid]:
                errors.append("run in %s: %r" % (sid, out))
            st, lst, _, _ = s.request("GET", "/v2/sandboxes?metadata=w%%3D%d" % n)
            if st != 200 or [x["sandboxID"] for x in lst] != [sid]:
                errors.append("list w=%d: %s %r" % (n, st, lst))
            if r == 1:
                if s.request("POST", "/sandboxes/%s/pause" % sid)[0] != 204:
                    errors.append("pause %s" % sid)
                if s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})[0] != 201:
                    errors.append("connect %s" % sid)
            if s.kill(sid) != 204:
                errors.append("kill %s" % sid)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        errors.append("worker %d: %s" % (n, e))


def run(s):
    errors = []
    fds0 = len(os.listdir("/proc/%d/fd" % s.proc.pid))
    ts = [threading.Thread(target=worker, args=(s, n, errors)) for n in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(200)
    for e in errors[:10]:
        print("  " + e)
    check(errors == [], "%d threads x %d rounds of create/run/list/pause/kill" % (THREADS, ROUNDS))
    st, lst, _, _ = s.request("GET", "/v2/sandboxes")
    check(st == 200 and lst == [], "nothing listed afterwards")
    check(os.listdir(os.path.join(s.state_dir, "sandboxes")) == [], "no folder left")
    check(s.proc.poll() is None, "server alive")
    fds1 = len(os.listdir("/proc/%d/fd" % s.proc.pid))
    check(fds1 <= fds0 + 2, "no file descriptor leak (%d -> %d)" % (fds0, fds1))
    thr = len(os.listdir("/proc/%d/task" % s.proc.pid))
    check(thr <= 8, "no thread leak (%d threads)" % thr)


if __name__ == "__main__":
    run_with_server(run)
