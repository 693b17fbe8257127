"""abx-local: template root filesystems with a private cache dir and private
templates dirs: `template build` (a missing package fails cleanly and
leaves nothing behind; a minimal root is built with progress, holds Debian
12 and user 1000, is cached by a key that follows the definition: home/
files change it, the package order does not), `template import` of an OCI
archive made here without network from that root (env vars from the image,
a sandbox of it through `serve --cache-dir`), `template rm`, and the
errors of unknown names and bad usage.

Two mmdebstrap runs (the failing one and the good one, ~15 s each here);
needs root, mmdebstrap, skopeo, umoci and the Debian mirror."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, Server  # noqa: E402
from abxtest import check, done, write_file  # noqa: E402

BUILD_TIMEOUT = 600   # one mmdebstrap run (network); seconds


def template(tdir, name, packages, **extra):
    d = {"templateID": name,
         "rootfs": {"debian": "bookworm", "variant": "essential", "packages": packages}}
    d.update(extra)
    write_file(os.path.join(tdir, name, "template.json"), json.dumps(d))


def tree(path):
    """Entries under path (relative), [] when it does not exist."""
    out = []
    for base, dirs, files in os.walk(path):
        for n in dirs + files:
            out.append(os.path.relpath(os.path.join(base, n), path))
    return sorted(out)


class Cli:
    def __init__(self, cache):
        self.cache = cache

    def run(self, args, tdir=None, timeout=120):
        """`abx-local template ARGS` on the private cache; (rc, out, err, secs)."""
        cmd = [LOCAL_BIN, "template"] + args
        if tdir:
            cmd += ["--templates", tdir]
        cmd += ["--cache-dir", self.cache]
        t0 = time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0

    def list(self, tdir):
        """{name: (key, root)} from `template list` (root: "missing" or "built, N MiB")."""
        rc, out, err, _ = self.run(["list"], tdir)
        check(rc == 0, "template list exits 0 (%d: %s)" % (rc, err.strip()[-300:]))
        lines = out.splitlines()
        check(bool(lines) and lines[0].split() == ["TEMPLATE", "ALIAS", "KEY", "ROOT", "SOURCE"],
              "list has its header: %r" % (lines[:1],))
        rows = {}
        for line in lines[1:]:
            f = line.split()
            if len(f) < 4:
                continue
            rest = " ".join(f[3:])
            m = re.match(r"(missing|built, \d+ MiB)", rest)
            rows[f[0]] = (f[2], m.group(1) if m else rest)
        return rows


def umoci(*args):
    p = subprocess.run(["umoci"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("umoci %s: %s" % (" ".join(args), p.stdout))


UID_BASE = 1879048192   # abx-local's sandbox uid 0 on the host (base/base.h)


def unshift(tree):
    """A cached root belongs to the sandbox uids (ABX_UID_BASE + N); an
    image, as docker save makes it, to uids N."""
    for d, dirs, files in os.walk(tree):
        for x in [d] + [os.path.join(d, f) for f in dirs + files]:
            st = os.lstat(x)
            if st.st_uid >= UID_BASE:
                os.lchown(x, st.st_uid - UID_BASE, st.st_gid - UID_BASE)


def make_image(work, root, marker):
    """An oci-archive of root plus /etc/abx-image-marker, Env ABX_IMAGE_VAR=yes."""
    layout, bundle, tar = work + "/layout", work + "/bundle", work + "/image.tar"
    umoci("init", "--layout", layout)
    umoci("new", "--image", layout + ":t")
    umoci("unpack", "--image", layout + ":t", bundle)
    subprocess.run(["cp", "-a", root + "/.", bundle + "/rootfs/"], check=True, timeout=300)
    unshift(bundle + "/rootfs")
    write_file(bundle + "/rootfs/etc/abx-image-marker", marker + "\n")
    umoci("repack", "--image", layout + ":t", bundle)
    umoci("config", "--image", layout + ":t", "--config.env", "ABX_IMAGE_VAR=yes")
    subprocess.run(["tar", "-C", layout, "-cf", tar, "."], check=True, timeout=300)
    shutil.rmtree(bundle)
    return tar


def main():
    work = tempfile.mkdtemp(prefix="abx-local-rootfs-")
    try:
        run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    done()


def run(work):
    cache = work + "/cache"
    cli = Cli(cache)
    tbad, tgood, tkeys = work + "/t-bad", work + "/t-good", work + "/t-keys"
    template(tbad, "nopkg", ["abx-no-such-package"])
    template(tgood, "mini", [])
    template(tkeys, "two-a", ["python3", "curl"])
    template(tkeys, "two-b", ["curl", "python3"])
    template(tkeys, "one", ["python3"])

    # ---- 1. a package that does not exist ----
    rc, out, err, secs = cli.run(["build", "nopkg"], tbad, BUILD_TIMEOUT)
    print("failing build: %.1f s" % secs)
    check(rc != 0, "build with a missing package exits non-zero (%d)" % rc)
    check("abx-no-such-package" in err and "Unable to locate package" in err,
          "stderr names the missing package: %r" % err[-500:])
    check(re.search(r"building template nopkg failed at step '[^']+'", err) is not None,
          "stderr names the step that failed")
    check(tree(cache + "/rootfs") == [], "failed build: no entry under <cache>/rootfs: %r"
          % tree(cache + "/rootfs"))
    check(tree(cache + "/tmp") == [], "failed build: nothing left in <cache>/tmp: %r"
          % tree(cache + "/tmp"))
    check(cli.list(tbad).get("nopkg", (None, None))[1] == "missing", "failed build listed missing")

    # ---- 2. a minimal template ----
    rows = cli.list(tgood)
    check(rows.get("mini", (None, None))[1] == "missing", "mini listed missing before its build")
    rc, out, err, secs = cli.run(["build", "mini"], tgood, BUILD_TIMEOUT)
    print("good build: %.1f s" % secs)
    check(rc == 0, "build of mini exits 0 (%d: %s)" % (rc, err[-500:]))
    pcts = [int(x) for x in re.findall(r"building template mini: (\d+) %", err)]
    check(len(pcts) >= 3 and all(a < b for a, b in zip(pcts, pcts[1:])) and pcts[-1] == 100,
          "progress increases and ends at 100 %%: %r" % pcts)
    rows = cli.list(tgood)
    key, state = rows.get("mini", ("", ""))
    check(state.startswith("built, "), "list shows mini built: %r" % state)
    entries = [e for e in os.listdir(cache + "/rootfs") if not e.endswith(".json")]
    check(len(entries) == 1 and len(entries[0]) == 64 and entries[0].startswith(key)
          and len(key) == 12, "one root, named by the listed key: %r %r" % (entries, key))
    check(tree(cache + "/tmp") == [], "good build: nothing left in <cache>/tmp")
    root = cache + "/rootfs/" + (entries[0] if entries else "none")
    with open(root + ".json") as f:
        meta_before = f.read()
    with open(root + "/etc/os-release") as f:
        osr = f.read()
    check('ID=debian' in osr and 'VERSION_ID="12"' in osr, "root is Debian 12: %r" % osr[:200])
    with open(root + "/etc/passwd") as f:
        users = [l.split(":") for l in f.read().splitlines()]
    check(any(u[0] == "user" and u[2] == "1000" and u[5] == "/home/user" for u in users),
          "/etc/passwd has user with uid 1000")
    check(os.path.isfile(root + "/etc/shadow"), "/etc/shadow exists")
    # The cache holds the root as the sandboxes see it through their user
    # namespace: sandbox uid N is host uid UID_BASE + N.
    st = os.stat(root + "/home/user")
    check(st.st_uid == UID_BASE + 1000 and st.st_gid == UID_BASE + 1000,
          "/home/user owned by the sandbox's uid 1000 (host %d)" % st.st_uid)
    bad = [p for p in ("", "/etc/passwd", "/usr/bin/bash") if os.lstat(root + p).st_uid != UID_BASE]
    check(not bad, "root's files owned by the sandbox's root, not the host's: %s" % bad)

    rc, out, err, secs = cli.run(["build", "mini"], tgood, BUILD_TIMEOUT)
    check(rc == 0 and "building" not in err and secs < 5,
          "second build is a no-op (rc %d, %.1f s, %r)" % (rc, secs, err[-300:]))
    with open(root + ".json") as f:
        check(f.read() == meta_before, "second build left the cache entry as it was")
    rc, out, err, secs = cli.run(["build"], tgood, BUILD_TIMEOUT)
    check(rc == 0 and "building" not in err, "build of all (nothing missing) is a no-op")

    write_file(tgood + "/mini/home/notes.txt", "a home file\n")
    key2, state2 = cli.list(tgood).get("mini", ("", ""))
    check(key2 != key and state2 == "missing",
          "a home/ file changes the key: %s -> %s %r" % (key, key2, state2))
    shutil.rmtree(tgood + "/mini/home")
    check(cli.list(tgood).get("mini") == (key, state), "without it, the old key and root again")

    rows = cli.list(tkeys)
    ka, kb, k1 = (rows.get(n, ("?",))[0] for n in ("two-a", "two-b", "one"))
    check(ka == kb and ka != "?", "reordered packages keep the key: %s %s" % (ka, kb))
    check(k1 not in (ka, key), "other packages, other key: %s" % k1)

    # ---- 3. import an OCI archive made from that root ----
    marker = uuid.uuid4().hex
    t0 = time.time()
    image = make_image(work, root, marker)
    print("image made: %.1f s" % (time.time() - t0))
    rc, out, err, secs = cli.run(["import", "img", image], tgood, BUILD_TIMEOUT)
    print("import: %.1f s" % secs)
    check(rc == 0, "import of an oci-archive exits 0 (%d: %s)" % (rc, err[-500:]))
    try:
        with open(cache + "/imports/img/template.json") as f:
            defn = json.load(f)
    except (OSError, ValueError) as e:
        defn = {}
        check(False, "imported definition readable: %s" % e)
    check(defn.get("envVars", {}).get("ABX_IMAGE_VAR") == "yes",
          "definition has the image's Env: %r" % defn.get("envVars"))
    rows = cli.list(tgood)
    ikey, istate = rows.get("img", ("", ""))
    check(istate.startswith("built, ") and ikey != key, "list shows img built: %r" % (rows.get("img"),))
    check(tree(cache + "/tmp") == [], "import: nothing left in <cache>/tmp")

    before = {d: tree(cache + "/" + d) for d in ("rootfs", "tmp", "imports")}
    write_file(work + "/junk.tar", "this is not an image archive\n" * 100)
    rc, out, err, _ = cli.run(["import", "junk", work + "/junk.tar"], tgood)
    check(rc != 0 and "import failed" in err and "archive" in err,
          "importing a non-archive fails clearly: %r" % err[-400:])
    rc2, _, err2, _ = cli.run(["import", "junk2", work + "/no-such.tar"], tgood)
    check(rc2 != 0 and "cannot read the image archive" in err2,
          "importing a missing file fails clearly: %r" % err2[-300:])
    rc3, _, err3, _ = cli.run(["import", "mini", image], tgood)
    check(rc3 != 0 and "exists already" in err3, "import cannot take a shipped template's name")
    rc4, _, err4, _ = cli.run(["import", "Bad/Name", image], tgood)
    check(rc4 != 0 and "bad template name" in err4, "import refuses a bad name: %r" % err4[-200:])
    after = {d: tree(cache + "/" + d) for d in ("rootfs", "tmp", "imports")}
    check(after == before, "failed imports leave nothing behind")
    check("junk" not in cli.list(tgood), "a failed import is not listed")

    s = Server(extra=["--templates", tgood, "--cache-dir", cache])
    try:
        sid = s.create("img", timeout=60)["sandboxID"]
        code, out, _ = s.run(sid, "cat /etc/abx-image-marker; echo $ABX_IMAGE_VAR; id -un; id -u")
        check(code == 0 and out.split() == [marker, "yes", "user", "1000"],
              "sandbox of the imported image: marker, image env, user: %r" % out)
        code, out, _ = s.run(sid, "id -un", user="root")
        check(out.strip() == "root", "root in the imported sandbox: %r" % out)
        s.kill(sid)
        sid = s.create("mini", timeout=60)["sandboxID"]
        code, out, _ = s.run(sid, ". /etc/os-release; echo $ID $VERSION_ID; "
                                  "test -e /etc/abx-image-marker || echo no-marker")
        check(out.split() == ["debian", "12", "no-marker"], "sandbox of the built root: %r" % out)
        s.kill(sid)
    finally:
        s.cleanup()

    rc, out, err, _ = cli.run(["rm", "img"], tgood)
    check("img: root removed, imported definition removed" in out,
          "template rm img reports both removed: %r" % out)
    check(rc == 0 and err == "", "template rm img exits 0, no error (%d: %r)" % (rc, err))
    check("img" not in cli.list(tgood), "img no longer listed")
    check(not os.path.exists(cache + "/imports/img")
          and not any(e.startswith(ikey) for e in os.listdir(cache + "/rootfs")),
          "rm removed the imported root and definition")
    check(os.path.isdir(root), "rm img left mini's root alone")

    # ---- 4. unknown names and bad usage ----
    rc, out, err, _ = cli.run(["build", "abx-no-such-template"], tgood)
    check(rc != 0 and "abx-no-such-template" in err,
          "build of an unknown name fails naming it (%d: %r)" % (rc, err))
    rc, out, err, _ = cli.run(["rm", "abx-no-such-template"], tgood)
    check(rc != 0 and "abx-no-such-template" in err, "rm of an unknown name fails naming it")
    for args in ([], ["frobnicate"], ["build", "--bogus"], ["list", "extra"], ["import", "x"],
                 ["rm"], ["list", "--cache-dir"]):
        cmd = [LOCAL_BIN, "template"] + args
        if args != ["list", "--cache-dir"]:
            cmd += ["--templates", tgood, "--cache-dir", cache]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        check(p.returncode == 2 and p.stderr.strip() != "",
              "usage error exits 2: template %s (%d)" % (" ".join(args), p.returncode))


if __name__ == "__main__":
    main()
