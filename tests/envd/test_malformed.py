"""Bad input never crashes abx-envd: malformed JSON and envelopes, wrong
types, unknown methods, wrong HTTP method or content type, huge bodies;
environment variable names that are not names are refused, as the control
plane refuses them."""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd  # noqa: E402
from abxtest import check, done, envelope, eq  # noqa: E402

FS = "filesystem.Filesystem/"


def code(r):
    st, body = r
    return st, body.get("code") if isinstance(body, dict) else body


with Envd(sys.argv[1]) as e:
    for raw, what in ((b"{nope", "malformed JSON"), (b"[]", "JSON array"),
                      (b"", "empty body"), (b"\xff\xfe", "binary garbage"),
                      (b"[" * 100000 + b"]" * 100000, "deep nesting")):
        eq(code(e.unary(FS + "Stat", None, raw=raw)), (400, "invalid_argument"), what)
    st, body = e.unary(FS + "Stat", {"path": 5})
    eq((st, body.get("code")), (400, "invalid_argument"), "wrong field type")
    check("'path'" in body.get("message", ""), "message names the field")
    eq(e.unary(FS + "Stat", {"path": "/", "bogus": {"x": [1]}})[0], 200,
       "unknown fields ignored")
    eq(e.unary(FS + "Stat", {"path": None})[0], 200, "null is the default")
    eq(code(e.unary(FS + "ListDir", {"path": "/", "depth": -1})), (400, "invalid_argument"),
       "negative uint32")
    eq(code(e.unary(FS + "ListDir", {"path": "/", "depth": 1.5})), (400, "invalid_argument"),
       "fractional integer")
    eq(code(e.unary("process.Process/SendInput",
                    {"process": {"pid": "abc"}, "input": {"stdin": "AA=="}})),
       (400, "invalid_argument"), "pid not a number")
    eq(code(e.unary("process.Process/SendInput",
                    {"process": {"pid": 1}, "input": {"stdin": "!!!"}})),
       (400, "invalid_argument"), "bad base64")
    eq(code(e.unary("process.Process/SendSignal", {"process": {}, "signal": 9})),
       (400, "invalid_argument"), "empty selector")
    eq(code(e.unary("process.Process/SendSignal",
                    {"process": {"pid": 1}, "signal": "SIGNAL_SIGSTOP"})),
       (400, "invalid_argument"), "unknown enum name")

    st, body, _ = e.request("POST", "/" + FS + "Nope", b"{}",
                            {"Content-Type": "application/json"})
    eq(st, 404, "unknown method 404")
    st, body, _ = e.request("POST", "/other.Service/X", b"{}",
                            {"Content-Type": "application/json"})
    eq(st, 404, "unknown service 404")
    eq(e.request("GET", "/" + FS + "Stat")[0], 405, "GET on an RPC 405")
    for ct, proc, what in (("text/plain", FS + "Stat", "text/plain unary"),
                           ("application/connect+json", FS + "Stat", "stream type on unary"),
                           ("application/json", FS + "WatchDir", "unary type on stream"),
                           ("application/proto", FS + "Stat", "binary proto"),
                           (None, FS + "Stat", "no content type")):
        h = {"Content-Type": ct} if ct else {}
        eq(e.request("POST", "/" + proc, b"{}", h)[0], 415, what + " 415")
    eq(e.unary(FS + "Stat", {"path": "/"}, extra={"Content-Type":
                                                  "application/json; charset=utf-8"})[0],
       200, "charset parameter accepted")
    eq(code(e.unary(FS + "Stat", {"path": "/"}, extra={"Connect-Protocol-Version": "2"})),
       (400, "invalid_argument"), "bad protocol version")
    eq(code(e.unary(FS + "Stat", {"path": "/"}, extra={"Connect-Timeout-Ms": "soon"})),
       (400, "invalid_argument"), "bad timeout header")
    eq(code(e.unary(FS + "Stat", {"path": "/"}, extra={"Authorization": "Basic !!!"})),
       (401, "unauthenticated"), "garbage Authorization")

    def stream_err(raw, what, want="invalid_argument"):
        s = e.stream(FS + "WatchDir", None, raw=raw)
        eq(s.status, 200, what + ": HTTP 200")
        msgs, end = s.all()
        eq((msgs, (end or {}).get("error", {}).get("code")), ([], want), what)

    stream_err(b"", "empty stream body")
    stream_err(struct.pack(">BI", 0, 100) + b"{}", "truncated envelope")
    stream_err(struct.pack(">BI", 0, 0xFFFFFFFF) + b"{}", "huge envelope length")
    stream_err(envelope(b"not json"), "non-JSON payload")
    stream_err(envelope({"path": "/"}, flags=1), "compressed flag")
    stream_err(envelope({"path": "/"}, flags=2), "end-stream flag in request")
    stream_err(envelope({"path": "/"}) + envelope({"path": "/"}), "two request messages")
    stream_err(envelope({"path": 7}), "wrong type in stream request")
    stream_err(envelope({"path": "/"}) + b"\x00\x00", "trailing bytes")

    for req, what in (({}, "Start without process"),
                      ({"process": {"cmd": ""}}, "Start with an empty cmd"),
                      ({"process": {"cmd": "/bin/true", "args": [1]}}, "non-string args"),
                      ({"process": {"cmd": "/bin/true", "envs": {"A": 1}}}, "non-string envs"),
                      ({"process": {"cmd": "/bin/true"}, "stdin": "yes"}, "stdin not a bool"),
                      ({"process": {"cmd": "/bin/true"}, "pty": {"size": {"rows": -1}}},
                       "negative pty rows")):
        ev, end = e.stream("process.Process/Start", req).all()
        eq((ev, (end or {}).get("error", {}).get("code")), ([], "invalid_argument"), what)

    big = b'{"path":"' + b"a" * (20 * 1024 * 1024) + b'"}'
    eq(code(e.unary(FS + "Stat", None, raw=big)), (429, "resource_exhausted"),
       "20 MiB unary body")
    st, body, _ = e.request("POST", "/envs", b"x" * 1000)
    eq(st, 405, "POST /envs 405")
    for name in ("A=B", "", "1A", "A B", "\u00e9", "A\nB"):
        events, end = e.run("echo ran", envs={name: "x"})
        eq((end or {}).get("error", {}).get("code"), "invalid_argument",
           "env name %r refused" % name)
        check(not any("start" in (ev.get("event") or {}) for ev in events),
              "env name %r: nothing started" % name)
    eq(e.request("GET", "/health")[0], 204, "still healthy")
    eq(e.unary(FS + "Stat", {"path": "/"})[0], 200, "still serving RPCs")
done()
