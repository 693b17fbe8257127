#!/usr/bin/env python3
"""The sandbox bindings against a fake platform whose envd is as old as
each test asks (template "envd-X.Y.Z" reports envdVersion X.Y.Z), and
which hands out new tokens on every connect: runs cases/test_envd_gates.lua
with abx-e2e, then checks what reached the platform (a gated call sent
nothing; a default user was added below envd 0.4.0; uploads below 0.5.7
were multipart; the pause body; a too-old sandbox was deleted).

  fakeplat.py --bin ABX_E2E          (python3 stdlib only, no abx-local)"""
import base64
import json
import os
import secrets
import sys
import threading
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import (KNOBS, PLATFORM, FakeHandler, by_id, check, cli, done,  # noqa: E402
                     envelope, remove, run_reported, scratch, scrubbed_env, serve_in_thread)

LOCK = threading.Lock()
SBX = {}          # id -> state
DATA = []         # data-plane requests: dict per request
API = []          # control-plane requests
SEQ = [0]


def ver_tuple(v):
    return tuple(int(x) for x in v.split("."))


def sandbox_json(s, tokens=True):
    o = {"sandboxID": s["id"], "templateID": s["template"], "clientID": "fake",
         "envdVersion": s["version"], "domain": None}
    if tokens:
        o["envdAccessToken"] = s["token"]
        o["trafficAccessToken"] = s["traffic"]
    return o


def new_tokens(s):
    SEQ[0] += 1
    s["token"] = "envdtok%d%s" % (SEQ[0], secrets.token_hex(8))
    if s["private"]:
        s["traffic"] = "traffictok%d%s" % (SEQ[0], secrets.token_hex(8))


