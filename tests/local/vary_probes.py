"""The probes of test_vary.py: each turns one varied detail's behaviour
into a checked fact on a running abx-local (tests/lib/abxlocal.Server)."""
import http.client
import json
import os
import re
import sys
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import Stream, check, envelope, until  # noqa: E402

MiB = 1 << 20
ENVD = 49983


def upload(s, sid, token, size):
    boundary = "e2evary"
    body = (b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"file\"; "
            b"filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n" + b"\0" * size +
            b"\r\n--" + boundary.encode() + b"--\r\n")
    st, data, _ = s.data_request(sid, ENVD, "POST", "/files?path=/tmp/big.bin&username=user", body,
                                 {"Content-Type": "multipart/form-data; boundary=" + boundary,
                                  "X-Access-Token": token})
    return st, data


def secure_and_metadata(s, a):
    """token-denied=403 and metadata-check=strict, on secure sandbox a."""
    sid, token = a["sandboxID"], a["envdAccessToken"]
    st, _ = s.rpc(sid, "/filesystem.Filesystem/Stat", {"path": "/tmp"})
    check(st == 403, "token-denied=403: envd without a token is 403 (%d)" % st)
    st, _ = s.rpc(sid, "/filesystem.Filesystem/Stat", {"path": "/tmp"}, token="0" * 32)
    check(st == 403, "... with a wrong token too (%d)" % st)
    st, _, _ = s.data_request(sid, ENVD, "GET", "/files?path=/etc/hostname&signature=v1_x")
    check(st == 403, "... a download with a forged signature too (%d)" % st)
    st, _ = s.rpc(sid, "/filesystem.Filesystem/Stat", {"path": "/tmp"}, token=token)
    check(st == 200, "... and the right token is served (%d)" % st)
    for md, what in (({"key with space": "v"}, "a key with a space"),
                     ({"k": "v\u00fc"}, "a UTF-8 value")):
        st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "base", "metadata": md})
        check(st == 400 and "metadata" in (js or {}).get("message", ""),
              "metadata-check=strict: %s is 400 naming metadata (%d %r)" % (what, st, js))
    c = s.create("base", metadata={"e2e_test": "a/b.lua::x [1] 'q'", "k.v-1": "x"})
    md = (s.get(c["sandboxID"])[1] or {}).get("metadata", {})
    check(md.get("e2e_test") == "a/b.lua::x [1] 'q'" and md.get("k.v-1") == "x",
          "... printable ASCII values and plain keys are kept (%r)" % md)
    s.kill(c["sandboxID"])


def times_and_reaping(s, sid):
    """time-format=cst-s and reap-delay=30s."""
    _, info, _, _ = s.get(sid)
    started = info["startedAt"]
    at = datetime.fromisoformat(started)
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00$", started) and
          abs(at.timestamp() - time.time()) < 120,
          "time-format=cst-s: whole seconds at +08:00, the right instant (%s)" % started)
    for delta, found in ((-3600, True), (3600, False)):
        after = datetime.fromtimestamp(time.time() + delta, timezone(timedelta(hours=8)))
        q = urllib.parse.quote(after.isoformat(timespec="seconds"))
        st, js, _, _ = s.request("GET", "/v2/sandboxes?startedAfter=" + q)
        got = sid in [x["sandboxID"] for x in js or []]
        check(st == 200 and got == found, "... startedAfter at +08:00 read as such (%+d s: %d %s)" % (
            delta, st, got))
    s.faults(createLatencyMs=2000)   # a start-up of 2 s at least
    c = s.create("base", timeout=120)
    s.faults(createLatencyMs=0)
    _, info, _, _ = s.get(c["sandboxID"])
    life = (datetime.fromisoformat(info["endAt"]) - datetime.fromisoformat(info["startedAt"]))
    check(life.total_seconds() <= 118, "lifetime-from=request: the start-up comes out of the "
          "timeout (%s)" % life)
    s.kill(c["sandboxID"])
    short = s.create("base", timeout=1)["sandboxID"]
    time.sleep(2.5)
    st, info, _, _ = s.get(short)
    check(st == 200 and info["state"] == "running" and
          datetime.fromisoformat(info["endAt"]).timestamp() < time.time(),
          "reap-delay=30s: past its endAt and still running (%d %r)" % (st, info))
    s.kill(short)


