"""A fake envd / code interpreter for the client tests: answers the
broken, dripping and stalling replies a real server rarely gives. The
request's E2b-Sandbox-Id names the behaviour. Listens on 127.0.0.1 (a
free port chosen by the kernel), prints "port N", serves until killed.

Sandbox ids starting "gate-" are the version-gate cases: every request
to them is recorded (GET /_seen/<id> returns the list), /files uploads
are answered as an envd of that generation would (an id containing
"old" refuses a non-multipart body with 400, as envd before 0.5.7 and
FC's 0.5.2 do), other calls succeed. python3 stdlib only."""
import base64
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import FakeHandler, envelope  # noqa: E402


def ev(kind, body):
    return envelope({"event": {kind: body}})


END_OK = envelope({}, flags=2)
OK_STREAM = (ev("start", {"pid": 812}) + ev("keepalive", {}) +
             ev("data", {"stdout": base64.b64encode(b"hi\n").decode()}) +
             ev("keepalive", {}) +
             ev("data", {"stderr": base64.b64encode(b"err").decode()}) +
             ev("end", {"exited": True, "status": "exit status 0"}) + END_OK)

STREAMS = {
    "drip": OK_STREAM,
    "noend": ev("start", {"pid": 5}) +
             ev("data", {"stdout": base64.b64encode(b"a").decode()}) + END_OK,
    "notstart": ev("data", {"stdout": "YQ=="}) + END_OK,
    "garbage": ev("start", {"pid": 5}) + envelope(b"xx not json") + END_OK,
    "huge": b"\x00\xff\xff\xff\xffabc",
    "enderr": ev("start", {"pid": 5}) + envelope(
        {"error": {"code": "deadline_exceeded", "message": "late"}}, flags=2),
    "watch-drip": envelope({"start": {}}) + envelope({"keepalive": {}}) +
                  envelope({"filesystem": {"name": "a.txt", "type": "EVENT_TYPE_CREATE"}}) +
                  END_OK,
}

NDJSON_OK = (b'{"type": "number_of_executions", "execution_count": 1}\n'
             b'{"type": "stdout", "text": "hello\\n", "timestamp": "t"}\n'
             b'{"type": "keepalive"}\n'
             b'{"type": "result", "is_main_result": true, "text": "2"}\n'
             b'{"type": "end_of_execution"}\n')


SEEN = {}
SEEN_LOCK = threading.Lock()


def multipart_file(ctype, body):
    """(filename, content) of the part named "file", or None."""
    if "boundary=" not in ctype:
        return None
    boundary = ctype.split("boundary=", 1)[1].split(";")[0].strip().strip('"').encode()
    for part in body.split(b"--" + boundary)[1:-1]:
        head, _, content = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        if b'name="file"' not in head:
            continue
        fname = None
        for line in head.split(b"\r\n"):
            if b"filename=" in line:
                fname = line.split(b'filename="', 1)[1].rsplit(b'"', 1)[0].decode()
        return fname, content[:-2] if content.endswith(b"\r\n") else content
    return None