class Handler(FakeHandler):
    def stream(self, envelopes):
        body = b"".join(envelopes) + envelope({}, flags=2)
        self.reply(200, body, "application/connect+json")

    def handle_any(self, method):
        body = self.read_body() if method in ("POST", "PUT") else b""
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        sid = self.headers.get("E2b-Sandbox-Id")
        with LOCK:
            if sid:
                return self.data_plane(sid, method, u.path, q, body)
            return self.control(method, u.path, q, body)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")

    # ---- control plane ----
    def control(self, method, path, q, body):
        API.append({"method": method, "path": path, "body": body.decode(errors="replace")})
        parts = path.strip("/").split("/")
        if path == "/_state":
            return self.reply(200, {"sandboxes": SBX, "data": DATA, "api": API})
        if path == "/sandboxes" and method == "POST":
            req = json.loads(body)
            tmpl = req.get("templateID", "")
            if not tmpl.startswith("envd-"):
                return self.reply(400, {"code": 400, "message": "template envd-X.Y.Z only"})
            SEQ[0] += 1
            net = req.get("network") or {}
            s = {"id": "fake%d" % SEQ[0], "template": tmpl, "version": tmpl[5:],
                 "metadata": req.get("metadata") or {}, "alive": True, "network": net,
                 "private": net.get("allowPublicTraffic") is False, "traffic": None,
                 "pauses": []}
            new_tokens(s)
            SBX[s["id"]] = s
            return self.reply(201, sandbox_json(s))
        if parts[:1] == ["v2"] and parts[1:] == ["sandboxes"] and method == "GET":
            want = dict(urllib.parse.parse_qsl(q.get("metadata", "")))
            out = [sandbox_json(s, False) | {"metadata": s["metadata"], "state": "running"}
                   for s in SBX.values() if s["alive"] and
                   all(s["metadata"].get(k) == v for k, v in want.items())]
            return self.reply(200, out)
        if len(parts) >= 2 and parts[0] == "sandboxes":
            s = SBX.get(parts[1])
            if s is None or not s["alive"]:
                return self.reply(404, {"code": 404, "message": "sandbox not found"})
            tail = parts[2] if len(parts) > 2 else ""
            if method == "DELETE" and not tail:
                s["alive"] = False
                return self.reply(204)
            if tail == "connect":
                new_tokens(s)
                return self.reply(200, sandbox_json(s))
            if tail == "pause":
                s["pauses"].append(json.loads(body or b"null"))
                return self.reply(204)
            if tail == "metrics":
                return self.reply(200, [])
            if tail == "timeout":
                return self.reply(204)
            if method == "GET" and not tail:
                return self.reply(200, sandbox_json(s, False) | {
                    "metadata": s["metadata"], "state": "running", "network": s["network"]})
        return self.reply(404, {"code": 404, "message": "no route %s %s" % (method, path)})

    # ---- data plane ----
    def data_plane(self, sid, method, path, q, body):
        s = SBX.get(sid)
        port = self.headers.get("E2b-Sandbox-Port", "")
        rec = {"sid": sid, "port": port, "method": method, "path": path, "query": q,
               "ctype": (self.headers.get("Content-Type") or "").split(";")[0],
               "auth": self.headers.get("Authorization", ""),
               "token_ok": s is not None and self.headers.get("X-Access-Token") == s["token"],
               "traffic_ok": s is not None and self.headers.get(
                   "E2B-Traffic-Access-Token") == s["traffic"]}
        if rec["ctype"] == "application/connect+json" and len(body) > 5:
            rec["body"] = body[5:].decode(errors="replace")
        elif rec["ctype"] == "application/json":
            rec["body"] = body.decode(errors="replace")
        DATA.append(rec)
        if s is None or not s["alive"]:
            return self.reply(502, {"code": 502, "message": "The sandbox was not found"})
        if port != "49983":
            if s["private"] and not rec["traffic_ok"]:
                return self.reply(403, {"code": 403, "message": "missing traffic access token"})
            return self.reply(200, b"service", "text/plain")
        if not rec["token_ok"]:
            return self.reply(401, {"code": 401, "message": "invalid access token"})
        if path == "/health":
            return self.reply(204)
        if path == "/files" and method == "GET":
            return self.reply(200, b"x", "application/octet-stream")
        if path == "/files" and method == "POST":
            if ver_tuple(s["version"]) < (0, 5, 7) and rec["ctype"] != "multipart/form-data":
                return self.reply(400, {"code": 400, "message": "request Content-Type isn't "
                                        "multipart/form-data"})
            p = q.get("path", "")
            return self.reply(200, [{"name": p.rsplit("/", 1)[-1], "type": "file", "path": p}])
        if path == "/filesystem.Filesystem/Stat":
            return self.reply(200, {"entry": {"name": "x", "type": "FILE_TYPE_FILE",
                                              "path": "/x", "size": 1}})
        if path == "/process.Process/Start":
            out = base64.b64encode(b"ran\n").decode()
            return self.stream([envelope({"event": {"start": {"pid": 5}}}),
                                envelope({"event": {"data": {"stdout": out}}}),
                                envelope({"event": {"end": {"exited": True,
                                                            "status": "exit status 0"}}})])
        if path == "/filesystem.Filesystem/WatchDir":
            return self.stream([envelope({"start": {}})])
        return self.reply(200, {})