def modes(s, sid):
    """[mode of a file uploaded, of a folder made, of a file a command made]."""
    st, _ = s.rpc(sid, "/filesystem.Filesystem/MakeDir", {"path": "/tmp/m/d"})
    b = "e2evary"
    body = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"
            "x\r\n--%s--\r\n" % (b, b)).encode()
    st2, _, _ = s.data_request(sid, ENVD, "POST", "/files?path=/tmp/m/up.txt&username=user", body,
                               {"Content-Type": "multipart/form-data; boundary=" + b})
    code, out, _ = s.run(sid, "touch /tmp/m/cmd.txt; cd /tmp/m && find up.txt d cmd.txt "
                              "-maxdepth 0 -printf '%m\\n'", user="root")
    got = out.split()
    print("modes: MakeDir %d, upload %d, find %r" % (st, st2, got))
    return got


ECHO = r"""
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        out = json.dumps({"version": self.request_version, "te": self.headers.get("Transfer-Encoding"),
                          "cl": self.headers.get("Content-Length"), "len": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8000), H).serve_forever()
"""


def through_gateway(s, sid, mib):
    """A chunked POST of mib MiB to port 8000 of sid, where an echo server
    tells what reached it: (status, body)."""
    c = http.client.HTTPConnection(s.data, timeout=120)
    block = b"g" * MiB
    c.request("POST", "/", (block for _ in range(mib)),
              {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8000"}, encode_chunked=True)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out


def gateway(s, http_version, cap_mib):
    """A request through the buffering gateway arrives whole, with a
    Content-Length, in the HTTP version drawn; above the cap, the
    gateway's own HTML 413."""
    sid = s.create("base")["sandboxID"]
    s.run(sid, "cat > /tmp/echo.py <<'EOF'\n%s\nEOF\nnohup python3 /tmp/echo.py >/dev/null 2>&1 &" % ECHO)
    check(until(lambda: s.data_request(sid, 8000, "GET", "/")[0] != 502, 30, 0.2),
          "the echo server answers")
    st, out = through_gateway(s, sid, 2)
    seen = json.loads(out) if st == 200 else {}
    check(seen.get("version") == "HTTP/" + http_version and seen.get("cl") == str(2 * MiB) and
          not seen.get("te") and seen.get("len") == 2 * MiB,
          "gateway=buffer: a chunked 2 MiB body arrives whole with a Content-Length, "
          "HTTP/%s (%d %r)" % (http_version, st, out[:200]))
    st, out = through_gateway(s, sid, cap_mib + 1)
    check(st == 413 and out.lstrip().startswith(b"<html>"),
          "... %d MiB gets the gateway's own HTML 413 (%d %r)" % (cap_mib + 1, st, out[:80]))
    s.kill(sid)


def start_envs(s, create_too):
    """start-envs: whether a create's env reaches a server template's server
    (it always reaches a command)."""
    sid = s.create("python-hello", envVars={"E2E_PROBE": "given"})["sandboxID"]
    check(until(lambda: s.data_request(sid, 8080, "GET", "/health")[0] == 200, 30, 0.2),
          "the server template's server answers")
    st, out, _ = s.data_request(sid, 8080, "GET", "/env?name=E2E_PROBE")
    code, cmd_out, _ = s.run(sid, "printenv E2E_PROBE")
    check(cmd_out == "given\n" and (st == 200) == create_too,
          "start-envs=%s: a create's env %s the server, reaches a command (%d %r, %r)" % (
              "create" if create_too else "template", "reaches" if create_too else "not in",
              st, out[:120], cmd_out))
    s.kill(sid)


def paged(s):
    """page-size=20: a limit of 50 gets 20 and a token for the rest."""
    ids = [s.create("base", metadata={"page": "p"})["sandboxID"] for _ in range(21)]
    st, js, h, _ = s.request("GET", "/v2/sandboxes?metadata=page%3Dp&limit=50")
    token = h.get("x-next-token")
    st2, js2, _, _ = s.request("GET", "/v2/sandboxes?metadata=page%3Dp&limit=50&nextToken=" +
                               urllib.parse.quote(token or ""))
    got = [x["sandboxID"] for x in (js or []) + (js2 or [])]
    check(st == 200 and len(js or []) == 20 and token and st2 == 200 and sorted(got) == sorted(ids),
          "page-size=20: 20 of 21, then the rest by the token (%d %d %s)" % (
              len(js or []), len(js2 or []), token))
    for sid in ids:
        s.kill(sid)


def watch_events(s, sid, path, cmd, recursive=False):
    """[(type, name)] a polled watcher on path reports while cmd runs."""
    st, js = s.rpc(sid, "/filesystem.Filesystem/CreateWatcher",
                   {"path": path, "recursive": recursive})
    wid = (js or {}).get("watcherId")
    check(st == 200 and wid, "a watcher on %s (%d %r)" % (path, st, js))
    s.run(sid, cmd)
    time.sleep(0.5)
    st, js = s.rpc(sid, "/filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid})
    s.rpc(sid, "/filesystem.Filesystem/RemoveWatcher", {"watcherId": wid})
    return [(e.get("type", "")[len("EVENT_TYPE_"):].lower(), e.get("name"))
            for e in (js or {}).get("events", [])]


def watched_twice(s, sid):
    """watch-events=twice, watch-rename=to, watch-subdirs=late."""
    s.run(sid, "mkdir -p /tmp/w && echo x > /tmp/w/a.txt")
    ev = watch_events(s, sid, "/tmp/w", "echo x > /tmp/w/twice.txt; mv /tmp/w/a.txt /tmp/w/b.txt")
    check(ev.count(("create", "twice.txt")) == 2,
          "watch-events=twice: the create came twice (%r)" % ev)
    check(ev.count(("rename", "b.txt")) == 2 and not [e for e in ev if e[1] == "a.txt"],
          "watch-rename=to: one rename naming the new name, nothing for the old (%r)" % ev)
    ev = watch_events(s, sid, "/tmp/w", "mkdir /tmp/w/new && echo 1 > /tmp/w/new/early.txt; "
                                        "sleep 1; echo 2 > /tmp/w/new/later.txt", recursive=True)
    check(("create", "new") in ev and ("create", "new/later.txt") in ev and
          ("create", "new/early.txt") not in ev,
          "watch-subdirs=late: what a new folder holds at once goes unseen, later not (%r)" % ev)
    stdin_refused(s, sid)


def stdin_refused(s, sid):
    """stdin-refused=invalid: input to a process started without stdin."""
    c = http.client.HTTPConnection(s.data, timeout=60)
    c.request("POST", "/process.Process/Start",
              envelope({"process": {"cmd": "/bin/sleep", "args": ["30"]}, "stdin": False}),
              {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
               "Authorization": "Basic cm9vdDo=", "E2b-Sandbox-Id": sid,
               "E2b-Sandbox-Port": str(ENVD)})
    first = Stream(c, c.getresponse()).next()
    pid = first and first[1].get("event", {}).get("start", {}).get("pid")
    st, js = s.rpc(sid, "/process.Process/SendInput",
                   {"process": {"pid": pid}, "input": {"stdin": "eA=="}})
    c.close()
    check(pid and st == 400 and (js or {}).get("code") == "invalid_argument",
          "stdin-refused=invalid: input without stdin is invalid_argument (%s %d %r)" % (
              pid, st, js))


# What a connect out does, as bash sees it: "connected" and what a read
# got within 2 s (nothing: read=timeout), or "refused" and the error.
EGRESS_PROBE = r"""
for port in 80 443 22; do
  if { exec 3<>"/dev/tcp/192.0.2.1/$port"; } 2>/tmp/err; then
    if IFS= read -r -t 2 line <&3; then r="got:$line"; elif [ $? -gt 128 ]; then r=timeout;
    else r=eof; fi
    echo "$port connected read=$r"; exec 3<&-
  else echo "$port refused $(tr -d '\n' </tmp/err | sed 's/.*: //')"; fi
done
awk 'NR > 2 {print "iface " $1}' /proc/net/dev
"""


def egress(s, fc):
    """egress: with internet access off, 192.0.2.1 (a documentation
    address) as the target. fc: 80 and 443 connect and read nothing, 22 is
    refused; unreachable: all three refused. Either way the namespace has
    no interface but lo, so nothing can leave it; with internet access on,
    nothing changes."""
    off = s.create("base", allow_internet_access=False)["sandboxID"]
    on = s.create("base")["sandboxID"]
    code, out, err = s.run(off, EGRESS_PROBE, timeout=30)
    lines = out.split("\n")
    want = "connected read=timeout" if fc else "refused Network is unreachable"
    for port in ("80", "443"):
        check("%s %s" % (port, want) in lines,
              "egress=%s: 192.0.2.1:%s %s (%r)" % ("fc" if fc else "unreachable", port, want, out))
    check(any(x.startswith("22 refused") for x in lines),
          "... and port 22 is refused (%r)" % out)
    check([x for x in lines if x.startswith("iface ")] == ["iface lo:"],
          "... the namespace has lo alone: no packet can leave it (%r)" % out)
    code, out, err = s.run(on, EGRESS_PROBE, timeout=30)
    check("80 refused Network is unreachable" in out,
          "... internet access on is not filtered: abx-local has no way out (%r)" % out)
    s.kill(off)
    s.kill(on)
