"""Shared by the guarantee drivers (tests/guarantees/case_*.py): one
abx-local per case on free loopback ports with a temporary state dir, the
platform's REST API read directly (GET /v2/sandboxes with X-API-KEY, so
the count does not depend on abx-e2e's own client), and abx-e2e runs in a
scratch directory holding a copy of cases/ (ledgers land there too).

Binaries and folders come from the environment (tests/guarantees/
CMakeLists.txt sets them): ABX_E2E_BIN, ABX_LOCAL_BIN, ABX_ENVD_BIN,
ABX_TEMPLATES_DIR. python3 stdlib only."""
import base64
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import check, done, eq  # noqa: E402,F401  (re-exported)

E2E_BIN = os.environ.get("ABX_E2E_BIN", "abx-e2e")
LOCAL_BIN = os.environ.get("ABX_LOCAL_BIN", "abx-local")
ENVD_BIN = os.environ.get("ABX_ENVD_BIN", "")
TEMPLATES = os.environ.get("ABX_TEMPLATES_DIR", "")


class Platform:
    """`abx-local serve` on 127.0.0.1 free ports with its own state dir."""

    def __init__(self):
        self.state = tempfile.mkdtemp(prefix="abx-guar-state-")
        args = [LOCAL_BIN, "serve", "--listen", "127.0.0.1:0",
                "--data-listen", "127.0.0.1:0", "--state-dir", self.state]
        if ENVD_BIN:
            args += ["--envd", ENVD_BIN]
        if TEMPLATES:
            args += ["--templates", TEMPLATES]
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True)
        self.env = {}
        # Until "ready" or its end (a template build under load can be
        # slow); ctest's TIMEOUT bounds the test.
        while True:
            line = self.proc.stdout.readline()
            if not line or line.strip() == "ready":
                break
            if line.startswith("export "):
                k, v = line[7:].strip().split("=", 1)
                self.env[k] = v.strip("\"'")
        if "ABX_SANDBOX_API_KEY" not in self.env:
            self.stop()
            raise RuntimeError("abx-local did not start")
        self.key = self.env["ABX_SANDBOX_API_KEY"]
        self.api = urllib.parse.urlparse(self.env["ABX_SANDBOX_BASE_URL"]).netloc

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection(self.api, timeout=60)
        h = {"X-API-KEY": self.key, "Content-Type": "application/json"}
        c.request(method, path, json.dumps(body) if body is not None else None, h)
        r = c.getresponse()
        text = r.read()
        hdrs = dict((k.lower(), v) for k, v in r.getheaders())
        c.close()
        try:
            js = json.loads(text) if text else None
        except ValueError:
            js = None
        return r.status, js, hdrs

    def list(self, metadata=None, state="running,paused"):
        """Every sandbox (all pages) matching the metadata filter."""
        out, token = [], None
        while True:
            q = {"state": state, "limit": "100"}
            if metadata:
                q["metadata"] = urllib.parse.urlencode(metadata)
            if token:
                q["nextToken"] = token
            st, js, hdrs = self.request("GET", "/v2/sandboxes?" + urllib.parse.urlencode(q))
            if st != 200 or not isinstance(js, list):
                raise RuntimeError("GET /v2/sandboxes: HTTP %d" % st)
            out += js
            token = hdrs.get("x-next-token")
            if not token:
                return out

    def ids(self, metadata=None):
        return sorted(s["sandboxID"] for s in self.list(metadata))

    def get(self, sid):
        return self.request("GET", "/sandboxes/" + sid)

    def create(self, metadata=None, template="base", secure=False):
        body = {"templateID": template, "timeout": 300, "metadata": metadata or {}}
        if secure:
            body["secure"] = True
        st, js, _ = self.request("POST", "/sandboxes", body)
        if st != 201:
            raise RuntimeError("POST /sandboxes: HTTP %d %r" % (st, js))
        return js

    def kill(self, sid):
        return self.request("DELETE", "/sandboxes/" + sid)[0]


