"""abx-local data plane: pass-through fidelity, streaming both ways without
buffering, client disconnect, and fault injection (admin endpoint)."""
import hashlib
import http.client
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import run_with_server  # noqa: E402
from abxtest import check  # noqa: E402

ECHO = r'''
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding") == "chunked":
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline(); break
                body += self.rfile.read(size); self.rfile.readline()
        out = json.dumps({"method": self.command, "path": self.path,
                          "headers": {k.lower(): v for k, v in self.headers.items()},
                          "len": len(body)}).encode()
        code = 404 if self.path.startswith("/missing") else 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "yes")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = any
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()
'''


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def rss_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run(s):
    sid = s.create("code-interpreter-v1", timeout=300)["sandboxID"]   # python3
    code, _, err = s.run(sid, "cat > /home/user/echo.py <<'EOF'\n%s\nEOF\n"
                              "nohup python3 /home/user/echo.py >/dev/null 2>&1 &" % ECHO)
    check(code == 0, "start an echo server in the sandbox")
    deadline = time.time() + 10
    while time.time() < deadline and s.data_request(sid, 8080, "GET", "/")[0] != 200:
        time.sleep(0.1)

    # ---- fidelity ----
    st, body, h = s.data_request(sid, 8080, "PATCH", "/a%2Fb/c?x=1&y=%20z",
                                 body=b"12345", headers={"X-Custom": "v1", "Content-Type": "text/x"})
    e = json.loads(body)
    check(st == 200 and e["method"] == "PATCH", "method passes through")
    check(e["path"] == "/a%2Fb/c?x=1&y=%20z", "path and query pass verbatim: %r" % e["path"])
    check(e["headers"].get("x-custom") == "v1" and e["headers"].get("content-type") == "text/x",
          "request headers pass through")
    check(e["len"] == 5, "request body passes through")
    check(h.get("x-upstream") == "yes" and h.get("content-length") == str(len(body)),
          "response headers (and Content-Length) pass back")
    st, body, _ = s.data_request(sid, 8080, "GET", "/g", headers={"Content-Length": "0"})
    check(st == 200 and json.loads(body)["method"] == "GET", "GET with Content-Length: 0 stays GET")
    st, body, _ = s.data_request(sid, 8080, "DELETE", "/d")
    check(st == 200 and json.loads(body)["method"] == "DELETE", "DELETE without body")
    st, body, _ = s.data_request(sid, 8080, "GET", "/missing")
    check(st == 404, "upstream status passes back (404)")
    st, body, h = s.data_request(sid, 8080, "HEAD", "/")
    check(st == 200 and body == b"" and h.get("x-upstream") == "yes", "HEAD")
    c = http.client.HTTPConnection(s.data, timeout=30)
    c.putrequest("POST", "/chunked")
    for k, v in (("E2b-Sandbox-Id", sid), ("E2b-Sandbox-Port", "8080"),
                 ("Transfer-Encoding", "chunked")):
        c.putheader(k, v)
    c.endheaders()
    for part in (b"abc", b"defgh"):
        c.send(b"%x\r\n%s\r\n" % (len(part), part))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    e = json.loads(r.read())
    check(r.status == 200 and e["len"] == 8, "chunked request body arrives whole")
    # keep-alive: several requests on one client connection
    ok = True
    for i in range(5):
        c.request("GET", "/k%d" % i, headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8080"})
        r = c.getresponse()
        ok = ok and r.status == 200 and json.loads(r.read())["path"] == "/k%d" % i
    check(ok, "keep-alive connection carries several proxied requests")
    c.close()

    # ---- Connect server stream arrives as produced ----
    msg = json.dumps({"process": {"cmd": "/bin/bash",
                                  "args": ["-c", "echo first; sleep 2; echo second"]}}).encode()
    c = http.client.HTTPConnection(s.data, timeout=30)
    t0 = time.time()
    c.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(msg)) + msg,
              {"Content-Type": "application/connect+json", "E2b-Sandbox-Id": sid,
               "E2b-Sandbox-Port": "49983"})
    r = c.getresponse()
    first_at = None
    while True:
        hdr = r.read(5)
        if len(hdr) < 5:
            break
        flags, n = struct.unpack(">BI", hdr)
        m = r.read(n)
        if b"stdout" in m and first_at is None:
            first_at = time.time() - t0
        if flags & 2:
            break
    total = time.time() - t0
    c.close()
    check(first_at is not None and first_at < 1.0 and total >= 2.0,
          "stream events flow as produced (first after %.2fs, end after %.2fs)"
          % (first_at or -1, total))

    # ---- 100 MiB up and down, streamed ----
    spid = s.proc.pid
    size = 100 * 1024 * 1024
    block = os.urandom(1024 * 1024)
    c = http.client.HTTPConnection(s.data, timeout=120)
    c.putrequest("POST", "/files?path=/home/user/big.bin&username=user")
    for k, v in (("E2b-Sandbox-Id", sid), ("E2b-Sandbox-Port", "49983"),
                 ("Content-Type", "application/octet-stream"), ("Content-Length", str(size))):
        c.putheader(k, v)
    c.endheaders()
    up = hashlib.sha256()
    for _ in range(100):
        c.send(block)
        up.update(block)
    r = c.getresponse()
    r.read()
    check(r.status == 200, "100 MiB upload through the proxy -> 200")
    c.request("GET", "/files?path=/home/user/big.bin&username=user",
              headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"})
    r = c.getresponse()
    down, got = hashlib.sha256(), 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        got += len(chunk)
        down.update(chunk)
    c.close()
    check(r.status == 200 and got == size and down.digest() == up.digest(),
          "100 MiB download matches the upload")
    hwm = rss_hwm(spid)
    check(hwm < 64 * 1024 * 1024, "server peak RSS stays small (%d MiB)" % (hwm >> 20))

    # ---- client disconnect ends the upstream transfer ----
    base = threads(spid)
    sock = socket.create_connection(tuple_addr(s.data))
    sock.sendall(("GET /files?path=/home/user/big.bin&username=user HTTP/1.1\r\nHost: x\r\n"
                  "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49983\r\n\r\n" % sid).encode())
    sock.recv(4096)
    time.sleep(0.3)
    during = threads(spid)
    sock.close()
    deadline = time.time() + 5
    while time.time() < deadline and threads(spid) > base:
        time.sleep(0.1)
    check(during > base and threads(spid) <= base,
          "client disconnect ends the proxy's threads (%d -> %d -> %d)"
          % (base, during, threads(spid)))

    faults(s, sid)


def tuple_addr(a):
    h, p = a.split(":")
    return h, int(p)


def faults(s, sid):
    st, js, _, _ = s.request("GET", "/admin/faults")
    check(st == 200 and js.get("errorRate") == 0 and js.get("latencyMs") == 0,
          "faults are off by default")
    st, _, _, _ = s.request("GET", "/admin/faults", key=False)
    check(st == 401, "admin needs the API key")
    st, js, _, _ = s.request("POST", "/admin/faults", {"errorRate": 2})
    check(st == 400 and "errorRate" in js["message"], "errorRate > 1 -> 400")
    st, js, _, _ = s.request("POST", "/admin/faults", {"latencyMs": "x"})
    check(st == 400, "latencyMs wrong type -> 400")

    st, js, _, _ = s.request("POST", "/admin/faults", {"errorRate": 1, "errorStatus": 429})
    check(st == 200 and js["errorRate"] == 1 and js["errorStatus"] == 429, "set errorRate 1 / 429")
    st, js, _, _ = s.request("GET", "/v2/sandboxes")
    check(st == 429 and js["code"] == 429, "injected 429 on the control plane")
    s.request("POST", "/admin/faults", {"errorRate": 0.5, "errorStatus": 503})
    sts = [s.request("GET", "/v2/sandboxes")[0] for _ in range(40)]
    check(set(sts) == {200, 503}, "errorRate 0.5 gives a mix of 200 and 503")
    s.request("POST", "/admin/faults", {"errorRate": 0, "dataErrorRate": 1})
    st, _, _ = s.data_request(sid, 49983, "GET", "/health")
    check(st == 503, "dataErrorRate 1 fails data-plane requests")
    s.request("POST", "/admin/faults", {"dataErrorRate": 0, "latencyMs": 300})
    t0 = time.time()
    s.request("GET", "/v2/sandboxes")
    check(time.time() - t0 >= 0.3, "latencyMs delays requests")
    s.request("POST", "/admin/faults", {"latencyMs": 0, "createLatencyMs": 500, "deleteDelayMs": 400})
    t0 = time.time()
    x = s.create("base", timeout=60)["sandboxID"]
    check(time.time() - t0 >= 0.5, "createLatencyMs delays create")
    t0 = time.time()
    s.kill(x)
    check(time.time() - t0 >= 0.4, "deleteDelayMs delays delete")
    s.request("POST", "/admin/faults", {"createLatencyMs": 0, "deleteDelayMs": 0,
                                        "dropStreamAfterBytes": 1000})
    c = http.client.HTTPConnection(s.data, timeout=30)
    c.request("GET", "/files?path=/home/user/big.bin&username=user",
              headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"})
    r = c.getresponse()
    got, broken = 0, False
    try:
        while True:
            chunk = r.read(65536)
            if not chunk:
                break
            got += len(chunk)
    except (http.client.IncompleteRead, ConnectionError) as e:
        broken = True
        got += len(getattr(e, "partial", b""))
    want = int(r.getheader("Content-Length") or -1)
    c.close()
    broken = broken or got < want
    check(broken and got <= 1000, "dropStreamAfterBytes cuts the stream (%d bytes)" % got)
    s.request("POST", "/admin/faults", {"dropStreamAfterBytes": 0})
    st, _, _ = s.data_request(sid, 49983, "GET", "/health")
    check(200 <= st < 300, "faults off again: data plane fine")


if __name__ == "__main__":
    run_with_server(run)
