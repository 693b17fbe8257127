"""The guarantee cases' own fixture (tests/guarantees/case_*.py): one
abx-local per case on free loopback ports with a temporary state dir
(tests/lib/abxlocal.py's Server, its data plane on a port of its own and
the source tree's templates), and abx-e2e runs in a scratch directory
holding a copy of cases/ (ledgers land there too). The platform is counted
through its REST API directly, so a count does not depend on abx-e2e's own
client.

Binaries and folders come from the environment (tests/guarantees/
CMakeLists.txt sets them): ABX_E2E_BIN, ABX_LOCAL_BIN, ABX_ENVD_BIN,
ABX_TEMPLATES_DIR. python3 stdlib only."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxlocal  # noqa: E402
from abxtest import (ALL_ABX, check, check_no_sanitizer, done, eq, load_json,  # noqa: E402
                     pids_where, remove, scratch, tail, until)

E2E_BIN = os.environ.get("ABX_E2E_BIN", "abx-e2e")
LOCAL_BIN = abxlocal.LOCAL_BIN
TEMPLATES = os.environ.get("ABX_TEMPLATES_DIR", "")


def platform():
    """`abx-local serve` for one case."""
    extra = ["--data-listen", "127.0.0.1:0"]
    if TEMPLATES:
        extra += ["--templates", TEMPLATES]
    return abxlocal.Server(extra=extra, prefix="abx-guar-state-")


def plant(p, metadata):
    """A sandbox made behind the runner's back, tagged with metadata (it
    lives 300 s); its id."""
    return p.create(metadata=metadata, timeout=300)["sandboxID"]


class Run:
    """A scratch directory with cases/ and the environment of one abx-e2e
    run against a platform (None: none; a fresh run id, CI=true, no
    colour)."""
    serial = 0

    def __init__(self, platform, run_id=None):
        self.p = platform
        self.dir = scratch("abx-guar-run-", os.path.join(HERE, "cases"))
        self.side = scratch("abx-guar-side-")  # never scanned
        Run.serial += 1
        self.run_id = run_id or "g%d-%d-%d" % (os.getpid(), int(time.time()) % 100000,
                                               Run.serial)
        self.out = self.err = None

    def env(self, extra=None):
        kw = {"E2E_SIDE_DIR": self.side, "NO_COLOR": "1"}
        kw.update(extra or {})
        return abxlocal.e2e_env(self.p, self.run_id, drop=ALL_ABX, **kw)

    def start(self, *args, env=None):
        """Popen in its own session (a signal to its group spares us);
        output to files so a killed run never blocks a pipe."""
        self.close()
        self.out = open(os.path.join(self.side, "stdout"), "w+")
        self.err = open(os.path.join(self.side, "stderr"), "w+")
        return subprocess.Popen([E2E_BIN, *args], cwd=self.dir, env=self.env(env),
                                stdout=self.out, stderr=self.err, start_new_session=True)

    def outputs(self):
        """(stdout, stderr) of the last start(); a sanitizer report in
        them (ABX_SANITIZE builds) fails the case."""
        self.out.seek(0)
        self.err.seek(0)
        out, err = self.out.read(), self.err.read()
        check_no_sanitizer(out + err, "abx-e2e")
        return out, err

    def run(self, *args, env=None, timeout=180):
        proc = self.start(*args, env=env)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            check(False, "abx-e2e %s did not finish in %d s" % (" ".join(args), timeout))
        out, err = self.outputs()
        return proc.returncode, out, err

    def report(self, name="r.json"):
        """The run's --json report NAME ({"tests": []} when it wrote none)."""
        doc = load_json(os.path.join(self.dir, name))
        return doc if isinstance(doc, dict) else {"tests": []}

    def side_file(self, name):
        path = os.path.join(self.side, name)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read()

    def close(self):
        for f in (self.out, self.err):
            if f:
                f.close()
        self.out = self.err = None

    def cleanup(self):
        self.close()
        remove(self.dir)
        remove(self.side)


def run_processes(run_id):
    """Pids of processes started with E2E_RUN_ID=run_id (runner, workers,
    guardian): read from /proc/<pid>/environ (we are root)."""
    want = ("E2E_RUN_ID=" + run_id).encode()
    return pids_where("environ", lambda env: want in env.split(b"\0"))


def start_holding(p, r, args, want, what):
    """Starts the run r with args and waits until it holds `want` tagged
    sandboxes. The process, or None (said, and the run killed) if it
    ended or never got there."""
    proc = r.start(*args)
    until(lambda: len(p.ids({"e2e": r.run_id})) >= want or proc.poll() is not None, 90,
          step=0.2)
    held = len(p.ids({"e2e": r.run_id}))
    if check(held == want and proc.poll() is None,
             "%s: the run holds %d sandboxes before the %s (got %d, rc %r)"
             % (" ".join(args), want, what, held, proc.poll())):
        return proc
    out, err = r.outputs()
    print(tail(out + err))
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return None


def all_gone(p, r, sids, what=""):
    """Checks that every sandbox of sids is gone (GET: 404), that none is
    tagged with r's run id and that the platform holds none at all."""
    pre = what + ": " if what else ""
    for sid in sids:
        eq(p.get(sid)[0], 404, "%ssandbox %s is gone" % (pre, sid))
    eq(p.ids({"e2e": r.run_id}), [], pre + "no sandbox tagged with the run id")
    eq(p.ids(), [], pre + "no sandbox at all on the platform")


def rc_is(rc, want, what, out="", err=""):
    """Checks an exit code; shows the run's output only when it is wrong."""
    ok = check(rc == want, "%s: exit code %r (want %r)" % (what, rc, want))
    if not ok:
        print(tail(out + err))
    return ok


def need_binaries():
    """Ends the case (failed) when abx-e2e or abx-local is not built."""
    for b in (E2E_BIN, LOCAL_BIN):
        if not check(os.access(b, os.X_OK), "binary built: " + b):
            done()


def main(body):
    """Runs body(platform) on a fresh abx-local, stops it, reports."""
    need_binaries()
    p = platform()
    try:
        body(p)
    finally:
        left = []
        try:
            left = p.ids()
        except Exception:  # noqa: BLE001  (the server may be gone)
            pass
        p.cleanup()
        if left:
            print("note: %d sandbox(es) were still alive when the server stopped" % len(left))
    done()
