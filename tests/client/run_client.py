"""Runs one client test scenario: starts what it needs (abx-local on
127.0.0.1 free ports with a temporary state dir, and/or a fake HTTP
server that answers broken replies), then the C driver, whose ok/FAIL
lines are the checks. python3 stdlib only.

    run_client.py DRIVER SCENARIO

Environment (set by CMakeLists.txt): ABX_LOCAL_BIN, ABX_ENVD_BIN."""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import FakeHandler, free_port, sanitizer_report, serve_in_thread  # noqa: E402

LOCAL = {"basic", "retry", "kill_many", "lost_create"}
FAKE = {"malformed", "http", "gates"}
flaky_counts = {}
flaky_lock = threading.Lock()
# The gates scenario: creates whose envd is too old (or reports no
# version), what the client sent, and which sandboxes it then deleted.
GATE_ENVD = {"old-envd": "0.0.9", "bad-envd": "x", "no-envd": None, "net": "0.5.2"}
fake_state = {"creates": [], "deleted": [], "pauses": []}


class Fake(FakeHandler):
    """Answers the broken, slow and echoing replies the drivers ask for."""

    def route(self, method):
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        path = u.path
        data = self.read_body() if method in ("POST", "PUT") else b""
        if path == "/v2/sandboxes":
            return self.reply(200, '[{"sandboxID": "abc", ')
        if path == "/sandboxes/trunc":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"sandboxID": "abc", "temp')
            self.wfile.flush()
            self.close_connection = True
            return None
        if path == "/sandboxes/badtype":
            return self.reply(200, '{"sandboxID": 5, "templateID": "t"}')
        if path == "/sandboxes/html":
            page = "<html>\n<body>\n" + "Internal\tError\r\n" * 300 + "</body></html>"
            return self.reply(500, page, "text/html")
        if path == "/sandboxes/hangup":
            self.close_connection = True
            return None
        if path == "/_fake/state":
            with flaky_lock:
                return self.reply(200, json.dumps(fake_state))
        if path == "/sandboxes" and method == "POST":
            try:
                req = json.loads(data)
            except ValueError:
                req = {}
            tmpl = req.get("templateID") if isinstance(req, dict) else None
            if tmpl in GATE_ENVD:
                with flaky_lock:
                    fake_state["creates"].append(req)
                sbx = {"sandboxID": "gate-" + tmpl, "templateID": tmpl, "clientID": "c",
                       "envdAccessToken": "tok-" + tmpl}
                if GATE_ENVD[tmpl] is not None:
                    sbx["envdVersion"] = GATE_ENVD[tmpl]
                return self.reply(201, json.dumps(sbx))
            return self.reply(201, "not json at all")
        if path.startswith("/sandboxes/gate-") and method == "DELETE":
            with flaky_lock:
                fake_state["deleted"].append(path.rsplit("/", 1)[1])
            return self.reply(204, "")
        if path.startswith("/sandboxes/gate-") and path.endswith("/pause"):
            with flaky_lock:
                fake_state["pauses"].append(data.decode(errors="replace"))
            return self.reply(204, "")
        if path.startswith("/sandboxes/") and method == "DELETE":
            return self.reply(418, '{"code": 418, "message": "I am a teapot"}')
        if path == "/download":
            n = int(q.get("n", "0"))
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = bytes(i % 251 for i in range(65536))  # byte(o) = o % 65536 % 251
            sent = 0
            while sent < n:
                piece = block[: min(len(block), n - sent)]
                self.wfile.write(piece)
                sent += len(piece)
            return None
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            return self.reply(code, '{"code": %d, "message": "error body %d"}' % (code, code))
        if path == "/echo":
            return self.reply(200, json.dumps({
                "len": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                "ct": self.headers.get("Content-Type", ""), "method": method}))
        if path == "/echo-raw":
            return self.reply(200, data, "application/octet-stream")
        if path == "/flaky":
            with flaky_lock:
                k = q.get("k", "")
                flaky_counts[k] = flaky_counts.get(k, 0) + 1
                n = flaky_counts[k]
            if n <= 2:
                return self.reply(503, '{"code": 503, "message": "busy %d"}' % n,
                                 extra={"X-Attempt": str(n)})
            return self.reply(200, "done", extra={"X-Attempt": str(n)})
        if path == "/slow":
            time.sleep(float(q.get("s", "2")))
            return self.reply(200, "slow")
        if path == "/headers":
            self.send_response(200)
            for k, v in (("Content-Type", "text/x-h"), ("X-Multi", "one"), ("Set-Cookie", "a=1"),
                         ("x-multi", "two"), ("X-Req-Seen", self.headers.get("X-Req-Secret", "")),
                         ("Content-Length", "2")):
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(b"ok")
            return None
        if path == "/bigheaders":
            self.send_response(200)
            for i in range(40):   # 40 x ~2 KiB: over the 64 KiB collection cap
                self.send_header("X-Big-%d" % i, "v" * 2000)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return None
        if path == "/token":
            return self.reply(200, "[]", "application/x-test", {"X-Next-Token": "tok123"})
        return self.reply(404, '{"code": 404, "message": "no route"}')

    def guarded(self, method):
        try:
            self.route(method)
        except (ConnectionError, BrokenPipeError):
            self.close_connection = True   # the client hung up on purpose

    def do_GET(self):
        self.guarded("GET")

    def do_POST(self):
        self.guarded("POST")

    def do_PUT(self):
        self.guarded("PUT")

    def do_DELETE(self):
        self.guarded("DELETE")


def main():
    driver, scenario = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    env.update({"E2B_API_KEY": "e2b_00000000000000000000000000000000000000aa",
                "E2B_API_URL": "http://127.0.0.1:%d" % free_port(),
                "E2B_DOMAIN": "localhost", "E2B_SANDBOX_URL": ""})
    server = fake = None
    rc = 1
    try:
        if scenario in LOCAL:
            from abxlocal import Server  # noqa: E402
            server = Server()
            env.update(server.env)
        if scenario in FAKE:
            fake, env["ABX_FAKE_URL"] = serve_in_thread(Fake)
        env["ABX_DEAD_URL"] = "http://127.0.0.1:%d" % free_port()
        rc = subprocess.run([driver, scenario], env=env, timeout=240).returncode
    finally:
        if fake:
            fake.shutdown()
        if server:
            server.cleanup()
            log = server.stderr()
            if sanitizer_report(log):
                print(log[-3000:])
                print("FAIL abx-local log has sanitizer reports")
                rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()