class Handler(FakeHandler):
    def gate(self, sid, method, body):
        """A version-gate case: record the request, answer it."""
        u = urllib.parse.urlparse(self.path)
        ctype = self.headers.get("Content-Type", "")
        rec = {"method": method, "path": u.path,
               "query": dict(urllib.parse.parse_qsl(u.query)),
               "ctype": ctype.split(";")[0],
               "auth": self.headers.get("Authorization", ""),
               "len": len(body), "body": ""}
        if u.path == "/files" and method == "POST":
            part = multipart_file(ctype, body) if rec["ctype"] == "multipart/form-data" else None
            content = part[1] if part else body
            rec["sha256"] = hashlib.sha256(content).hexdigest()
            rec["filename"] = part[0] if part else None
        elif len(body) < 4096:
            if rec["ctype"] == "application/connect+json":
                body = body[5:]   # the one request envelope's header
            rec["body"] = body.decode(errors="replace")
        with SEEN_LOCK:
            SEEN.setdefault(sid, []).append(rec)
        if u.path == "/files" and method == "POST":
            if "old" in sid and rec["ctype"] != "multipart/form-data":
                return self.reply(400, b'{"code":400,"message":"error parsing multipart form: '
                                  b'request Content-Type isn\'t multipart/form-data"}')
            path = rec["query"].get("path") or rec.get("filename") or ""
            name = path.rsplit("/", 1)[-1]
            return self.reply(200, json.dumps([{"name": name, "type": "file",
                                                "path": path}]).encode())
        if u.path == "/files":
            return self.reply(200, b"data", "application/octet-stream")
        if u.path.startswith("/process.Process/Start") or u.path.startswith(
                "/filesystem.Filesystem/WatchDir"):
            return self.chunked([ev("start", {"pid": 7}) if "Process" in u.path
                                 else envelope({"start": {}}), END_OK],
                                "application/connect+json")
        if u.path == "/filesystem.Filesystem/Stat":
            return self.reply(200, b'{"entry":{"name":"x","type":"FILE_TYPE_FILE","path":"/x"}}')
        return self.reply(200, b"{}")

    def chunked(self, pieces, ctype, finish=True, delay=0.0):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for p in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
            self.wfile.flush()
            if delay:
                time.sleep(delay)
        if finish:
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.close_connection = True
        self.wfile.flush()

    def do_GET(self):
        sid = self.headers.get("E2b-Sandbox-Id", "")
        if self.path.startswith("/_seen/"):
            with SEEN_LOCK:
                seen = SEEN.get(self.path[len("/_seen/"):], [])
                return self.reply(200, json.dumps(seen).encode())
        if sid.startswith("gate-"):
            return self.gate(sid, "GET", b"")
        self.reply(204 if self.path == "/health" else 404, b"")

    def do_POST(self):
        body = self.read_body()
        sid = self.headers.get("E2b-Sandbox-Id", "")
        if sid.startswith("gate-"):
            return self.gate(sid, "POST", body)
        path = self.path
        if path.startswith("/process.Process/") or path.startswith("/filesystem.Filesystem/WatchDir"):
            return self.stream(sid)
        if path == "/execute":
            return self.execute(sid)
        if sid == "slow":
            time.sleep(3)
            return self.reply(200, b"{}")
        if sid == "badjson":
            return self.reply(200, b"not json")
        if sid == "notfound":
            return self.reply(404, b'{"code":"not_found","message":"file not found: x"}')
        if sid == "proxy502":
            return self.reply(502, b'{"sandboxId":"x","message":"The sandbox was not found","code":502}')
        self.reply(404, b'{"code":"not_found","message":"no such fake"}')

    def stream(self, sid):
        ct = "application/connect+json"
        if sid == "plain401":
            return self.reply(401, b'{"code":401,"message":"unauthorized access"}')
        if sid in ("drip", "watch-drip"):
            body = STREAMS[sid]
            pieces, i, k = [], 0, 1
            while i < len(body):
                pieces.append(body[i:i + k])
                i += k
                k = k % 7 + 1
            return self.chunked(pieces, ct, delay=0.001)
        if sid == "cut":
            body = ev("start", {"pid": 5}) + ev("data", {"stdout": "YWFh"})
            return self.chunked([body[:-4]], ct, finish=False)
        if sid == "silent":
            self.send_response(200)
            self.send_header("Content-Type", ct)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            p = ev("start", {"pid": 9})
            self.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
            self.wfile.flush()
            time.sleep(3)
            self.close_connection = True
            return
        if sid == "stall":
            time.sleep(3)
            self.close_connection = True
            return
        if sid in STREAMS:
            return self.chunked([STREAMS[sid]], ct)
        self.reply(404, b'{"code":"not_found","message":"no such fake"}')

    def execute(self, sid):
        ct = "application/x-ndjson"
        if sid == "exec-drip":
            return self.chunked([NDJSON_OK[i:i + 3] for i in range(0, len(NDJSON_OK), 3)],
                                ct, delay=0.001)
        if sid == "exec-noend":
            return self.chunked([NDJSON_OK.split(b'{"type": "end')[0]], ct)
        if sid == "exec-badline":
            return self.chunked([b'{"type": "stdout", "text": "a"}\n{oops\n'], ct)
        if sid == "exec-cut":
            return self.chunked([NDJSON_OK[:40]], ct, finish=False)
        if sid == "exec-404":
            return self.reply(404, b"Context abc not found", "text/plain")
        if sid == "exec-502":
            return self.reply(502, b'{"message":"The sandbox was not found","code":502}')
        if sid == "exec-500":
            return self.reply(500, b"Internal Server Error", "text/plain")
        self.reply(404, b"no such fake", "text/plain")


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
