"""Platform profiles (docs/profiles.md): every switch of the profile table
checked on both sides, on a server started with --profile fc (FC's answer)
and one with --profile e2b (upstream E2B's), plus single switches turned
by flag, the profile's template contents and the e2b fidelity fixes
(autoResume, metrics ranges)."""
import base64
import hashlib
import http.client
import os
import re
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, Server  # noqa: E402
from abxtest import check, done, until  # noqa: E402

ENVD = 49983


def signature(path, op, token):
    raw = "%s:%s::%s" % (path, op, token)
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


def info(s, sid):
    return s.request("GET", "/sandboxes/" + sid)[1] or {}


def per_profile(s, fc):
    name = "fc" if fc else "e2b"
    st, prof, _, _ = s.request("GET", "/admin/profile")
    check(st == 200 and prof["profile"] == name, "%s: GET /admin/profile names it" % name)

    # envd-0.5.2: the version reported on create, info and list.
    a = s.create("base", secure=True)
    sid, tok = a["sandboxID"], a["envdAccessToken"]
    want = "0.5.2" if fc else "0.6.4"
    check(a["envdVersion"] == want and info(s, sid)["envdVersion"] == want,
          "%s: envdVersion %s on create and info" % (name, want))

    # fc-ids: sbx- ids (assumed shape), routed by Host like any other.
    shape = r"sbx-[0-9A-HJKMNP-TV-Z]{26}" if fc else r"[a-z0-9]{20}"
    check(re.fullmatch(shape, sid) is not None, "%s: sandbox id %s matches %s" % (name, sid, shape))
    for host_id in (sid, sid.lower()):   # DNS names have no case: clients lower-case them
        c = http.client.HTTPConnection(s.data, timeout=30)
        c.request("GET", "/health", headers={"Host": "%d-%s.%s" % (ENVD, host_id, s.env["E2B_DOMAIN"])})
        r = c.getresponse()
        r.read()
        c.close()
        check(r.status == 204, "%s: Host <port>-%s routes (%d)" % (name, host_id, r.status))
    st, _, _, _ = s.request("GET", "/sandboxes/" + sid.swapcase())
    check(st == 404, "%s: the control plane matches ids exactly (%d)" % (name, st))

    # tokens-in-info: the access token on create only, on fc.
    check(("envdAccessToken" in info(s, sid)) != fc,
          "%s: envdAccessToken %s GET /sandboxes/{id}" % (name, "absent from" if fc else "in"))

    # v2-lifecycle: create and connect on v2 refused on fc (405), listing stays.
    st, js, _, _ = s.request("POST", "/v2/sandboxes", {"templateID": "base"})
    check(st == (405 if fc else 201), "%s: POST /v2/sandboxes -> %d" % (name, st))
    if st == 201:
        s.kill(js["sandboxID"])
    st, _, _, _ = s.request("POST", "/v2/sandboxes/%s/connect" % sid, {"timeout": 60})
    check(st == (405 if fc else 200), "%s: POST /v2/sandboxes/{id}/connect -> %d" % (name, st))
    st, _, _, _ = s.request("GET", "/v2/sandboxes")
    check(st == 200, "%s: GET /v2/sandboxes lists (%d)" % (name, st))

    # pause: allow-list only on fc (403), a 4xx that says why.
    st, js, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid)
    check(st == (403 if fc else 204), "%s: pause -> %d %r" % (name, st, js))
    if fc:
        check("allow-list" in js["message"], "fc: the pause refusal says it is allow-list only")
        st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "base", "autoPause": True})
        check(st == 403, "fc: create with autoPause refused (%d)" % st)
    else:
        s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": 60})

    # fc-metadata: unknown fc.* keys refused naming the key; known ones and others pass.
    st, js, _, _ = s.request("POST", "/sandboxes",
                             {"templateID": "base", "metadata": {"fc.mine": "x"}})
    if fc:
        check(st == 400 and "fc.mine" in js["message"], "fc: metadata fc.mine refused, named")
    else:
        check(st == 201, "e2b: metadata fc.mine accepted (%d)" % st)
        s.kill(js["sandboxID"])
    b = s.create("base", metadata={"fc.sandbox.auth.role": "{}", "app.k": "v"})
    check(info(s, b["sandboxID"]).get("metadata", {}).get("app.k") == "v",
          "%s: FC's known fc. keys and neutral keys are accepted" % name)
    s.kill(b["sandboxID"])

    # network.allowPublicTraffic=false (both): a traffic token from create
    # and connect only; user ports need it; envd too on fc unless
    # X-Access-Token is valid.
    p = s.create("base", network={"allowPublicTraffic": False, "allowOut": ["1.1.1.1"]})
    pid, ttok = p["sandboxID"], p.get("trafficAccessToken")
    check(isinstance(ttok, str) and len(ttok) >= 32, "%s: create returns a trafficAccessToken" % name)
    pi = info(s, pid)
    _, lst, _, _ = s.request("GET", "/sandboxes")
    listed = [x for x in lst if x["sandboxID"] == pid]
    check("trafficAccessToken" not in pi and listed and "trafficAccessToken" not in listed[0],
          "%s: no trafficAccessToken in info or list" % name)
    check(pi.get("network", {}).get("allowOut") == ["1.1.1.1"], "%s: info echoes network" % name)
    st, cj, _, _ = s.request("POST", "/sandboxes/%s/connect" % pid, {"timeout": 60})
    check(cj.get("trafficAccessToken") == ttok, "%s: connect returns the traffic token" % name)
    st, _, _ = s.data_request(pid, 8080, "GET", "/")
    check(st == 403, "%s: user port without the traffic token -> 403 (%d)" % (name, st))
    st, _, _ = s.data_request(pid, 8080, "GET", "/", headers={"e2b-traffic-access-token": ttok})
    check(st == 502, "%s: with it the request passes the gate (closed port: 502, got %d)" % (name, st))
    st, _, _ = s.data_request(pid, ENVD, "GET", "/health")
    check(st == (403 if fc else 204), "%s: envd of a non-secure private sandbox -> %d" % (name, st))
    q = s.create("base", secure=True, network={"allowPublicTraffic": False})
    st, _, _ = s.data_request(q["sandboxID"], ENVD, "GET", "/health",
                              headers={"X-Access-Token": q["envdAccessToken"]})
    check(st == 204, "%s: a secure private sandbox's envd passes with X-Access-Token (%d)" % (name, st))
    s.kill(q["sandboxID"])
    s.kill(pid)

    # signed-urls: on fc a signature does not stand in for X-Access-Token.
    s.run(sid, "echo hi > /home/user/f.txt", token=tok)
    path = "/home/user/f.txt"
    qs = urllib.parse.urlencode({"path": path, "signature": signature(path, "read", tok)})
    st, body, _ = s.data_request(sid, ENVD, "GET", "/files?" + qs)
    check(st == (401 if fc else 200), "%s: signed download without token -> %d" % (name, st))
    st, body, _ = s.data_request(sid, ENVD, "GET", "/files?path=" + path,
                                 headers={"X-Access-Token": tok})
    check(st == 200 and body == b"hi\n", "%s: download with X-Access-Token (%d)" % (name, st))

    # envd-0.5.2 upload: octet-stream refused on fc, as envd 0.5.2 refuses it.
    st, body, _ = s.data_request(sid, ENVD, "POST", "/files?path=/home/user/o.bin", b"abc",
                                 headers={"X-Access-Token": tok,
                                          "Content-Type": "application/octet-stream"})
    # 0.5.2 answers any non-multipart body 500 ("error parsing multipart form").
    check(st == (500 if fc else 200), "%s: octet-stream upload -> %d" % (name, st))
    # proto-codec: FC's envd takes the JSON codec only.
    st, _, _ = s.data_request(sid, ENVD, "POST", "/filesystem.Filesystem/Stat", b"\x0a\x01/",
                              headers={"X-Access-Token": tok,
                                       "Content-Type": "application/proto"})
    check((st == 400) == fc, "%s: Connect proto codec -> %d" % (name, st))

    # logs: empty lists on fc.
    st, lg, _, _ = s.request("GET", "/sandboxes/%s/logs" % sid)
    check(st == 200 and isinstance(lg.get("logs"), list) and (len(lg["logs"]) == 0) == fc,
          "%s: logs %s" % (name, "empty" if fc else "carry envd's lines"))

    # metrics-full: CPU and memory only on fc, one sample a minute; ranges honoured.
    st, m, _, _ = s.request("GET", "/sandboxes/%s/metrics" % sid)
    check(st == 200 and m and m[-1]["memUsed"] > 0, "%s: metrics carry memory" % name)
    check((m[-1]["diskTotal"] == 0 and m[-1]["diskUsed"] == 0) == fc,
          "%s: disk fields %s" % (name, "0" if fc else "real"))
    time.sleep(2.2)
    st, m2, _, _ = s.request("GET", "/sandboxes/%s/metrics" % sid)
    check((len(m2) == len(m)) == fc, "%s: a sample every %s (%d then %d)" %
          (name, "minute" if fc else "second", len(m), len(m2)))
    st, old, _, _ = s.request("GET", "/sandboxes/%s/metrics?start=1000&end=2000" % sid)
    check(st == 200 and old == [], "%s: an old range answers [] (%d %r)" % (name, st, old))
    now = int(time.time())
    st, rng, _, _ = s.request("GET", "/sandboxes/%s/metrics?start=%d&end=%d" % (sid, now - 1, now + 1))
    check(st == 200 and all(now - 1 <= x["timestampUnix"] <= now + 1 for x in rng),
          "%s: a range answers its samples only" % name)

    # gateway-errors: FC's data-plane errors are not E2B's JSON (assumed).
    st, body, hd = s.data_request("nosuchsandbox", ENVD, "GET", "/health")
    isjson = hd.get("content-type", "").startswith("application/json")
    check(st == 502 and isjson != fc, "%s: unknown sandbox -> 502 %s" % (name, hd.get("content-type")))

    # fc-messages: other wording (assumed).
    st, js, _, _ = s.request("GET", "/sandboxes/nosuchsandbox")
    check(st == 404 and js["message"].startswith("ResourceNotFound:") == fc,
          "%s: not-found message %r" % (name, js["message"]))

    # Maximum timeout, both: 24 h.
    st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "base", "timeout": 86401})
    check(st == 400, "%s: timeout above 86400 s refused (%d)" % (name, st))

    # The profile's base: E2B's carries python, pip, git, curl; FC's is minimal.
    code, out, _ = s.run(sid, "for p in python python3 pip git curl; do command -v $p >/dev/null "
                         "&& echo $p; done", token=tok)
    have = out.split()
    check(have == ([] if fc else ["python", "python3", "pip", "git", "curl"]),
          "%s: base has %r" % (name, have))
    s.kill(sid)

    # list-page-50: the default page of GET /v2/sandboxes (assumed size).
    ids = [s.create("base")["sandboxID"] for _ in range(51)]
    st, page, hd, _ = s.request("GET", "/v2/sandboxes")
    check(st == 200 and len(page) == (50 if fc else 51) and (("x-next-token" in hd) == fc),
          "%s: default list page holds %d of 51" % (name, len(page)))
    for i in ids:
        s.kill(i)


