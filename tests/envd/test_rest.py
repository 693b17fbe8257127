"""envd REST: /health, /envs, /files download and upload."""
import gzip
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd, multipart  # noqa: E402
from abxtest import check, done, eq  # noqa: E402


OCT_ = {"Content-Type": "application/octet-stream"}

with Envd(sys.argv[1], env_vars={"FOO": "bar"}) as e:
    st, body, h = e.request("GET", "/health")
    eq(st, 204, "health is 204")
    eq(body, b"", "health has no body")
    st, body, h = e.request("GET", "/envs")
    eq(st, 200, "envs 200")
    eq(json.loads(body), {"FOO": "bar"}, "envs body")
    eq(h.get("cache-control"), "no-store", "envs no-store")
    eq(e.request("GET", "/nope")[0], 404, "unknown path 404")
    eq(e.request("POST", "/health")[0], 405, "POST /health 405")

    # Upload + download, multipart single file (SDK shape: path + filename).
    body, hdr = multipart([("file", "/home/user/a.txt", b"hello\n")])
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/a.txt"), body, hdr)
    eq(st, 200, "multipart upload 200")
    eq(json.loads(rb), [{"path": "/home/user/a.txt", "name": "a.txt",
                         "type": "file"}], "upload answer")
    st, data, h = e.request("GET", e.files_url(path="/home/user/a.txt"))
    eq((st, data), (200, b"hello\n"), "download text")
    eq(h.get("content-disposition"), 'inline; filename="a.txt"',
       "content-disposition")
    st_ = os.stat(os.path.join(e.home, "a.txt"))
    eq((st_.st_uid, st_.st_gid), (1000, 1000), "file owned by user")

    # Binary, all byte values, octet-stream, relative path (HOME-relative).
    allbytes = bytes(range(256)) * 64
    st, rb, _ = e.request("POST", e.files_url(path="bin/all.bin"), allbytes,
                          {"Content-Type": "application/octet-stream"})
    eq(st, 200, "octet-stream upload 200")
    eq(json.loads(rb)[0]["path"], "/home/user/bin/all.bin", "relative path under home")
    st, data, _ = e.request("GET", e.files_url(path="~/bin/all.bin"))
    check(st == 200 and data == allbytes, "binary round trip via ~ path")
    d = os.stat(os.path.join(e.home, "bin"))
    eq((d.st_uid, oct(d.st_mode & 0o777)), (1000, "0o755"), "parent dir created for user")

    # Gzip'd octet-stream body.
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/gz.txt"),
                          gzip.compress(b"zipped" * 1000),
                          {"Content-Type": "application/octet-stream",
                           "Content-Encoding": "gzip"})
    eq(st, 200, "gzip upload 200")
    eq(e.request("GET", e.files_url(path="/home/user/gz.txt"))[1], b"zipped" * 1000,
       "gzip upload content")

    body, hdr = multipart([("file", "/home/user/gz/m1", b"one" * 5000),
                           ("file", "/home/user/gz/m2", b"two")])
    hdr["Content-Encoding"] = "gzip"
    st, rb, _ = e.request("POST", "/files", gzip.compress(body), hdr)
    eq(st, 200, "gzip'd multipart upload")
    eq(e.request("GET", e.files_url(path="/home/user/gz/m1"))[1], b"one" * 5000,
       "gzip'd multipart content")
    gz = gzip.compress(b"x" * 100000)
    for data, what in ((gz[:len(gz) // 2], "truncated gzip"), (b"not gzip", "garbage gzip"),
                       (gz + b"trailing", "data after the gzip end")):
        st, rb, _ = e.request("POST", e.files_url(path="/home/user/gz/bad"), data,
                              {"Content-Type": "application/octet-stream",
                               "Content-Encoding": "gzip"})
        eq(st, 400, what + " 400")
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/gz/bad"), b"x",
                          {"Content-Type": "application/octet-stream",
                           "Content-Encoding": "br"})
    eq(st, 400, "unsupported Content-Encoding 400")

    # Zero bytes, both encodings.
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/empty1"), b"",
                          {"Content-Type": "application/octet-stream"})
    eq(st, 200, "empty octet upload")
    body, hdr = multipart([("file", "/home/user/empty2", b"")])
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/empty2"), body, hdr)
    eq(st, 200, "empty multipart upload")
    for n in ("empty1", "empty2"):
        st, data, _ = e.request("GET", e.files_url(path="/home/user/" + n))
        eq((st, data), (200, b""), "download empty " + n)

    # Several files in one multipart request, no path param; other fields ignored.
    big = os.urandom(300000)
    body, hdr = multipart([("file", "/home/user/m/one.txt", b"one"),
                           ("other", "/home/user/m/ignored", b"x"),
                           ("file", "/tmp/two.bin", big),
                           ("file", "rel/three", b"3")])
    st, rb, _ = e.request("POST", "/files", body, hdr)
    eq(st, 200, "multi-file upload 200")
    eq([x["path"] for x in json.loads(rb)],
       ["/home/user/m/one.txt", "/tmp/two.bin", "/home/user/rel/three"],
       "multi-file answer")
    eq(e.request("GET", e.files_url(path="/tmp/two.bin"))[1], big, "second part content")
    check(not os.path.exists(os.path.join(e.home, "m/ignored")), "non-file field ignored")

    # Chunked multipart split at every offset (the JS SDK sends part headers
    # and data in separate chunks), with an empty part in between.
    body, hdr = multipart([("file", "/home/user/s/one", b"first-data"),
                           ("file", "/home/user/s/empty", b""),
                           ("file", "/home/user/s/two", b"2nd")])
    bad = []  # an iterable body makes http.client send it chunked
    for cut in range(1, len(body)):
        st, rb, _ = e.request("POST", "/files", iter([body[:cut], body[cut:]]), hdr)
        got = [open(os.path.join(e.home, "s", n), "rb").read()
               for n in ("one", "empty", "two")] if st == 200 else None
        if st != 200 or got != [b"first-data", b"", b"2nd"] or len(json.loads(rb)) != 3:
            bad.append(cut)
    eq(bad, [], "chunked multipart split at every offset")

    # Overwrite truncates.
    e.request("POST", e.files_url(path="/home/user/a.txt"), b"x",
              {"Content-Type": "application/octet-stream"})
    eq(e.request("GET", e.files_url(path="/home/user/a.txt"))[1], b"x", "overwrite truncates")

    # username param: root's home and ownership.
    st, rb, _ = e.request("POST", e.files_url(path="r.txt", username="root"), b"r",
                          {"Content-Type": "application/octet-stream"})
    eq(json.loads(rb)[0]["path"], "/root/r.txt", "username=root resolves to /root")
    eq(os.stat(os.path.join(e.rootdir, "r.txt")).st_uid, 0, "owned by root")
    st, rb, _ = e.request("GET", e.files_url(path="x", username="ghost"))
    eq(st, 401, "unknown username 401")
    check(b"error looking up user 'ghost'" in rb, "unknown user message")

    # Errors.
    st, rb, h = e.request("GET", e.files_url(path="/home/user/missing"))
    eq(st, 404, "missing 404")
    eq(json.loads(rb), {"code": 404, "message": "path '/home/user/missing' does not exist"},
       "missing body")
    check(h.get("content-type", "").startswith("application/json"), "error is JSON")
    st, rb, _ = e.request("GET", e.files_url(path="/home/user"))
    eq(st, 400, "directory download 400")
    eq(json.loads(rb)["message"], "path '/home/user' is a directory", "dir message")
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/bin"), b"x",
                          {"Content-Type": "application/octet-stream"})
    eq(st, 400, "upload onto a directory 400")
    body, hdr = multipart([("file", "a", b"1"), ("file", "b", b"2")])
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/same"), body, hdr)
    eq(st, 400, "two parts to one path 400")
    st, rb, _ = e.request("POST", "/files", b"x",
                          {"Content-Type": "application/octet-stream"})
    eq(st, 400, "octet-stream without path 400")
    st, rb, _ = e.request("POST", e.files_url(path="a"), b"x",
                          {"Content-Type": "text/plain"})
    eq(st, 400, "other content type 400")
    st, rb, _ = e.request("GET", e.files_url(path="~other/x"))
    eq(st, 400, "~other 400")
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/a.txt/sub"), b"x",
                          {"Content-Type": "application/octet-stream"})
    eq(st, 400, "parent is a file 400")
    body, hdr = multipart([("file", "/home/user/trunc", b"abc")])
    st, rb, _ = e.request("POST", "/files", body[:-10], hdr)
    check(st == 400, "truncated multipart rejected (%d)" % st)
    body, hdr = multipart([("file", "/home/user/dup", b"1"), ("file", "~/dup", b"2")])
    st, rb, _ = e.request("POST", "/files", body, hdr)
    eq(st, 400, "two parts naming the same file 400")
    check(b"same path '/home/user/dup'" in rb, "duplicate path message")

    # Metadata (envd 0.6.2): X-Metadata-* headers stored as user.e2b.* xattrs.
    meta_hdr = dict(OCT_, **{"X-Metadata-Author": "mish", "x-metadata-Purpose": "up load",
                             "X-Metadata-": "dropped"})
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/meta.txt"), b"m", meta_hdr)
    eq((st, json.loads(rb)), (200, [{"path": "/home/user/meta.txt", "name": "meta.txt",
                                     "type": "file", "metadata": {"author": "mish",
                                                                  "purpose": "up load"}}]),
       "upload answer carries metadata")
    eq(sorted(os.listxattr(os.path.join(e.home, "meta.txt"))),
       ["user.e2b.author", "user.e2b.purpose"], "stored as user.e2b.* xattrs")
    st, body = e.unary("filesystem.Filesystem/Stat", {"path": "meta.txt"})
    eq(body["entry"].get("metadata"), {"author": "mish", "purpose": "up load"},
       "Stat reports metadata")
    st, rb, _ = e.request("POST", e.files_url(path="/home/user/meta.txt"), b"m2",
                          dict(OCT_, **{"X-Metadata-Other": "x"}))
    st, body = e.unary("filesystem.Filesystem/Stat", {"path": "meta.txt"})
    eq(body["entry"].get("metadata"), {"other": "x"}, "an upload replaces the whole set")
    body, hdr = multipart([("file", "/home/user/mm1", b"1"), ("file", "/home/user/mm2", b"2")])
    hdr["X-Metadata-K"] = "v"
    st, rb, _ = e.request("POST", "/files", body, hdr)
    eq([x.get("metadata") for x in json.loads(rb)], [{"k": "v"}, {"k": "v"}],
       "metadata on every file of a multipart upload")
    for h, what in (({"X-Metadata-Bad": "caf\u00e9"}, "non-ASCII value"),
                    ({"X-Metadata-" + "k" * 247: "v"}, "key over 246 bytes"),
                    (dict(("X-Metadata-K%d" % i, "v" * 1000) for i in range(5)),
                     "metadata over 4096 bytes")):
        st, rb, _ = e.request("POST", e.files_url(path="/home/user/badmeta"), b"x",
                              dict(OCT_, **h))
        eq(st, 400, "metadata rejected: " + what)
    check(not os.path.exists(os.path.join(e.home, "badmeta")), "nothing written on bad metadata")

    # Still serving.
    eq(e.request("GET", "/health")[0], 204, "alive after bad uploads")
done()
