"""config.json `compat` (abx-local's platform profiles): every switch with
the values the fc profile writes (envd 0.5.2 as the FC platform reports
it) and those the e2b profile writes (envd 0.6.4), plus what both share:
/proc files read to their end, overwrites clearing stale metadata."""
import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd, multipart  # noqa: E402
from abxtest import check, done, eq, free_port  # noqa: E402
from fusefs import EmptyFuse  # noqa: E402

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "abx-local", "envd", "version.h")) as f:
    BUILD_VERSION = re.search(r'#define ABXL_ENVD_VERSION "([^"]+)"', f.read()).group(1)

FC = {"version": "0.5.2", "octetUpload": False, "gzip": False, "fileMetadata": False,
      "watchIncludeEntry": False, "watchNetworkMounts": False, "protoCodec": False,
      "signedUrls": False, "keepaliveDefaultS": 30, "keepaliveMaxS": 60}
E2B = {"version": "0.6.4", "octetUpload": True, "gzip": True, "fileMetadata": True,
       "watchIncludeEntry": True, "watchNetworkMounts": True, "protoCodec": True,
       "signedUrls": True, "keepaliveDefaultS": 90, "keepaliveMaxS": 0}
TOKEN = "compat-t0ken"
TOK = {"X-Access-Token": TOKEN}
OCT = {"Content-Type": "application/octet-stream"}
FS = "filesystem.Filesystem/"
UNAUTH = ("unauthorized access, please provide a valid access token or "
          "method signing if supported")
NOT_MULTIPART = ("error parsing multipart form: request Content-Type isn't "
                 "multipart/form-data")
NEXTPART_EOF = "error reading form: multipart: NextPart: EOF"


def sign(path, op, user=None):
    raw = "%s:%s:%s:%s" % (path, op, user or "", TOKEN)
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


def js(body):
    try:
        return json.loads(body)
    except ValueError:
        return body


def put(e, path, data, meta=None, octet=False):
    """Uploads with the token (multipart unless octet); (status, answer)."""
    if octet:
        body, hdr = data, dict(OCT)
    else:
        body, hdr = multipart([("file", path, data)])
    hdr.update(TOK)
    for k, v in (meta or {}).items():
        hdr["X-Metadata-" + k] = v
    st, rb, _ = e.request("POST", e.files_url(path=path), body, hdr)
    return st, js(rb)


def e2b_xattrs(path):
    return sorted(n for n in os.listxattr(path) if n.startswith("user.e2b."))


def mount_net(e):
    """home/net: an empty FUSE mount, envd's stand-in for a network one."""
    d = os.path.join(e.home, "net")
    os.makedirs(d)
    try:
        m = EmptyFuse(d)
    except OSError as err:
        print("note: no FUSE mount (%s): network-mount checks skipped" % err)
        e.fuse = False
        return
    e.fuse = True
    e.cleanups.append(m.close)


def first_keepalive(e, interval, limit):
    """Seconds from opening a WatchDir stream (Keepalive-Ping-Interval
    interval, None: no header) to its first keepalive; None within limit."""
    extra = {"Keepalive-Ping-Interval": interval} if interval else {}
    t0 = time.time()
    s = e.stream(FS + "WatchDir", {"path": "/home/user/ka"}, extra=extra, timeout=limit)
    try:
        while True:
            m = s.next()
            if m is None:
                return None
            if "keepalive" in m[1]:
                return m[2] - t0
    except OSError:  # the socket timeout: nothing in limit seconds
        return None
    finally:
        s.close()


class DefaultKeepalive(threading.Thread):
    """first_keepalive without the header, measured while the other checks
    run (the profiles' defaults are 30 s and 90 s)."""

    def __init__(self, e):
        super().__init__(daemon=True)
        os.makedirs(os.path.join(e.home, "ka"), exist_ok=True)
        self.e, self.got = e, None
        self.start()

    def run(self):
        self.got = first_keepalive(self.e, None, 36)