def auto_resume(s):
    """autoResume (e2b): a paused sandbox created with it wakes on a
    data-plane request; one without stays paused (502)."""
    a = s.create("base", autoResume={"enabled": True}, timeout=120)
    b = s.create("base")
    check(info(s, a["sandboxID"]).get("lifecycle", {}).get("autoResume") is True,
          "getInfo reports lifecycle.autoResume")
    for x in (a, b):
        s.request("POST", "/sandboxes/%s/pause" % x["sandboxID"])
    st, _, _ = s.data_request(a["sandboxID"], ENVD, "GET", "/health")
    check(st == 204 and info(s, a["sandboxID"])["state"] == "running",
          "a request wakes an autoResume sandbox (%d)" % st)
    st, _, _ = s.data_request(b["sandboxID"], ENVD, "GET", "/health")
    check(st == 502 and info(s, b["sandboxID"])["state"] == "paused",
          "without autoResume it stays paused (%d)" % st)
    st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "base", "autoResume": True})
    check(st == 400, "autoResume must be an object (%d)" % st)


def flags():
    """One switch by flag; bad flags named; ABX_LOCAL_PROFILE."""
    s = Server(extra=["--profile", "fc", "--allow-pause"])
    try:
        a = s.create("base")
        st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % a["sandboxID"])
        check(st == 204, "fc --allow-pause: pause allowed (%d)" % st)
        check(a["envdVersion"] == "0.5.2", "fc --allow-pause: the other switches stay FC's")
    finally:
        s.cleanup()
    s = Server(extra=["--switch", "fc-ids=on"])
    try:
        a = s.create("base")
        check(a["sandboxID"].startswith("sbx-") and a["envdVersion"] == "0.6.4",
              "e2b --switch fc-ids=on: fc ids, e2b's envd")
    finally:
        s.cleanup()
    for args, word in ((["--profile", "aws"], "aws"), (["--switch", "nope=on"], "nope"),
                       (["--switch", "pause"], "pause")):
        r = subprocess.run([LOCAL_BIN, "serve"] + args, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and word in r.stderr, "serve %s refused naming %r" % (args, word))
    r = subprocess.run([LOCAL_BIN, "switches"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "envd-0.5.2" in r.stdout and "list-page-50" in r.stdout,
          "abx-local switches lists the table")
    r = subprocess.run([LOCAL_BIN, "--version"], capture_output=True, text=True, timeout=30,
                       env={"ABX_LOCAL_PROFILE": "fc", "PATH": "/usr/bin:/bin"})
    check("envd 0.5.2, profile fc" in r.stdout, "ABX_LOCAL_PROFILE=fc selects fc (%r)" % r.stdout)


# Answers one request on 8080 with the Host it got (E2B's own test of
# maskRequestHost does the same).
HOST_ECHO = r'''
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (self.headers.get("Host") or "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("", 8080), H).serve_forever()
'''


def mask_request_host(s, fc):
    """mask-request-host: e2b sets the Host the sandbox's server sees
    (${PORT}: the port), FC ignores the option."""
    name = "fc" if fc else "e2b"
    mask = "custom-host.example.com:${PORT}"
    sid = s.create("code-interpreter-v1", network={"maskRequestHost": mask})["sandboxID"]
    code, _, err = s.run(sid, "cat > /tmp/h.py <<'EOF'\n%s\nEOF\n"
                              "nohup python3 /tmp/h.py >/dev/null 2>&1 &" % HOST_ECHO)
    check(code == 0, "%s: a server that echoes Host started (%s)" % (name, err[-200:]))

    def ask():
        r = s.data_request(sid, 8080, "GET", "/", headers={"Host": "client.test"})
        return r if r[0] == 200 else None
    got = until(ask, 10, step=0.1) or s.data_request(sid, 8080, "GET", "/")
    want = "client.test" if fc else "custom-host.example.com:8080"
    check(got[0] == 200 and got[1].decode() == want,
          "%s: the sandbox's server sees Host %r (%s %r)" % (name, want, got[0], got[1][:80]))
    st, _, _, text = s.request("POST", "/sandboxes", {"templateID": "base",
                                                      "network": {"maskRequestHost": 8080}})
    check(st == 400 and b"maskRequestHost" in text,
          "%s: a maskRequestHost that is not a string -> 400 naming it (%d)" % (name, st))
    s.kill(sid)


def main():
    for fc in (True, False):
        with Server(extra=["--profile", "fc" if fc else "e2b"]) as s:
            per_profile(s, fc)
            mask_request_host(s, fc)
            if not fc:
                auto_resume(s)
    flags()
    done()


if __name__ == "__main__":
    main()
