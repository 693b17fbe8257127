"""abx-local for the tests (python3 stdlib only): start `abx-local serve` on
127.0.0.1 free ports with its own state dir and wait for its ready line,
call its REST API (the control plane, listed directly so that a count does
not depend on abx-e2e's own client), run commands in a sandbox through
envd's Connect API, find a sandbox's processes, stop it.

Binaries come from the environment (the tests' CMakeLists.txt set them):
ABX_LOCAL_BIN (abx-local), ABX_ENVD_BIN (abx-envd); a caller may set
LOCAL_BIN / ENVD_BIN here before starting a Server (bench/local_bench.py)."""
import argparse
import base64
import glob
import http.client
import json
import os
import signal
import subprocess
import tempfile
import urllib.parse

from abxtest import (KNOBS, PLATFORM, Stream, check_no_sanitizer, cli, done, envelope,
                     outputs, pid_ns, pidns_procs, remove, scrubbed_env)

LOCAL_BIN = os.environ.get("ABX_LOCAL_BIN", "abx-local")
ENVD_BIN = os.environ.get("ABX_ENVD_BIN", "")


class Server:
    """One `abx-local serve --listen 127.0.0.1:0` with its own state dir
    (removed by cleanup() unless given). extra: more serve options (e.g.
    --profile fc, --data-listen 127.0.0.1:0, --templates DIR)."""

    def __init__(self, extra=None, state_dir=None, api_key=None, prefix="abx-local-test-"):
        self.state_dir = state_dir or tempfile.mkdtemp(prefix=prefix)
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
                self.env[k] = v.strip("\"'")
        if "E2B_API_URL" not in self.env:
            self.stop()
            raise RuntimeError("abx-local did not start: " + self.stderr())
        self.api = urllib.parse.urlparse(self.env["E2B_API_URL"]).netloc
        self.data = urllib.parse.urlparse(self.env["E2B_SANDBOX_URL"]).netloc
        self.key = self.env["E2B_API_KEY"]

    def vars(self, prefix="ABX_SANDBOX_", drop=()):
        """The settings it printed whose names start with prefix, but drop."""
        return {k: v for k, v in self.env.items() if k.startswith(prefix) and k not in drop}

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
        """Stops it; a sanitizer report in its log fails a check."""
        self.stop()
        check_no_sanitizer(self.stderr(), "abx-local's log")
        if self.own_dir:
            remove(self.state_dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    # ---- control plane ----
    def request(self, method, path, body=None, headers=None, key=True, raw=None):
        """(status, JSON body or None, headers with lower-case names, raw body)."""
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

    def get(self, sid):
        return self.request("GET", "/sandboxes/" + sid)

    def kill(self, sid):
        return self.request("DELETE", "/sandboxes/" + sid)[0]

    def faults(self, **settings):
        """POST /admin/faults (latencyMs, deleteDelayMs, errorRate...); the status."""
        return self.request("POST", "/admin/faults", settings)[0]

    def list(self, metadata=None, state="running,paused"):
        """Every sandbox (all pages) whose metadata has metadata's pairs."""
        out, token = [], None
        while True:
            q = {"state": state, "limit": "100"}
            if metadata:
                q["metadata"] = urllib.parse.urlencode(metadata)
            if token:
                q["nextToken"] = token
            st, js, hdrs, _ = self.request("GET", "/v2/sandboxes?" + urllib.parse.urlencode(q))
            if st != 200 or not isinstance(js, list):
                raise RuntimeError("GET /v2/sandboxes: HTTP %d" % st)
            out += js
            token = hdrs.get("x-next-token")
            if not token:
                return out

    def ids(self, metadata=None):
        """The ids of list(metadata), sorted."""
        return sorted(s["sandboxID"] for s in self.list(metadata))

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

    def rpc(self, sid, method, body, raw=None, token=None):
        """A unary Connect JSON call to envd as root: (HTTP status, JSON answer)."""
        data = raw if raw is not None else json.dumps(body).encode()
        h = {"Content-Type": "application/json", "Connect-Protocol-Version": "1",
             "Authorization": "Basic " + base64.b64encode(b"root:").decode()}
        if token:
            h["X-Access-Token"] = token
        st, out, _ = self.data_request(sid, 49983, "POST", method, data, h)
        try:
            return st, json.loads(out or b"null")
        except ValueError:
            return st, None

    def run(self, sid, cmd, user="user", token=None, timeout=60):
        """Runs `bash -c cmd` via Process/Start; returns (exit code, stdout, stderr)."""
        return self.run_end(sid, cmd, user, token, timeout)[:3]

    def run_end(self, sid, cmd, user="user", token=None, timeout=60, deadline_ms=None,
                errors=True, envs=None):
        """run(), plus the end event ({} when the stream had none): its
        status tells how a process killed by a signal ended. deadline_ms:
        Connect-Timeout-Ms, the process's lifetime; errors=False returns
        the stream's end error as the fifth item instead of raising;
        envs: the process's environment variables."""
        msg = {"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}
        if envs is not None:
            msg["process"]["envs"] = envs
        h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
             "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()}
        if token:
            h["X-Access-Token"] = token
        if deadline_ms:
            h["Connect-Timeout-Ms"] = str(deadline_ms)
        c = http.client.HTTPConnection(self.data, timeout=timeout)
        h.update({"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"})
        c.request("POST", "/process.Process/Start", envelope(msg), h)
        r = c.getresponse()
        if r.status != 200:
            body = r.read()
            c.close()
            raise RuntimeError("Process/Start: HTTP %d %r" % (r.status, body[:300]))
        events, end = Stream(c, r).all()
        if errors and end and end.get("error"):
            raise RuntimeError("Process/Start error: %r" % end["error"])
        out, err, ev_end = outputs(events)
        code = ev_end.get("exitCode", 0) if ev_end is not None else None
        res = code, out.decode(errors="replace"), err.decode(errors="replace"), ev_end or {}
        return res if errors else res + ((end or {}).get("error"),)

    def procs_inside(self, sid):
        """Processes in the sandbox as root sees them; a huge number while
        it cannot fork or does not answer (a fork bomb's sandbox)."""
        try:
            code, out, _ = self.run(sid, "ls -d /proc/[0-9]* | wc -l", user="root", timeout=10)
        except (RuntimeError, OSError, ValueError, http.client.HTTPException):
            return 1 << 20
        return int(out.strip()) if code == 0 and out.strip().isdigit() else 1 << 20

    # ---- a sandbox's processes on the host ----
    def sandbox_pid(self, sid):
        """Host pid of the sandbox's first process (its `pid` file)."""
        with open(os.path.join(self.state_dir, "sandboxes", sid, "pid")) as f:
            return int(f.read().split()[0])

    def envd_pid(self, sid):
        """Host pid of the sandbox's abx-envd, or None."""
        for pid, (comm, _) in pidns_procs(pid_ns(self.sandbox_pid(sid))).items():
            if comm == "abx-envd":
                return pid
        return None


def sandbox_pids(state_dir):
    """Host pids of the first process of every sandbox of a state dir."""
    out = []
    d = os.path.join(state_dir, "sandboxes")
    for sid in os.listdir(d) if os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, sid, "pid")) as f:
                out.append(int(f.read().split()[0]))
        except (OSError, ValueError):
            pass
    return out