def check_version(e, name, compat):
    st, _, h = e.request("POST", "/init", b"{}", {"Content-Type": "application/json"})
    eq((st, h.get("x-envd-version")), (204, compat["version"]),
       name + ": /init reports the compat version")


def check_uploads(e, name, fc):
    # octetUpload: envd 0.5.2 only parsed multipart, asking before the user.
    for ct, what in (("application/octet-stream", "octet-stream"),
                     ("text/plain", "other content type"), (None, "no content type")):
        hdr = dict(TOK, **({"Content-Type": ct} if ct else {}))
        st, rb, h = e.request("POST", e.files_url(path="/home/user/oct.bin"), b"raw", hdr)
        if fc:
            eq((st, js(rb)), (500, {"code": 500, "message": NOT_MULTIPART}),
               name + ": %s upload fails as envd 0.5.2" % what)
            check(h.get("content-type", "").startswith("application/json"),
                  name + ": that failure is JSON")
        elif ct == OCT["Content-Type"]:
            eq((st, js(rb)[0]["path"]), (200, "/home/user/oct.bin"), name + ": octet upload")
        else:
            eq(st, 400, name + ": %s upload 400" % what)
    if fc:
        check(not os.path.exists(os.path.join(e.home, "oct.bin")), name + ": nothing written")
    st, rb, _ = e.request("POST", e.files_url(path="x", username="ghost"), b"raw",
                          dict(TOK, **OCT))
    eq(st, 500 if fc else 401, name + ": octet upload for an unknown user")
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/nb"), b"x",
                          dict(TOK, **{"Content-Type": "multipart/form-data"}))
    if fc:
        eq((st, js(rb)), (500, {"code": 500, "message": "error parsing multipart form: "
                                "no multipart boundary param in Content-Type"}),
           name + ": multipart without boundary fails as envd 0.5.2")
    else:
        eq(st, 400, name + ": multipart without boundary 400")
    body, hdr = multipart([("other", "x", b"1")])
    st, rb, _ = e.request("POST", "/files", body, dict(hdr, **TOK))
    eq((st, js(rb)) if fc else st, (200, []) if fc else 400,
       name + ": multipart without a 'file' part")
    body, hdr = multipart([("file", "/home/user/trunc", b"abcdef" * 100)])
    st, rb, _ = e.request("POST", "/files", body[:-60], dict(hdr, **TOK))
    eq((st, js(rb)) if fc else st,
       (500, {"code": 500, "message": "error writing file: unexpected EOF"}) if fc else 400,
       name + ": truncated multipart")

    # gzip: 0.5.2 never looked at Content-Encoding or Accept-Encoding.
    body, hdr = multipart([("file", "/home/user/gz.txt", b"zipped" * 1000)])
    hdr.update(TOK, **{"Content-Encoding": "gzip"})
    st, rb, _ = e.request("POST", "/files", gzip.compress(body), hdr)
    if fc:
        eq((st, js(rb)), (500, {"code": 500, "message": NEXTPART_EOF}),
           name + ": gzip'd multipart fails as envd 0.5.2 (the body is not inflated)")
        check(not os.path.exists(os.path.join(e.home, "gz.txt")), name + ": nothing written")
    else:
        eq(st, 200, name + ": gzip'd multipart upload")
        eq(open(os.path.join(e.home, "gz.txt"), "rb").read(), b"zipped" * 1000,
           name + ": gzip'd multipart inflated")
    body, hdr = multipart([("file", "/home/user/br.txt", b"plain")])
    hdr.update(TOK, **{"Content-Encoding": "br"})
    st, rb, _ = e.request("POST", "/files", body, hdr)
    if fc:
        eq(st, 200, name + ": an unknown Content-Encoding is ignored")
        eq(open(os.path.join(e.home, "br.txt"), "rb").read(), b"plain",
           name + ": body stored as sent")
    else:
        eq(st, 400, name + ": unknown Content-Encoding 400")

    data = b"download me " * 500
    put(e, "/home/user/dl.txt", data)
    st, rb, h = e.request("GET", e.files_url(path="/home/user/dl.txt"),
                          headers=dict(TOK, **{"Accept-Encoding": "gzip"}))
    if fc:
        eq((st, h.get("content-encoding"), rb == data), (200, None, True),
           name + ": Accept-Encoding gzip ignored")
        check("vary" not in h, name + ": no Vary")
    else:
        eq((st, h.get("content-encoding"), h.get("vary")), (200, "gzip", "Accept-Encoding"),
           name + ": Accept-Encoding gzip: gzip'd answer")
        check((gzip.decompress(rb) if h.get("content-encoding") else rb) == data,
              name + ": gzip'd download content")
    for ae, want in (("identity;q=0", 406), ("gzip;q=0.5, identity", None), ("br", None),
                     ("*;q=0, gzip", "gzip")):
        st, rb, h = e.request("GET", e.files_url(path="/home/user/dl.txt"),
                              headers=dict(TOK, **{"Accept-Encoding": ae}))
        if fc or want is None:
            eq((st, h.get("content-encoding"), rb == data), (200, None, True),
               name + ": Accept-Encoding %r: plain" % ae)
        elif want == 406:
            eq((st, js(rb).get("code")), (406, 406), name + ": Accept-Encoding %r: 406" % ae)
        else:
            eq((st, h.get("content-encoding")), (200, want),
               name + ": Accept-Encoding %r: %s" % (ae, want))


