"""Helpers shared by the abx-local tests (tests/local), the abx-envd tests
(tests/envd) and bench/local_bench.py (python3 stdlib only): the check
bookkeeping, free loopback ports and Connect JSON envelopes and streams.

Scripts import it by path, e.g.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "lib"))
so that it works from any working directory without installing."""
import base64
import json
import socket
import struct
import sys
import time

FAILURES = []


def check(cond, what):
    """Records a failed expectation (the test goes on to report them all)."""
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        FAILURES.append(what)
    return cond


def eq(got, want, what):
    return check(got == want, "%s (got %r, want %r)" % (what, got, want))


def done():
    """Exits 1 listing the failed checks, else 0."""
    if FAILURES:
        print("%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  - " + f)
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


def until(fn, secs=10):
    """fn() until truthy or secs passed (polled every 50 ms); its last value."""
    deadline = time.time() + secs
    v = fn()
    while not v and time.time() < deadline:
        time.sleep(0.05)
        v = fn()
    return v


def err_shape(st, js, want):
    """A REST error: status want and a {"code": want, "message": "..."} body."""
    return (st == want and isinstance(js, dict) and js.get("code") == want
            and isinstance(js.get("message"), str) and js["message"] != "")


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def envelope(obj, flags=0):
    """One Connect envelope: flags byte, big-endian length, JSON (or bytes)."""
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return struct.pack(">BI", flags, len(data)) + data


class Stream:
    """An open Connect server stream; next() returns (flags, message,
    t_arrival), or None at the end of the body."""

    def __init__(self, conn, resp):
        self.conn, self.resp, self.buf = conn, resp, b""
        self.status = resp.status

    def next(self):
        while True:
            if len(self.buf) >= 5:
                flags, n = struct.unpack(">BI", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    payload = self.buf[5:5 + n]
                    self.buf = self.buf[5 + n:]
                    return flags, json.loads(payload), time.time()
            chunk = self.resp.read1(65536)
            if not chunk:
                return None
            self.buf += chunk

    def all(self):
        """(messages, end-of-stream message or None); closes the stream."""
        msgs, end = [], None
        while True:
            m = self.next()
            if m is None:
                break
            if m[0] & 2:
                end = m[1]
                break
            msgs.append(m[1])
        self.close()
        return msgs, end

    def close(self):
        self.conn.close()


def outputs(events):
    """Concatenated stdout, stderr and the end event of a process stream."""
    out, err, end = b"", b"", None
    for m in events:
        ev = m.get("event", {})
        d = ev.get("data")
        if d:
            out += base64.b64decode(d.get("stdout", ""))
            err += base64.b64decode(d.get("stderr", ""))
        if "end" in ev:
            end = ev["end"]
    return out, err, end
