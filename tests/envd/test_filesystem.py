"""filesystem.Filesystem: Stat, MakeDir, Move, ListDir, Remove, WatchDir,
CreateWatcher/GetWatcherEvents/RemoveWatcher, EntryInfo shape, errors."""
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd  # noqa: E402
from abxtest import check, done, eq  # noqa: E402

FS = "filesystem.Filesystem/"
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.(\d{3}|\d{6}|\d{9}))?Z$")

with Envd(sys.argv[1]) as e:
    h = e.home
    with open(os.path.join(h, "f.txt"), "w") as f:
        f.write("hello")
    os.chown(os.path.join(h, "f.txt"), 1000, 1000)
    os.chmod(os.path.join(h, "f.txt"), 0o640)
    os.symlink("/home/user/f.txt", os.path.join(h, "link"))
    os.symlink("/nowhere", os.path.join(h, "dangling"))

    st, body = e.unary(FS + "Stat", {"path": "/home/user/f.txt"})
    ent = body["entry"]
    eq(st, 200, "Stat 200")
    eq({k: ent[k] for k in ("name", "type", "path", "size", "mode", "permissions",
                            "owner", "group")},
       {"name": "f.txt", "type": "FILE_TYPE_FILE", "path": "/home/user/f.txt",
        "size": "5", "mode": 0o640, "permissions": "-rw-r-----", "owner": "user",
        "group": "user"}, "EntryInfo of a file")
    check(TS.match(ent["modifiedTime"]) is not None, "modifiedTime RFC3339 " + ent["modifiedTime"])
    check("symlinkTarget" not in ent, "no symlinkTarget for a file")
    ent = e.unary(FS + "Stat", {"path": "link"})[1]["entry"]
    eq((ent["type"], ent["symlinkTarget"], ent["permissions"]),
       ("FILE_TYPE_FILE", "/home/user/f.txt", "Lrwxrwxrwx"), "symlink entry")
    ent = e.unary(FS + "Stat", {"path": "dangling"})[1]["entry"]
    check("type" not in ent, "dangling symlink type unspecified")
    ent = e.unary(FS + "Stat", {"path": "~"})[1]["entry"]
    eq((ent["type"], ent["path"], ent["permissions"]),
       ("FILE_TYPE_DIRECTORY", "/home/user", "drwxr-xr-x"), "Stat ~")
    ent = e.unary(FS + "Stat", {"path": "/tmp"})[1]["entry"]
    eq(ent["permissions"], "dtrwxrwxrwx", "sticky dir permissions")
    st, body = e.unary(FS + "Stat", {"path": "/nope"})
    eq((st, body), (404, {"code": "not_found",
                          "message": "file not found: lstat /nope: no such file or directory"}),
       "Stat missing")

    st, body = e.unary(FS + "MakeDir", {"path": "/home/user/d/e/f"})
    eq((st, body["entry"]["type"]), (200, "FILE_TYPE_DIRECTORY"), "MakeDir nested")
    eq(os.stat(os.path.join(h, "d/e")).st_uid, 1000, "MakeDir parents owned by user")
    st, body = e.unary(FS + "MakeDir", {"path": "/home/user/d"})
    eq((st, body), (409, {"code": "already_exists",
                          "message": "directory already exists: /home/user/d"}), "MakeDir exists")
    st, body = e.unary(FS + "MakeDir", {"path": "/home/user/f.txt"})
    eq((st, body["code"]), (400, "invalid_argument"), "MakeDir over a file")

    st, body = e.unary(FS + "Move", {"source": "f.txt", "destination": "moved/g.txt"})
    eq((st, body["entry"]["path"], body["entry"]["name"]),
       (200, "/home/user/moved/g.txt", "g.txt"), "Move creates parents")
    check(not os.path.exists(os.path.join(h, "f.txt")), "source gone after Move")
    st, body = e.unary(FS + "Move", {"source": "nope", "destination": "x"})
    eq((st, body["code"]), (404, "not_found"), "Move missing source")

    for p in ("l/a/b/c", "l/z"):
        os.makedirs(os.path.join(h, p))
    for p in ("l/b.txt", "l/a/1", "l/a/b/2", "l/a/b/c/3"):
        open(os.path.join(h, p), "w").close()
    names = lambda b: [x["path"] for x in b.get("entries", [])]  # noqa: E731
    st, body = e.unary(FS + "ListDir", {"path": "l"})
    eq(names(body), ["/home/user/l/a", "/home/user/l/b.txt", "/home/user/l/z"], "ListDir depth 1")
    st, body = e.unary(FS + "ListDir", {"path": "/home/user/l", "depth": 2})
    eq(names(body), ["/home/user/l/a", "/home/user/l/a/1", "/home/user/l/a/b",
                     "/home/user/l/b.txt", "/home/user/l/z"], "ListDir depth 2 walk order")
    st, body = e.unary(FS + "ListDir", {"path": "/home/user/l", "depth": "10"})
    eq(len(names(body)), 8, "ListDir deep (depth as string)")
    st, body = e.unary(FS + "ListDir", {"path": "/home/user/l/z"})
    eq((st, body), (200, {}), "ListDir empty dir")
    eq(e.unary(FS + "ListDir", {"path": "/nope"})[1]["code"], "not_found", "ListDir missing")
    eq(e.unary(FS + "ListDir", {"path": "l/b.txt"})[1]["code"], "invalid_argument",
       "ListDir on a file")

    eq(e.unary(FS + "Remove", {"path": "l"}), (200, {}), "Remove tree")
    check(not os.path.exists(os.path.join(h, "l")), "tree removed")
    eq(e.unary(FS + "Remove", {"path": "l"}), (200, {}), "Remove missing is fine")
    eq(e.unary(FS + "Remove", {"path": "link"}), (200, {}), "Remove symlink")
    check(os.path.exists(os.path.join(h, "moved/g.txt")), "symlink target kept")

    # WatchDir stream, recursive.
    os.makedirs(os.path.join(h, "w/sub"))
    s = e.stream(FS + "WatchDir", {"path": "/home/user/w", "recursive": True},
                 extra={"Keepalive-Ping-Interval": "1"})
    eq(s.next()[1], {"start": {}}, "WatchDir starts with start")
    e.request("POST", e.files_url(path="/home/user/w/new.txt"), b"x",
              {"Content-Type": "application/octet-stream"})
    e.request("POST", e.files_url(path="/home/user/w/sub/deep.txt"), b"y",
              {"Content-Type": "application/octet-stream"})
    e.unary(FS + "MakeDir", {"path": "/home/user/w/newdir"})
    time.sleep(0.3)  # let the new directory's watch be added
    e.request("POST", e.files_url(path="/home/user/w/newdir/inner"), b"z",
              {"Content-Type": "application/octet-stream"})
    e.unary(FS + "Remove", {"path": "/home/user/w/new.txt"})
    want = {("new.txt", "EVENT_TYPE_CREATE"), ("new.txt", "EVENT_TYPE_WRITE"),
            ("sub/deep.txt", "EVENT_TYPE_CREATE"), ("newdir", "EVENT_TYPE_CREATE"),
            ("newdir/inner", "EVENT_TYPE_CREATE"), ("new.txt", "EVENT_TYPE_REMOVE")}
    got, keepalive = set(), False
    end = time.time() + 10
    while not want <= got and time.time() < end:
        m = s.next()
        if m is None:
            break
        if "filesystem" in m[1]:
            got.add((m[1]["filesystem"]["name"], m[1]["filesystem"]["type"]))
        keepalive |= "keepalive" in m[1]
    check(want <= got, "WatchDir events %s" % sorted(want - got))
    while not keepalive and time.time() < end:
        m = s.next()
        keepalive |= m is not None and "keepalive" in m[1]
    check(keepalive, "WatchDir keepalive")
    s.close()
    ev, end = e.stream(FS + "WatchDir", {"path": "/nope"}).all()
    eq(end.get("error", {}).get("code"), "not_found", "WatchDir missing dir")
    ev, end = e.stream(FS + "WatchDir", {"path": "moved/g.txt"}).all()
    eq(end.get("error", {}).get("code"), "invalid_argument", "WatchDir on a file")
    ev, end = e.stream(FS + "WatchDir", {"path": "w"},
                       extra={"Connect-Timeout-Ms": "500"}).all()
    eq((ev, end.get("error", {}).get("code")), ([{"start": {}}], "deadline_exceeded"),
       "WatchDir ends at its deadline")

    ev, end = e.stream(FS + "WatchDir", {"path": "w", "allowNetworkMounts": False,
                                         "includeEntry": True},
                       extra={"Connect-Timeout-Ms": "300"}).all()
    eq(ev, [{"start": {}}], "WatchDir accepts allowNetworkMounts/includeEntry (local dir)")

    # Polling watcher.
    st, body = e.unary(FS + "CreateWatcher", {"path": "w", "include_entry": True})
    wid = body.get("watcherId", "")
    check(re.match(r"^w[a-z0-9]{20}$", wid) is not None, "watcher id shape " + wid)
    open(os.path.join(h, "w/p.txt"), "w").close()
    open(os.path.join(h, "w/sub/not-recursive"), "w").close()
    evs, end = [], time.time() + 10
    while time.time() < end and not any(x["name"] == "p.txt" for x in evs):
        time.sleep(0.1)
        st, body = e.unary(FS + "GetWatcherEvents", {"watcherId": wid})
        evs += body.get("events", [])
    created = [x for x in evs if x["type"] == "EVENT_TYPE_CREATE"]
    eq([x["name"] for x in created], ["p.txt"], "GetWatcherEvents (non-recursive)")
    eq(created and created[0].get("entry", {}).get("path"), "/home/user/w/p.txt",
       "includeEntry adds the entry")
    eq(e.unary(FS + "GetWatcherEvents", {"watcher_id": wid}), (200, {}), "events drained")
    eq(e.unary(FS + "RemoveWatcher", {"watcherId": wid}), (200, {}), "RemoveWatcher")
    eq(e.unary(FS + "GetWatcherEvents", {"watcherId": wid})[1]["code"], "not_found",
       "removed watcher unknown")
    eq(e.unary(FS + "RemoveWatcher", {"watcherId": "wnope"})[1]["code"], "not_found",
       "RemoveWatcher unknown")
done()