def check_metadata(e, name, fc):
    # fileMetadata: 0.5.2 knew no X-Metadata-* and no EntryInfo.metadata.
    st, ans = put(e, "/home/user/meta.txt", b"m", {"Owner": "me"})
    eq((st, ans[0].get("metadata")), (200, None if fc else {"owner": "me"}),
       name + ": upload answer metadata")
    eq(e2b_xattrs(os.path.join(e.home, "meta.txt")), [] if fc else ["user.e2b.owner"],
       name + ": user.e2b.* xattrs written")
    hand = os.path.join(e.home, "hand.txt")
    with open(hand, "w") as f:
        f.write("h")
    os.setxattr(hand, "user.e2b.hand", b"set")
    st, body = e.unary(FS + "Stat", {"path": "hand.txt"})
    eq(body["entry"].get("metadata"), None if fc else {"hand": "set"},
       name + ": Stat metadata of a file with user.e2b.* xattrs")
    st, body = e.unary(FS + "ListDir", {"path": "/home/user"})
    got = [x.get("metadata") for x in body["entries"] if x["name"] == "hand.txt"]
    eq(got, [None] if fc else [{"hand": "set"}], name + ": ListDir metadata")
    st, ans = put(e, "/home/user/badmeta", b"x", {"Bad": "caf\u00e9"})
    eq(st, 200 if fc else 400, name + ": invalid metadata header")

    # An overwrite replaces the whole set, none given included (both codecs).
    for octet in ((False,) if fc else (False, True)):
        how = "octet" if octet else "multipart"
        p = "/home/user/over-%s" % how
        if fc:
            os.close(os.open(os.path.join(e.home, p[11:]), os.O_CREAT | os.O_WRONLY))
            os.setxattr(os.path.join(e.home, p[11:]), "user.e2b.stale", b"1")
        else:
            put(e, p, b"1", {"A": "1", "B": "2"}, octet)
        st, ans = put(e, p, b"2", None, octet)
        eq((st, ans[0].get("metadata")), (200, None), name + ": %s overwrite answer" % how)
        st, body = e.unary(FS + "Stat", {"path": p})
        eq(body["entry"].get("metadata"), None,
           name + ": %s overwrite without metadata: Stat shows no old metadata" % how)
        # envd 0.5.2 never touched xattrs: a stale one stays (unreported).
        eq(e2b_xattrs(os.path.join(e.home, p[11:])), ["user.e2b.stale"] if fc else [],
           name + ": %s overwrite: user.e2b.* xattrs left" % how)
        if not fc:
            put(e, p, b"3", {"A": "x"}, octet)
            st, ans = put(e, p, b"4", {"C": "3"}, octet)
            eq(ans[0].get("metadata"), {"c": "3"}, name + ": %s overwrite answer: the new set" % how)
            eq(e.unary(FS + "Stat", {"path": p})[1]["entry"].get("metadata"), {"c": "3"},
               name + ": %s overwrite with metadata: exactly the new set" % how)