def main():
    a = cli()
    srv, url = serve_in_thread(Handler)
    work = scratch("abx-fakeplat-", os.path.join(HERE, "cases"), link=True)
    env = scrubbed_env(PLATFORM + KNOBS, ABX_SANDBOX_BASE_URL=url, ABX_SANDBOX_URL=url,
                       ABX_SANDBOX_DOMAIN="localhost:%d" % srv.server_address[1],
                       ABX_SANDBOX_API_KEY="e2b_" + "0" * 38 + "ab",
                       E2E_RUN_ID="gates-" + secrets.token_hex(4), CI="true")
    try:
        p, doc = run_reported(a.bin, ["cases/test_envd_gates.lua"], work, env)
    finally:
        remove(work)
    got = by_id(doc)
    check(len(got) >= 9, "tests ran: %d" % len(got))
    for nodeid, t in sorted(got.items()):
        if not check(t["outcome"] == "passed", "%s: %s" % (nodeid, t["outcome"])):
            print(t.get("message"))
    if p.returncode != 0:
        print(p.stdout[-6000:], p.stderr[-3000:])
    check(p.returncode == 0, "exit code %d" % p.returncode)

    with LOCK:
        by_tmpl = {}
        for s in SBX.values():
            by_tmpl.setdefault(s["template"], []).append(s)
        data = list(DATA)

    def reqs(tmpl, path=None):
        ids = {s["id"] for s in by_tmpl.get(tmpl, [])}
        return [r for r in data if r["sid"] in ids and (path is None or r["path"] == path)]

    # Every envd request carried the token current at the time.
    check(all(r["token_ok"] for r in data if r["port"] == "49983"),
          "every envd call carried the current access token: %r"
          % [(r["sid"], r["path"]) for r in data if r["port"] == "49983" and not r["token_ok"]])
    check(reqs("envd-0.5.1", "/process.Process/CloseStdin") == [],
          "close_stdin on envd 0.5.1 sent nothing")
    check(len(reqs("envd-0.5.2", "/process.Process/CloseStdin")) == 2,
          "close_stdin on envd 0.5.2 was sent (twice)")
    check(reqs("envd-0.1.3", "/filesystem.Filesystem/WatchDir") != [] and all(
        "recursive" not in r.get("body", "") for r in reqs("envd-0.1.3", "/filesystem.Filesystem/WatchDir")),
        "envd 0.1.3: only the non-recursive watch went out")
    starts = reqs("envd-0.2.9", "/process.Process/Start")
    check(len(starts) == 1 and '"stdin":false' in starts[0].get("body", ""),
          "envd 0.2.9: stdin=false refused, the default run sent stdin false: %r"
          % [r.get("body") for r in starts])
    old_user = reqs("envd-0.3.9")
    check(any(r["path"] == "/files" and r["query"].get("username") == "user" for r in old_user),
          "envd 0.3.9: /files got username=user")
    check(any(r["path"] == "/process.Process/Start" and r["auth"] == "Basic dXNlcjo="
              for r in old_user), "envd 0.3.9: Start got Basic user")
    check(any(r["path"] == "/process.Process/Start" and r["auth"] == "Basic cm9vdDo="
              for r in old_user), "envd 0.3.9: a caller's user (root) is kept")
    new_user = reqs("envd-0.4.0")
    check(new_user != [] and all(r["auth"] == "" and "username" not in r["query"]
                                 for r in new_user), "envd 0.4.0: no user added")
    up = {t: [r["ctype"] for r in reqs(t, "/files") if r["method"] == "POST"]
          for t in ("envd-0.5.2", "envd-0.5.7")}
    check(up["envd-0.5.2"] == ["multipart/form-data"], "envd 0.5.2 upload: multipart %r" % up)
    check(up["envd-0.5.7"] == ["application/octet-stream"], "envd 0.5.7 upload: octet-stream")
    old = by_tmpl.get("envd-0.0.9", [])
    check(len(old) == 1 and not old[0]["alive"], "the envd 0.0.9 sandbox was deleted by create")
    check(reqs("envd-0.0.9") == [], "nothing was sent to the envd 0.0.9 sandbox")
    check(reqs("envd-0.1.4", "/metrics") == [] and not any(
        a_["path"].endswith("/metrics") and a_["path"].split("/")[2] in
        {s["id"] for s in by_tmpl.get("envd-0.1.4", [])} for a_ in API),
        "metrics on envd 0.1.4: no request")
    pauses = [p_ for s in by_tmpl.get("envd-0.6.4", []) for p_ in s["pauses"]]
    check(pauses == [{"memory": True}, {"memory": False}], "pause bodies: %r" % pauses)
    priv = [s for s in SBX.values() if s["private"]]
    check(len(priv) == 1 and priv[0]["network"] == {
        "allowPublicTraffic": False, "allowOut": ["1.1.1.1", "10.0.0.0/8"],
        "denyOut": ["0.0.0.0/0"]}, "network option on the wire: %r"
        % [s["network"] for s in priv])
    svc = [r for r in data if r["port"] == "8080"]
    check(len(svc) >= 2 and all(r["traffic_ok"] for r in svc),
          "user-port calls carried the current traffic token")
    check(not any(s["alive"] for s in SBX.values()), "no sandbox left: %r"
          % [s["id"] for s in SBX.values() if s["alive"]])
    srv.shutdown()
    done()


if __name__ == "__main__":
    main()