# Where a server's srv-<pid>-<start>/ may be (abx-local/DESIGN.md, "Limits:
# cgroups"): abx-local/ of each v1 controller; on v2 the shared
# abx-local/, a systemd scope of its own, a cgroup namespace's root.
SERVER_GROUPS = ("/sys/fs/cgroup/*/abx-local", "/sys/fs/cgroup/abx-local",
                 "/sys/fs/cgroup/system.slice/abx-local-*.scope", "/sys/fs/cgroup")


def server_groups(pid="*"):
    """The parent cgroup folders of server pid's sandboxes (any server's)."""
    out = []
    for top in SERVER_GROUPS:
        out += glob.glob("%s/srv-%s-*" % (top, pid))
    return out


def cgroup_dirs(sid):
    """The sandbox's cgroup folders (v1 controllers or v2), under its
    server's srv-<pid>-<start>/."""
    return [d for d in (os.path.join(g, sid) for g in server_groups()) if os.path.isdir(d)]


def cgroup_file(sid, v1_ctrl, v1_file, v2_file):
    """The path of one of the sandbox's cgroup files (v1 or v2), or None."""
    v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    for d in cgroup_dirs(sid):
        if v2 or d.startswith("/sys/fs/cgroup/%s/" % v1_ctrl):
            p = os.path.join(d, v2_file if v2 else v1_file)
            if os.path.exists(p):
                return p
    return None


def e2e_env(server, run_id, drop=PLATFORM + KNOBS, hide=(), **extra):
    """The environment of an abx-e2e run against server (None: no
    platform): this one without the variables drop names (scrubbed_env),
    the server's ABX_SANDBOX_* settings but hide, E2E_RUN_ID=run_id,
    CI=true, and extra."""
    add = {"E2E_RUN_ID": run_id, "CI": "true"}
    add.update(server.vars("ABX_SANDBOX_", hide) if server else {})
    add.update(extra)
    return scrubbed_env(drop, **add)


def runtime_cli():
    """A test's command line `[--runtime bwrap|gvisor]`: (the runtime, ""
    for the default, and the serve options that choose it)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", default="")
    rt = ap.parse_args().runtime
    return rt, (["--runtime", rt] if rt else [])


def run_with_server(run, **server_args):
    """The body of most test scripts: run(server) on a fresh server, which
    is then stopped, and the checks reported (exit status)."""
    with Server(**server_args) as s:
        run(s)
    done()


def scenario_main(scenarios):
    """Entry point of a driver holding several scenarios:
    `driver.py --bin ABX_E2E SCENARIO`, each run against a fresh server."""
    a = cli(scenarios)
    run_with_server(lambda server: scenarios[a.scenario](a.bin, server))
