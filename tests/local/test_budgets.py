"""abx-local: a sandbox's per-user kernel budgets are its own, and its
share of the all-sandbox caps is a share (docs/security.md, "Budgets",
"Limits on the whole").

  test_budgets.py [--runtime bwrap|gvisor]

One sandbox takes all it can of four budgets the kernel keeps per user
and holds them: inotify instances, POSIX message queues (RLIMIT_MSGQUEUE),
queued signals (RLIMIT_SIGPENDING) and pipe buffers
(fs.pipe-user-pages-soft). While it holds them, host root and a second
sandbox must each still get one of every kind (a pipe: one of full size
that grows to 1 MiB). Under bubblewrap the kernel charges a user
namespace's usage to the namespace's owner at the host's level, and pipe
buffers to the uid a process runs as: an owner and a uid range of its own
per sandbox keep the budgets apart (owned by host root, the first sandbox
took host root's and every other sandbox's; one range for all, it took
every other sandbox's pipes). Under gVisor the sentry keeps its own. The e2b profile: its
base template has python3, which the probes are written in.

Then (bubblewrap), on a server capped at 600 pids in all, one sandbox
starts sleepers until it can fork no more: it sits at its own cap (half
the total), and a second sandbox's command and a new create still work."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, runtime_cli  # noqa: E402
from abxtest import check, done, pid_ns, pidns_procs, until  # noqa: E402

# The three budgets through libc (python3 has no inotify or mq_open).
LIBS = r'''
import ctypes, ctypes.util, fcntl, json, os, signal, sys, time
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long]  # sigval by value
def err():
    return os.strerror(ctypes.get_errno())
def queue(sig):
    """sigqueue(2) to itself: kill(2) is exempt from RLIMIT_SIGPENDING."""
    return libc.sigqueue(os.getpid(), sig, 0) == 0
'''

# Takes as much as it can of each, says how much, and holds it.
HOG = LIBS + r'''
held = {"inotify": 0, "mqueue": 0, "signals": 0, "pipes": 0}
fds = []
while held["inotify"] < 4096:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
    held["inotify"] += 1
for i in range(64):
    if rt.mq_open(b"/abx-hog-%d" % i, os.O_CREAT | os.O_RDWR, 0o600, None) < 0:
        break
    held["mqueue"] += 1
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
while held["signals"] < 1000000 and queue(sig):
    held["signals"] += 1
# Pipe buffers, charged to the uid: 1 MiB pipes until the kernel refuses to
# grow one (over fs.pipe-user-pages-soft, 64 MiB by default).
pipes = []
while held["pipes"] < 96:
    r, w = os.pipe()
    pipes.append((r, w))
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
    except OSError:
        break
    held["pipes"] += 1
print(json.dumps(held), flush=True)
time.sleep(3600)
'''

# One of each, given back at once: true, or the error's text.
PROBE = LIBS + r'''
got = {}
fd = libc.inotify_init1(0)
got["inotify"] = True if fd >= 0 else err()
if fd >= 0:
    os.close(fd)
name = b"/abx-probe-%d" % os.getpid()
q = rt.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
got["mqueue"] = True if q >= 0 else err()
if q >= 0:
    rt.mq_close(q)
    rt.mq_unlink(name)
sig = signal.SIGRTMIN + 1
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
if queue(sig):
    signal.sigtimedwait([sig], 0)
    got["signals"] = True
else:
    got["signals"] = err()
r, w = os.pipe()
size = fcntl.fcntl(w, F_GETPIPE_SZ)
try:
    fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
    got["pipes"] = True if size == 65536 else "a new pipe holds %d bytes" % size
except OSError as e:
    got["pipes"] = "a pipe cannot grow to 1 MiB: " + e.strerror
print(json.dumps(got))
'''

# Forks sleepers until the kernel refuses one; prints how many after a
# moment at the cap (envd must not need a new task for it then).
SLEEPERS = """import os, time
n = 0
while n < 2000:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:   # not holding the output pipes: the command ends
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execvp("sleep", ["sleep", "300"])
    n += 1