class Run:
    """A scratch directory with cases/ and the environment of one abx-e2e
    run against a Platform (fresh run id, CI=true, no colour)."""
    serial = 0

    def __init__(self, platform, run_id=None):
        self.p = platform
        self.dir = tempfile.mkdtemp(prefix="abx-guar-run-")
        shutil.copytree(os.path.join(HERE, "cases"), os.path.join(self.dir, "cases"))
        self.side = tempfile.mkdtemp(prefix="abx-guar-side-")  # never scanned
        Run.serial += 1
        self.run_id = run_id or "g%d-%d-%d" % (os.getpid(), int(time.time()) % 100000,
                                               Run.serial)
        self.out = self.err = None

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ABX_", "E2B_", "E2E_"))}
        env.update({k: v for k, v in self.p.env.items() if k.startswith("ABX_SANDBOX_")})
        env.update({"E2E_RUN_ID": self.run_id, "E2E_SIDE_DIR": self.side,
                    "NO_COLOR": "1", "CI": "true"})
        env.update(extra or {})
        return env

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
        for mark in ("Sanitizer", "runtime error:"):
            if mark in out + err:
                check(False, "abx-e2e reported a sanitizer error:\n" + tail(out + err))
                break
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
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.side, ignore_errors=True)


def run_processes(run_id):
    """Pids of processes started with E2E_RUN_ID=run_id (runner, workers,
    guardian): read from /proc/<pid>/environ (we are root)."""
    want = ("E2E_RUN_ID=" + run_id).encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if want in f.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            continue
    return pids


def poll(fn, timeout, step=0.2):
    """fn() until truthy or timeout; returns (value, seconds waited)."""
    t0 = time.time()
    while True:
        v = fn()
        if v or time.time() - t0 >= timeout:
            return v, time.time() - t0
        time.sleep(step)


def start_holding(p, r, args, want, what):
    """Starts the run r with args and waits until it holds `want` tagged
    sandboxes. The process, or None (said, and the run killed) if it
    ended or never got there."""
    proc = r.start(*args)
    poll(lambda: len(p.ids({"e2e": r.run_id})) >= want or proc.poll() is not None, 90)
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


def tail(text, n=3000):
    return text[-n:]


def rc_is(rc, want, what, out="", err=""):
    """Checks an exit code; shows the run's output only when it is wrong."""
    ok = check(rc == want, "%s: exit code %r (want %r)" % (what, rc, want))
    if not ok:
        print(tail(out + err))
    return ok


def forms(secret, public=()):
    """The encodings under which a leaked secret would show up, as
    {form: what it is}: itself, URL-encoded (once, and twice: a signed URL
    inside another URL), base64 (standard / URL-safe, with and without
    padding), and every run of 16+ letters and digits in it, which survives
    any encoding that leaves alphanumerics alone (JSON, double
    percent-encoding...), but those in `public` (a sandbox id in a signed
    URL's host is printed legitimately)."""
    raw = secret.encode()
    once = urllib.parse.quote(secret, safe="")
    out = {}
    for f in re.findall(r"[A-Za-z0-9]{16,}", secret):
        if f not in public:
            out[f] = "a 16+ alphanumeric run of it"
    for b in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out[b] = out[b.rstrip("=")] = "base64"
    out[urllib.parse.quote_plus(secret)] = "form-encoded"
    out[urllib.parse.quote(once, safe="")] = "double URL-encoded"
    out[once] = "URL-encoded"
    out[secret] = "raw"
    return {f: k for f, k in out.items() if len(f) >= 8}


def main(body):
    """Runs body(platform) on a fresh abx-local, stops it, reports."""
    for b in (E2E_BIN, LOCAL_BIN):
        if not os.access(b, os.X_OK):
            check(False, "binary not built: " + b)
            done()
    p = Platform()
    try:
        body(p)
    finally:
        left = []
        try:
            left = p.ids()
        except Exception:  # noqa: BLE001  (the server may be gone)
            pass
        p.stop()
        if left:
            print("note: %d sandbox(es) were still alive when the server stopped" % len(left))
    done()
