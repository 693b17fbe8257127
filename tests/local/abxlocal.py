"""Helpers for the abx-local tests: start/stop a server, call its API,
run commands in a sandbox through envd's Connect API (python3 stdlib only).

Binaries come from the environment (set by tests/local/CMakeLists.txt):
ABX_LOCAL_BIN (abx-local), ABX_ENVD_BIN (abx-envd)."""
import base64
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (  # noqa: E402,F401  (re-exported for the test scripts)
    Stream, check, done, envelope, err_shape, free_port, outputs, until)

LOCAL_BIN = os.environ.get("ABX_LOCAL_BIN", "abx-local")
ENVD_BIN = os.environ.get("ABX_ENVD_BIN", "")


def run_with_server(run, **server_args):
    """The body of most test scripts: run(server) on a fresh server, which
    is then stopped, and the checks reported (exit status)."""
    s = Server(**server_args)
    try:
        run(s)
    finally:
        s.cleanup()
    done()


class Server:
    """One `abx-local serve --listen 127.0.0.1:0` with its own state dir."""

    def __init__(self, extra=None, state_dir=None, api_key=None):
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="abx-local-test-")
        self.own_dir = state_dir is None
        args = [LOCAL_BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir", self.state_dir]
        if ENVD_BIN:
            args += ["--envd", ENVD_BIN]
        if api_key:
            args += ["--api-key", api_key]
        args += extra or []
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.env = {}
        # Until "ready" or its end: a template build (mmdebstrap) may take
        # minutes on a loaded machine; ctest's TIMEOUT bounds the test.
        while True:
            line = self.proc.stdout.readline()
            if not line:
                break
            line = line.strip()
            if line == "ready":
                break
            if line.startswith("export "):
                k, v = line[7:].split("=", 1)
                self.env[k] = v
        if "E2B_API_URL" not in self.env:
            raise RuntimeError("abx-local did not start: " + self.stderr())
        self.api = urllib.parse.urlparse(self.env["E2B_API_URL"]).netloc
        self.data = urllib.parse.urlparse(self.env["E2B_SANDBOX_URL"]).netloc
        self.key = self.env["E2B_API_KEY"]

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        log = self.stderr()
        if "Sanitizer" in log or "runtime error:" in log:
            print(log[-4000:])
            check(False, "server log has sanitizer reports")
        if self.own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    # ---- control plane ----
    def request(self, method, path, body=None, headers=None, key=True, raw=None):
        c = http.client.HTTPConnection(self.api, timeout=60)
        h = {"Content-Type": "application/json"}
        if key:
            h["X-API-KEY"] = self.key if key is True else key
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, data, h)
        r = c.getresponse()
        text = r.read()
        c.close()
        try:
            js = json.loads(text) if text else None
        except ValueError:
            js = None
        return r.status, js, dict((k.lower(), v) for k, v in r.getheaders()), text

    def create(self, template="base", **kw):
        body = {"templateID": template}
        body.update(kw)
        st, js, _, text = self.request("POST", "/sandboxes", body)
        if st != 201:
            raise RuntimeError("create failed: %d %s\n%s" % (st, text, self.stderr()))
        return js

    def kill(self, sid):
        return self.request("DELETE", "/sandboxes/" + sid)[0]

    # ---- data plane ----
    def data_request(self, sid, port, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection(self.data, timeout=timeout)
        h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(port)}
        h.update(headers or {})
        c.request(method, path, body, h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data, dict((k.lower(), v) for k, v in r.getheaders())

    def run(self, sid, cmd, user="user", token=None, timeout=60):
        """Runs `bash -c cmd` via Process/Start; returns (exit code, stdout, stderr)."""
        return self.run_end(sid, cmd, user, token, timeout)[:3]

    def run_end(self, sid, cmd, user="user", token=None, timeout=60):
        """run(), plus the end event ({} when the stream had none): its
        status tells how a process killed by a signal ended."""
        msg = {"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}
        h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
             "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()}
        if token:
            h["X-Access-Token"] = token
        c = http.client.HTTPConnection(self.data, timeout=timeout)
        h.update({"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"})
        c.request("POST", "/process.Process/Start", envelope(msg), h)
        r = c.getresponse()
        if r.status != 200:
            body = r.read()
            c.close()
            raise RuntimeError("Process/Start: HTTP %d %r" % (r.status, body[:300]))
        events, end = Stream(c, r).all()
        if end and end.get("error"):
            raise RuntimeError("Process/Start error: %r" % end["error"])
        out, err, ev_end = outputs(events)
        code = ev_end.get("exitCode", 0) if ev_end is not None else None
        return code, out.decode(errors="replace"), err.decode(errors="replace"), ev_end or {}


def sandbox_processes(state_dir):
    """Host pids whose command line mentions this state dir or abx-envd
    started from it (bwrap command lines carry the state dir)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if state_dir.encode() in cmd and b"bwrap" in cmd:
            pids.append(int(p))
    return pids


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def scenario_main(scenarios):
    """Entry point of a driver holding several scenarios:
    `driver.py --bin ABX_E2E SCENARIO`, each run against a fresh server."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("scenario", choices=sorted(scenarios))
    a = ap.parse_args()
    server = Server()
    try:
        scenarios[a.scenario](os.path.abspath(a.bin), server)
    finally:
        server.cleanup()
    done()
