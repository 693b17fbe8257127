"""Test harness for abx-envd: runs the daemon inside bubblewrap the way
abx-local does (own /home/user, /root, /tmp, passwd with `user` 1000 and
`root`), except that the network is shared so the test reaches it on a free
127.0.0.1 port. Speaks REST and Connect JSON (unary and server streams)."""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (Stream, all_pids, check, check_no_sanitizer, envelope, free_port, proc_stat,  # noqa: E402
                     read_text, remove, until)


def multipart(parts):
    """parts: list of (field, filename, bytes)."""
    b = "----abx" + uuid.uuid4().hex
    body = b""
    for field, fname, data in parts:
        body += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
                 "filename=\"%s\"\r\nContent-Type: application/octet-stream"
                 "\r\n\r\n" % (b, field, fname)).encode() + data + b"\r\n"
    body += ("--%s--\r\n" % b).encode()
    return body, {"Content-Type": "multipart/form-data; boundary=" + b}

class Envd:
    def __init__(self, binary, token=None, env_vars=None, start=None,
                 default_user="user", compat=None, setup=None):
        """compat: config.json's `compat` object (abx-local's profiles).
        setup(self): runs before envd starts (dirs made); what it appends
        to self.cleanups runs after envd stopped."""
        self.dir = tempfile.mkdtemp(prefix="abx-envd-test-")
        self.home = os.path.join(self.dir, "home")
        self.rootdir = os.path.join(self.dir, "root")
        self.tmp = os.path.join(self.dir, "tmp")
        run = os.path.join(self.dir, "run")
        etc = os.path.join(self.dir, "etc")
        for d in (self.home, self.rootdir, self.tmp, run, etc):
            os.makedirs(d)
        os.chown(self.home, 1000, 1000)
        os.chmod(self.tmp, 0o1777)
        with open(os.path.join(etc, "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/bash\n"
                    "user:x:1000:1000:user:/home/user:/bin/bash\n"
                    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
        with open(os.path.join(etc, "group"), "w") as f:
            f.write("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n")
        cfg = {"sandboxID": "sbxtest", "templateID": "base",
               "envVars": env_vars or {}, "defaultUser": default_user}
        if token:
            cfg["accessToken"] = token
        if start:
            cfg["start"] = start
        if compat is not None:
            cfg["compat"] = compat
        with open(os.path.join(run, "config.json"), "w") as f:
            json.dump(cfg, f)
        os.chmod(os.path.join(run, "config.json"), 0o600)
        self.token = token
        self.cleanups = []
        if setup:
            setup(self)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "envd.log"), "w")
        cmd = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc",
               "--unshare-uts", "--hostname", "sbxtest",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--tmpfs", "/home", "--tmpfs", "/run",
               "--bind", self.home, "/home/user", "--bind", self.rootdir, "/root",
               "--bind", self.tmp, "/tmp",
               "--ro-bind", os.path.join(etc, "passwd"), "/etc/passwd",
               "--ro-bind", os.path.join(etc, "group"), "/etc/group",
               "--ro-bind", run, "/run/abx",
               # The binary may live under /tmp (a clone there), which the
               # sandbox's own /tmp hides: bind it where abx-local does.
               "--tmpfs", "/opt", "--perms", "0755", "--dir", "/opt/abx",
               "--perms", "0755", "--dir", "/opt/abx/bin",
               "--ro-bind", os.path.abspath(binary), "/opt/abx/bin/abx-envd",
               "--cap-add", "CAP_SETUID,CAP_SETGID,CAP_KILL,CAP_CHOWN,"
                            "CAP_DAC_OVERRIDE,CAP_FOWNER",
               "--", "/opt/abx/bin/abx-envd", "--config", "/run/abx/config.json",
               "--port", str(self.port), "--listen-addr", "127.0.0.1"]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        if until(lambda: self.healthy() or self.proc.poll() is not None, 15) and \
                self.proc.poll() is None:
            return
        log = read_text(os.path.join(self.dir, "envd.log"), "")
        self.stop()
        raise RuntimeError("abx-envd did not become healthy; log:\n" + log)

    def healthy(self):
        try:
            return self.request("GET", "/health")[0] == 204
        except OSError:
            return False

    def envd_pid(self):
        """Host pid of the abx-envd that our bwrap started, or None."""
        parents = {}
        for d in all_pids():
            st = proc_stat(d)
            if st:
                parents[d] = (int(st[1][1]), st[0])
        for pid, (ppid, comm) in parents.items():
            if comm != "abx-envd":
                continue
            while ppid > 1 and ppid != self.proc.pid:
                ppid = parents.get(ppid, (0, ""))[0]
            if ppid == self.proc.pid:
                return pid
        return None

    def stop(self):
        # An orderly SIGTERM first: envd must stop by itself (and sanitizer
        # builds then check for leaks); bwrap's pid namespace ends the rest.
        pid = self.envd_pid() if self.proc.poll() is None else None
        if pid:
            os.kill(pid, 15)
            check(until(lambda: not os.path.exists("/proc/%d" % pid), 10),
                  "abx-envd stops on SIGTERM")
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        for fn in reversed(self.cleanups):
            fn()
        self.cleanups = []
        # Sanitizer builds (ABX_SANITIZE) report memory errors here.
        check_no_sanitizer(read_text(os.path.join(self.dir, "envd.log"), ""), "the envd log")
        remove(self.dir)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()

    # --- plain HTTP ---
    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def headers(self, extra=None, token=True, user=None):
        h = {}
        if token and self.token:
            h["X-Access-Token"] = self.token
        if user is not None:
            h["Authorization"] = "Basic " + base64.b64encode(
                (user + ":").encode()).decode()
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read(), dict((k.lower(), v) for k, v in r.getheaders())
        finally:
            c.close()

    def files_url(self, **q):
        return "/files?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote,
                                                  safe="")

    # --- Connect ---
    def unary(self, proc, msg, user=None, token=True, extra=None, raw=None):
        h = self.headers({"Content-Type": "application/json",
                          "Connect-Protocol-Version": "1"}, token, user)
        h.update(extra or {})
        body = raw if raw is not None else json.dumps(msg).encode()
        st, data, _ = self.request("POST", "/" + proc, body, h)
        try:
            return st, json.loads(data) if data else None
        except ValueError:
            return st, data

    def stream(self, proc, msg, user=None, token=True, extra=None, raw=None,
               timeout=60):
        h = self.headers({"Content-Type": "application/connect+json",
                          "Connect-Protocol-Version": "1"}, token, user)
        h.update(extra or {})
        c = self.conn(timeout)
        c.request("POST", "/" + proc, body=raw if raw is not None else envelope(msg),
                  headers=h)
        return Stream(c, c.getresponse())

    def run(self, cmd, user=None, extra=None, **kw):
        """Process/Start of bash -l -c cmd; returns (events, end_stream)."""
        req = {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]},
               "stdin": False}
        req["process"].update(kw)
        return self.stream("process.Process/Start", req, user=user,
                           extra=extra).all()