def watch_events(s, want, secs=10):
    """Filesystem events of s until one named want arrives."""
    evs, end = [], time.time() + secs
    while time.time() < end:
        m = s.next()
        if m is None:
            break
        if "filesystem" in m[1]:
            evs.append(m[1]["filesystem"])
            if m[1]["filesystem"]["name"] == want:
                break
    return evs


def check_watch(e, name, fc):
    os.makedirs(os.path.join(e.home, "wd"))
    s = e.stream(FS + "WatchDir", {"path": "/home/user/wd", "includeEntry": True})
    eq(s.next()[1], {"start": {}}, name + ": WatchDir includeEntry starts")
    put(e, "/home/user/wd/n.txt", b"n")
    evs = watch_events(s, "n.txt")
    s.close()
    ents = [x.get("entry", {}).get("path") for x in evs if x["name"] == "n.txt"]
    check(ents and all(x == (None if fc else "/home/user/wd/n.txt") for x in ents),
          name + ": includeEntry %s (%r)" % ("ignored" if fc else "adds the entry", ents))
    st, body = e.unary(FS + "CreateWatcher", {"path": "wd", "includeEntry": True})
    wid = body.get("watcherId", "")
    put(e, "/home/user/wd/p.txt", b"p")
    evs, end = [], time.time() + 10
    while time.time() < end and not any(x["name"] == "p.txt" for x in evs):
        time.sleep(0.1)
        evs += e.unary(FS + "GetWatcherEvents", {"watcherId": wid})[1].get("events", [])
    ents = [x.get("entry", {}).get("path") for x in evs if x["name"] == "p.txt"]
    check(ents and all(x == (None if fc else "/home/user/wd/p.txt") for x in ents),
          name + ": CreateWatcher includeEntry %s (%r)" % ("ignored" if fc else "honoured", ents))
    e.unary(FS + "RemoveWatcher", {"watcherId": wid})
    # A field envd does not know is never read, whatever its type.
    ev, end = e.stream(FS + "WatchDir", {"path": "wd", "includeEntry": "yes",
                                         "allowNetworkMounts": 7},
                       extra={"Connect-Timeout-Ms": "300"}).all()
    eq(end.get("error", {}).get("code"), "deadline_exceeded" if fc else "invalid_argument",
       name + ": wrongly typed includeEntry/allowNetworkMounts")

    if not e.fuse:
        return
    refused = {"code": "invalid_argument",
               "message": "cannot watch path on network filesystem: /home/user/net"}
    ev, end = e.stream(FS + "WatchDir", {"path": "net"}).all()
    eq((ev, end.get("error")), ([], refused), name + ": WatchDir on a network mount refused")
    ev, end = e.stream(FS + "WatchDir", {"path": "net", "allowNetworkMounts": True},
                       extra={"Connect-Timeout-Ms": "300"}).all()
    if fc:
        eq((ev, end.get("error")), ([], refused),
           name + ": allowNetworkMounts ignored (0.5.2 always refused)")
    else:
        eq((ev, end.get("error", {}).get("code")), ([{"start": {}}], "deadline_exceeded"),
           name + ": allowNetworkMounts watches a network mount")
    st, body = e.unary(FS + "CreateWatcher", {"path": "net", "allowNetworkMounts": True})
    if fc:
        eq((st, body), (400, refused), name + ": CreateWatcher allowNetworkMounts ignored")
    else:
        check(st == 200 and "watcherId" in body, name + ": CreateWatcher on a network mount")
        e.unary(FS + "RemoveWatcher", {"watcherId": body.get("watcherId", "")})
    st, body = e.unary(FS + "CreateWatcher", {"path": "net"})
    eq((st, body), (400, refused), name + ": CreateWatcher on a network mount refused")


