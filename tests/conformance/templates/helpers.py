"""Shared helpers of the template unit tests: start a template's server on a
free loopback port and talk HTTP to it (standard library only)."""
import http.client
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.environ.get("ABX_TEMPLATES_DIR") or os.path.normpath(
    os.path.join(HERE, "..", "..", "..", "abx-local", "templates"))
PYTHON = os.environ.get("ABX_PYTHON") or "/usr/bin/python3"


class Server:
    """A template server process on 127.0.0.1:<free port>."""

    def __init__(self, template, extra_args=(), env=None, cwd=None):
        script = os.path.join(TEMPLATES, template, "app", "server.py")
        self.proc = subprocess.Popen(
            [PYTHON, "-B", script, "--host", "127.0.0.1", "--port", "0", *extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True)
        deadline = time.monotonic() + 20
        self.port = None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.stop()
            raise RuntimeError("%s server did not start" % template)

    def request(self, method, path, body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = dict(headers or {})
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
                hdrs.setdefault("Content-Type", "application/json")
            elif isinstance(body, str):
                body = body.encode()
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, dict(resp.getheaders()), data
        finally:
            conn.close()

    def json(self, method, path, body=None, **kw):
        status, headers, data = self.request(method, path, body, **kw)
        return status, (json.loads(data) if data else None)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


def template_json(name):
    with open(os.path.join(TEMPLATES, name, "template.json")) as f:
        return json.load(f)


if __name__ == "__main__":
    sys.exit("helpers only")
