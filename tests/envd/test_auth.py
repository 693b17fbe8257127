"""Secure sandboxes: X-Access-Token middleware, signed /files URLs, and
Basic-auth user selection."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd  # noqa: E402
from abxtest import check, done, eq, outputs  # noqa: E402

TOKEN = "s3cr3t-token"


def sign(path, op, user, exp=None):
    raw = "%s:%s:%s:%s" % (path, op, user or "", TOKEN)
    if exp is not None:
        raw += ":%d" % exp
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


OCT = {"Content-Type": "application/octet-stream"}
UNAUTH = ("unauthorized access, please provide a valid access token or "
          "method signing if supported")

with Envd(sys.argv[1], token=TOKEN) as e:
    eq(e.request("GET", "/health")[0], 204, "health needs no token")
    st, rb, _ = e.request("GET", "/envs")
    eq(st, 401, "envs without token 401")
    eq(json.loads(rb), {"code": 401, "message": UNAUTH}, "401 body")
    eq(e.request("GET", "/envs", headers={"X-Access-Token": TOKEN})[0], 200,
       "envs with token")
    eq(e.request("GET", "/envs", headers={"X-Access-Token": TOKEN + "x"})[0], 401,
       "wrong token 401")
    st, body = e.unary("filesystem.Filesystem/Stat", {"path": "/"}, token=False)
    eq(st, 401, "unary RPC without token 401")
    eq(body, {"code": 401, "message": UNAUTH}, "RPC 401 is plain JSON")
    s = e.stream("process.Process/Start", {"process": {"cmd": "true"}}, token=False)
    eq(s.status, 401, "stream RPC without token is HTTP 401")
    s.close()
    eq(e.unary("filesystem.Filesystem/Stat", {"path": "/"})[0], 200, "RPC with token")

    # /files with the header.
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/f.txt"), b"data",
                          dict(OCT, **{"X-Access-Token": TOKEN}))
    eq(st, 200, "upload with token")
    eq(e.request("GET", e.files_url(path="/home/user/f.txt"),
                 headers={"X-Access-Token": "bad"})[0], 401, "files with bad token")
    # Missing signature.
    st, rb, _ = e.request("GET", e.files_url(path="/home/user/f.txt"))
    eq(st, 401, "files without token or signature 401")
    eq(json.loads(rb)["message"], "missing signature query parameter", "missing sig message")
    # Valid signatures (no user, user, expiration in the future).
    st, data, _ = e.request("GET", e.files_url(
        path="/home/user/f.txt", signature=sign("/home/user/f.txt", "read", None)))
    eq((st, data), (200, b"data"), "signed read")
    exp = int(time.time()) + 120
    st, data, _ = e.request("GET", e.files_url(
        path="f.txt", username="user", signature=sign("f.txt", "read", "user", exp),
        signature_expiration=exp))
    eq((st, data), (200, b"data"), "signed read, raw relative path + user + expiration")
    st, rb, _ = e.request("POST", e.files_url(
        path="/home/user/w.txt", signature=sign("/home/user/w.txt", "write", None)),
        b"w", OCT)
    eq(st, 200, "signed write")
    # Wrong operation, expired, tampered.
    st, _, _ = e.request("POST", e.files_url(
        path="/home/user/w.txt", signature=sign("/home/user/w.txt", "read", None)),
        b"w", OCT)
    eq(st, 401, "read signature used for write 401")
    old = int(time.time()) - 10
    st, rb, _ = e.request("GET", e.files_url(
        path="/home/user/f.txt", signature=sign("/home/user/f.txt", "read", None, old),
        signature_expiration=old))
    eq(st, 401, "expired signature 401")
    eq(json.loads(rb)["message"], "signature is already expired", "expired message")
    st, _, _ = e.request("GET", e.files_url(
        path="/home/user/f.txt", signature=sign("/home/user/f.txt", "read", None, exp),
        signature_expiration=exp + 1))
    eq(st, 401, "tampered expiration 401")
    st, _, _ = e.request("GET", e.files_url(
        path="/home/user/other", signature=sign("/home/user/f.txt", "read", None)))
    eq(st, 401, "signature for another path 401")
    # A refused upload is answered before its body is read (curl sends
    # Expect: 100-continue for big bodies and never gets the 100).
    big = os.path.join(e.dir, "big.bin")
    with open(big, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}",
                        "-H", "Content-Type: application/octet-stream",
                        "--data-binary", "@" + big,
                        "http://127.0.0.1:%d/files?path=/tmp/big" % e.port],
                       capture_output=True, text=True, timeout=60)
    code, sent = r.stdout.split()
    eq(code, "401", "unsigned big upload refused")
    check(float(sent) < 64 * 1024 * 1024, "refused body not read (%s bytes sent)" % sent)
    eq(e.request("GET", "/health")[0], 204, "healthy after a refused upload")
    check(TOKEN not in open(os.path.join(e.dir, "envd.log")).read(), "token never logged")

with Envd(sys.argv[1], default_user="user") as e:
    # Basic auth selects the user; absent => defaultUser.
    out, _, end = outputs(e.run("id -un; echo $HOME; pwd")[0])
    eq(out, b"user\n/home/user\n/home/user\n", "default user is user")
    out, _, end = outputs(e.run("id -un; id -u; echo $HOME; pwd", user="root")[0])
    eq(out, b"root\n0\n/root\n/root\n", "Basic root:")
    events, endst = e.run("true", user="ghost")
    eq(endst.get("error", {}).get("code"), "unauthenticated", "unknown user stream error")
    eq(endst["error"].get("message"), "invalid username: 'ghost'", "unknown user message")
    st, body = e.unary("filesystem.Filesystem/Stat", {"path": "x"}, user="ghost")
    eq(st, 401, "unknown user unary 401")
    eq(body.get("code"), "unauthenticated", "unary unauthenticated code")
    st, body = e.unary("filesystem.Filesystem/MakeDir", {"path": "rootdir"}, user="root")
    eq(body["entry"]["path"], "/root/rootdir", "relative path under root's home")
    eq(body["entry"]["owner"], "root", "made by root")
    st, body = e.unary("filesystem.Filesystem/MakeDir", {"path": "udir"})
    eq((body["entry"]["path"], body["entry"]["owner"]), ("/home/user/udir", "user"),
       "default user's dir")
done()