def check_proto(e, name, fc):
    for proc, ct in (("Stat", "application/proto"), ("WatchDir", "application/connect+proto")):
        st, rb, h = e.request("POST", "/" + FS + proc, b"\x0a\x01/",
                              dict(TOK, **{"Content-Type": ct, "Connect-Protocol-Version": "1"}))
        if fc:
            body = js(rb)
            check(st == 400 and isinstance(body, dict) and
                  body.get("code") == "invalid_argument" and
                  "only the JSON codec" in body.get("message", ""),
                  name + ": %s refused with 400 naming the JSON codec (%d %r)" % (ct, st, rb))
        else:
            eq((st, h.get("accept-post")), (415, "application/json" if proc == "Stat"
                                            else "application/connect+json"),
               name + ": %s answered 415 (as today)" % ct)
    eq(e.unary(FS + "Stat", {"path": "/"})[0], 200, name + ": the JSON codec works")


def check_signed(e, name, fc):
    put(e, "/home/user/s.txt", b"signed")
    st, rb, _ = e.request("GET", e.files_url(path="/home/user/s.txt",
                                             signature=sign("/home/user/s.txt", "read")))
    eq((st, js(rb) if fc else rb),
       (401, {"code": 401, "message": UNAUTH}) if fc else (200, b"signed"),
       name + ": signed read without a token")
    body, hdr = multipart([("file", "/home/user/s.txt", b"overwritten")])
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/s.txt",
                                              signature=sign("/home/user/s.txt", "write")),
                          body, hdr)
    eq(st, 401 if fc else 200, name + ": signed write without a token")
    eq(open(os.path.join(e.home, "s.txt"), "rb").read(), b"signed" if fc else b"overwritten",
       name + ": file after the signed write")
    st, rb, _ = e.request("GET", e.files_url(path="/home/user/s.txt"))
    eq((st, js(rb).get("message")),
       (401, UNAUTH if fc else "missing signature query parameter"),
       name + ": no token, no signature")
    st, rb, _ = e.request("GET", e.files_url(path="/home/user/s.txt"), headers=TOK)
    eq(st, 200, name + ": with the token")


def check_proc(e, name, fc):
    # Files whose size says nothing (procfs 0, sysfs 4096) are read to EOF.
    for p, mark in (("/proc/self/status", b"Name:\tabx-envd"), ("/proc/cpuinfo", b"processor")):
        st, rb, h = e.request("GET", e.files_url(path=p), headers=TOK)
        check(st == 200 and mark in rb, name + ": %s read (%d, %d bytes)" % (p, st, len(rb)))
        if not fc:
            st, rb, h = e.request("GET", e.files_url(path=p),
                                  headers=dict(TOK, **{"Accept-Encoding": "gzip"}))
            check(st == 200 and h.get("content-encoding") == "gzip" and
                  mark in gzip.decompress(rb), name + ": %s read gzip'd" % p)
    p = "/sys/class/net/lo/address"
    if os.path.exists(p):
        try:  # a Content-Length of st_size (4096) would cut the answer short
            st, rb, _ = e.request("GET", e.files_url(path=p), headers=TOK)
        except (http.client.HTTPException, OSError) as err:
            st, rb = "error", repr(err)
        eq((st, rb), (200, open(p, "rb").read()), name + ": sysfs file read")


def check_keepalive(e, name, interval, lo, hi):
    got = first_keepalive(e, interval, hi + 2)
    check(got is not None and lo <= got <= hi,
          name + ": Keepalive-Ping-Interval %s: first keepalive at %s s, want %s..%s"
          % (interval, got and round(got, 2), lo, hi))