time.sleep(0.5)
print(n)"""

KINDS = ("inotify", "mqueue", "signals", "pipes")
# What the hog must hold for the probes to mean anything: the kernel's
# defaults are 128 instances, 9 default-sized queues (819200 bytes) and
# RLIMIT_SIGPENDING (thousands), MiB of pipes (64). gVisor's sentry keeps its
# own, and queues at most 32 signals a task.
AT_LEAST = {"inotify": 100, "mqueue": 5, "signals": 1000, "pipes": 48}
AT_LEAST_GVISOR = {"inotify": 100, "mqueue": 5, "signals": 32, "pipes": 48}


def put(s, sid, path, text):
    code, _, err = s.run(sid, "cat > %s <<'ABX_EOF'\n%sABX_EOF" % (path, text), user="root")
    check(code == 0, "wrote %s in %s (%s)" % (path, sid, err[-200:]))


def probe_sandbox(s, sid, who):
    code, out, err = s.run(sid, "python3 /tmp/probe.py", user="root", timeout=60)
    check(code == 0, "%s: the probe ran (exit %s: %s)" % (who, code, err[-300:]))
    return json.loads(out) if code == 0 else {}


def probe_host():
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, "host root: the probe ran (%s)" % p.stderr[-300:])
    return json.loads(p.stdout) if p.returncode == 0 else {}


def fair_caps():
    with Server(extra=["--profile", "e2b", "--max-pids", "600"]) as s:
        hog, other = (s.create("base", timeout=300)["sandboxID"] for _ in range(2))
        try:   # sleepers until fork fails (bash would retry it for a minute)
            code, out, err, end = s.run_end(hog, "python3 -c '%s'" % SLEEPERS, user="user",
                                            timeout=60)[:4]
            # its waiter predates it, or envd finds no task for one
            check(code == 0 and out.strip().isdigit(), "the hog's command ends and says "
                  "how many sleepers it started: %s (exit %s, end %s, stderr %r)"
                  % (out.strip(), code, end, err[-300:]))
        except (OSError, RuntimeError, ValueError) as e:
            print("     (the hog's command: %s)" % type(e).__name__)
        n = len(pidns_procs(pid_ns(s.sandbox_pid(hog))))
        check(250 <= n <= 300, "the hog sits at its own cap, half of 600 (%d processes)" % n)
        try:
            code, out, _ = s.run(other, "echo neighbour", user="user", timeout=30)
        except (OSError, RuntimeError, ValueError) as e:
            code, out = None, str(e)[:200]
        check(code == 0 and "neighbour" in out, "a second sandbox's command runs (%s: %s)"
              % (code, out.strip()))
        try:
            third = s.create("base", timeout=120)["sandboxID"]
        except RuntimeError as e:
            third = None
            print("     (%s)" % str(e)[:200])
        check(bool(third), "a new sandbox is created while the hog sits at its cap")
        for sid in (hog, other, third):
            if sid:
                s.kill(sid)


def main():
    rt, runtime = runtime_cli()
    with Server(extra=["--profile", "e2b"] + runtime) as s:
        hog, other = (s.create("base", timeout=300)["sandboxID"] for _ in range(2))
        put(s, hog, "/tmp/hog.py", HOG)
        for sid in (hog, other):
            put(s, sid, "/tmp/probe.py", PROBE)
        code, _, err = s.run(hog, "nohup python3 /tmp/hog.py > /tmp/hog.out 2>&1 &",
                             user="root")
        check(code == 0, "the hog started (%s)" % err[-200:])

        def held():
            code, out, _ = s.run(hog, "cat /tmp/hog.out", user="root")
            return json.loads(out) if code == 0 and out.strip().startswith("{") else None
        got = until(held, 60, step=0.5)
        check(got is not None, "the hog says what it holds")
        got = got or {}
        print("     the hog holds %s" % got, flush=True)
        least = AT_LEAST_GVISOR if rt == "gvisor" else AT_LEAST
        for k in KINDS:
            check(got.get(k, 0) >= least[k], "the hog holds %s of %s (at least %d)"
                  % (got.get(k), k, least[k]))
        for who, res in (("host root", probe_host()), ("a second sandbox",
                                                       probe_sandbox(s, other, "other"))):
            for k in KINDS:
                check(res.get(k) is True, "%s gets %s while the hog holds its own (%s)"
                      % (who, k, res.get(k)))
        # The hog still holds them: nothing was given back meanwhile.
        code, out, _ = s.run(hog, "grep -qs hog.py /proc/[0-9]*/cmdline && echo holding",
                             user="root")
        check("holding" in out, "the hog held on through the probes")
        s.kill(hog)
        s.kill(other)
    if rt != "gvisor":   # processes inside are the sentry's tasks there
        fair_caps()
    done()


if __name__ == "__main__":
    main()