def check_config_errors():
    with tempfile.TemporaryDirectory(prefix="abx-envd-compat-") as d:
        config_errors(d)
    r = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=10)
    eq(r.stdout.strip(), BUILD_VERSION, "--version is the build's own version")


def config_errors(d):
    for compat, member in ((5, "compat"), ([], "compat"), ({"gzip": "no"}, "gzip"),
                           ({"signedUrls": 1}, "signedUrls"),
                           ({"keepaliveMaxS": "x"}, "keepaliveMaxS"),
                           ({"keepaliveDefaultS": 0}, "keepaliveDefaultS"),
                           ({"version": 3}, "version"), ({"version": "0.5 2"}, "version")):
        cfg = os.path.join(d, "config.json")
        with open(cfg, "w") as f:
            json.dump({"sandboxID": "s", "compat": compat}, f)
        try:
            r = subprocess.run([BIN, "--config", cfg, "--port", str(free_port()),
                                "--listen-addr", "127.0.0.1"],
                               capture_output=True, text=True, timeout=10)
            rc, err = r.returncode, r.stderr.strip()
        except subprocess.TimeoutExpired:  # it took the config and serves
            rc, err = None, "still running after 10 s"
        check(rc == 1 and member in err,
              "config error names %s for compat %r (rc %s: %s)" % (member, compat, rc, err))


def check_absent(e, what):
    """compat absent (or with unknown members only): the e2b profile."""
    check_version(e, what, {"version": BUILD_VERSION})
    st, rb, h = e.request("GET", e.files_url(path="/proc/self/status"),
                          headers={"Accept-Encoding": "gzip"})
    eq((st, h.get("content-encoding")), (200, "gzip"), what + ": gzip as the e2b profile")
    st, rb, h = e.request("POST", "/" + FS + "Stat", b"",
                          {"Content-Type": "application/proto"})
    eq(st, 415, what + ": proto 415 as the e2b profile")


check_config_errors()
with Envd(BIN, compat={"future": {"x": 1}}) as e:
    check_absent(e, "unknown members only")

# The 30 s / 90 s defaults are measured side by side, while the rest runs.
with Envd(BIN, token=TOKEN, compat=FC, setup=mount_net) as fc, \
        Envd(BIN, token=TOKEN, compat=E2B, setup=mount_net) as e2b, \
        Envd(BIN) as plain:
    probes = [(fc, "fc", DefaultKeepalive(fc)), (e2b, "e2b", DefaultKeepalive(e2b)),
              (plain, "no compat", DefaultKeepalive(plain))]
    check_absent(plain, "no compat")
    for e, name in ((fc, "fc"), (e2b, "e2b")):
        is_fc = e is fc
        check_version(e, name, FC if is_fc else E2B)
        check_uploads(e, name, is_fc)
        check_metadata(e, name, is_fc)
        check_watch(e, name, is_fc)
        check_proto(e, name, is_fc)
        check_signed(e, name, is_fc)
        check_proc(e, name, is_fc)
        check_keepalive(e, name, "3", 2.8, 3.8)  # below any clamp
    for e, name, probe in probes:
        probe.join(40)
        if name == "fc":
            check(probe.got is not None and 29.5 <= probe.got <= 31.5,
                  "fc: default keepalive after 30 s (%s)" % probe.got)
        else:
            eq(probe.got, None, name + ": no keepalive within 36 s (default 90 s)")

# The clamp and the default, quickly: compat values other than the profiles'.
with Envd(BIN, compat={"keepaliveDefaultS": 1, "keepaliveMaxS": 2}) as e:
    os.makedirs(os.path.join(e.home, "ka"))
    check_keepalive(e, "default 1 s", None, 0.8, 1.8)
    check_keepalive(e, "max 2 s", "50", 1.8, 2.8)
    check_keepalive(e, "max 2 s", "1", 0.8, 1.8)
done()
