"""abx-local: each sandbox is a machine of its own. Its root is an overlay
of the template's root filesystem (cached on the host) with a tmpfs upper
layer, in a private mount namespace: nothing of the host is visible inside
(markers planted on the host are not found by path nor by search, `ls /`
lists exactly the template's top level, /etc is the template's), root's
writes to /, /usr and /etc stay in that sandbox (not on the host, not in
the template cache, not in another sandbox) and vanish with it (no folder,
no mount, no process left). Also: hostname, users, process and network
namespaces, each sandbox's own port 8000, the secure sandbox's token."""
import http.client
import os
import secrets
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, cgroup_dirs, run_with_server  # noqa: E402
from abxtest import boot_ticks, check, pid_ns, pidns_procs, until  # noqa: E402

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CACHE = os.environ.get("ABX_LOCAL_CACHE") or "/var/cache/abx-local"
# Debian 12's top level (amd64); used only when the cached root is not found.
DEBIAN_TOP = sorted("bin boot dev etc home lib lib64 media mnt opt proc root run sbin "
                    "srv sys tmp usr var".split())

# A sandbox's processes, by /proc (base has no procps): "pid comm" lines.
PROCS = ('for p in /proc/[0-9]*; do read -r c < "$p/comm" 2>/dev/null && '
         'echo "${p#/proc/} $c"; done; true')


def wait_port(s, sid, port, secs=10):
    """The body of GET / on the sandbox's port once it answers 200, or None."""
    def answer():
        st, data, _ = s.data_request(sid, port, "GET", "/")
        return (data,) if st == 200 else None
    got = until(answer, secs, step=0.1)
    return got[0] if got else None


def rootfs_of(template):
    """Host path of the template's cached root filesystem: its key (prefix)
    from `abx-local template list`, matched in <cache>/rootfs."""
    try:
        out = subprocess.run([LOCAL_BIN, "template", "list"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    prefix = None
    for line in out.splitlines():
        f = line.split()
        if len(f) > 2 and f[0] == template:
            prefix = f[2]
    if not prefix or prefix == "-":
        return None
    d = os.path.join(CACHE, "rootfs")
    hits = [x for x in os.listdir(d) if x.startswith(prefix)
            and os.path.isdir(os.path.join(d, x))] if os.path.isdir(d) else []
    return os.path.join(d, hits[0]) if len(hits) == 1 else None


def fingerprint(root):
    """Every entry of a tree with what a write would change (not atime)."""
    fp = {}
    if root is None:
        return fp
    for d, dirs, files in os.walk(root):
        for x in [""] + dirs + files:
            p = os.path.join(d, x) if x else d
            try:
                st = os.lstat(p)
            except OSError:
                continue
            fp[p[len(root):] or "/"] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                        st.st_ino, st.st_uid)
    return fp


def read_host(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def tree_has(root, name, content):
    """Paths under root named name or holding content (regular files)."""
    hits = []
    for d, dirs, files in os.walk(root):
        for x in dirs + files:
            p = os.path.join(d, x)
            if x == name:
                hits.append(p)
            elif x in files and os.path.isfile(p) and not os.path.islink(p):
                try:
                    if os.path.getsize(p) < 64 << 20 and content.encode() in read_host(p):
                        hits.append(p)
                except (OSError, TypeError):
                    pass
    return hits


def host_mounts_naming(word):
    lines = []
    for f in ("/proc/mounts", "/proc/self/mountinfo"):
        lines += [x for x in (read_host(f) or b"").decode(errors="replace").splitlines()
                  if word in x]
    return lines


class Markers:
    """Files with a random name and content planted on the host (and a
    folder at the host's /), removed by remove()."""

    def __init__(self, state_dir):
        tag = secrets.token_hex(8)
        self.name = "abx-marker-" + tag
        self.content = "abx-host-secret-" + secrets.token_hex(12)
        self.topdir = "/abx-host-only-" + tag
        self.paths = [os.path.join(d, self.name) for d in
                      ("/tmp", "/var/tmp", state_dir, "/root", REPO, self.topdir)]
        self.made = []
        try:
            os.mkdir(self.topdir, 0o755)
            self.made.append(self.topdir)
        except OSError:
            self.topdir = None
        for p in self.paths:
            try:
                with open(p, "w") as f:
                    f.write(self.content + "\n")
                os.chmod(p, 0o644)
                self.made.insert(0, p)
            except OSError:
                pass

    def remove(self):
        for p in self.made:
            try:
                os.rmdir(p) if os.path.isdir(p) else os.unlink(p)
            except OSError:
                pass


def check_markers(s, sid, where, m):
    for user in ("user", "root"):
        cmd = ("for p in %s; do [ -e \"$p\" ] && echo \"exists $p\"; "
               "cat \"$p\" 2>/dev/null; done; "
               "find / -xdev -name %s 2>/dev/null; find /opt /run /dev -name %s 2>/dev/null; "
               "grep -rlF %s /etc /tmp /var /root /home /opt /srv 2>/dev/null; echo end"
               % (" ".join(m.paths), m.name, m.name, m.content))
        code, out, err = s.run(sid, cmd, user=user)
        check(out.split() == ["end"],
              "%s as %s: host markers (/tmp, /var/tmp, state dir, /root, repo, a folder at /) "
              "found neither by path, find nor grep: %r %r" % (where, user, out[:300], err[:200]))


def check_top_level(s, sid, where, rootfs, host_only):
    want = sorted(os.listdir(rootfs)) if rootfs else DEBIAN_TOP
    for user in ("user", "root"):
        code, out, _ = s.run(sid, "LC_ALL=C ls -A /", user=user)
        check(code == 0 and sorted(out.split()) == want,
              "%s as %s: `ls -A /` is exactly the template root's top level %s: %r"
              % (where, user, "(cached)" if rootfs else "(fixed Debian list)", out.split()))
        code, out, _ = s.run(sid, "for n in %s; do [ -e \"/$n\" ] && echo \"/$n\"; done; echo end"
                             % " ".join(host_only), user=user)
        check(out.split() == ["end"], "%s as %s: host-only top-level names absent (%s): %r"
              % (where, user, " ".join(sorted(host_only))[:200], out))


def check_etc(s, sid, where, rootfs):
    code, out, _ = s.run(sid, "cat /etc/hostname; . /etc/os-release; echo $ID $VERSION_ID")
    check(out.split() == [sid, "debian", "12"], "%s: /etc/hostname is the id, Debian 12: %r"
          % (where, out))
    code, out, _ = s.run(sid, "cat /etc/shadow", user="root")
    host_shadow = read_host("/etc/shadow")
    tmpl_shadow = read_host(os.path.join(rootfs, "etc/shadow")) if rootfs else None
    check(code == 0 and tmpl_shadow is not None and out.encode() == tmpl_shadow,
          "%s: /etc/shadow is the template's (the cached root's)" % where)
    check(code == 0 and out.encode() != host_shadow, "%s: /etc/shadow is not the host's" % where)
    code, out, _ = s.run(sid, "cat /etc/passwd /etc/group", user="root")
    tmpl = b"".join(read_host(os.path.join(rootfs, "etc", f)) or b"" for f in ("passwd", "group")) \
        if rootfs else None
    check(out.encode() == tmpl and "\nuser:x:1000:1000:" in "\n" + out,
          "%s: /etc/passwd and /etc/group are the template's, with user 1000" % where)
    code, _, _ = s.run(sid, "cat /etc/shadow")
    check(code != 0, "%s: user cannot read /etc/shadow" % where)
    code, out, _ = s.run(sid, "grep -c %s /etc/hosts; cat /etc/resolv.conf" % sid)
    check(out.split()[:1] == ["1"] and "nameserver" in out, "%s: own /etc/hosts, resolv.conf"
          % where)


def check_root_writes(s, a, b, rootfs, base_fp):
    w, c = "abx-write-" + secrets.token_hex(6), "abx-written-" + secrets.token_hex(10)
    paths = ["/" + w, "/usr/" + w, "/etc/" + w]
    code, out, err = s.run(a, "for p in %s; do echo %s > $p || exit 1; done; "
                              "echo %s >> /etc/issue && rm /usr/bin/yes && echo wrote"
                              % (" ".join(paths), c, c), user="root")
    check(code == 0 and out.strip() == "wrote",
          "root writes /, /usr, /etc, changes /etc/issue, deletes /usr/bin/yes: %r" % err)
    code, out, _ = s.run(a, "cat %s; tail -n 1 /etc/issue; [ -e /usr/bin/yes ] || echo yes-gone"
                         % " ".join(paths))
    check(out.split() == [c] * 4 + ["yes-gone"], "the writes are seen inside: %r" % out)
    for p in paths:
        check(not os.path.lexists(p), "host: no %s" % p)
        check(rootfs is not None and not os.path.lexists(rootfs + p), "template cache: no %s" % p)
    check(c.encode() not in (read_host("/etc/issue") or b""), "host /etc/issue unchanged")
    issue = read_host(rootfs + "/etc/issue") if rootfs else None
    check(issue is not None and c.encode() not in issue and os.path.exists(rootfs + "/usr/bin/yes"),
          "template cache: /etc/issue unchanged, /usr/bin/yes still there")
    hits = tree_has(s.state_dir, w, c)
    check(hits == [], "nothing of the writes anywhere under the state dir: %r" % hits[:3])
    code, out, _ = s.run(b, "cat %s 2>/dev/null; grep -c %s /etc/issue; "
                            "[ -e /usr/bin/yes ] && echo yes-here" % (" ".join(paths), c),
                         user="root")
    check(out.split() == ["0", "yes-here"], "a second sandbox sees none of the writes: %r" % out)
    check(fingerprint(rootfs) == base_fp, "template cache unchanged by the writes")
    # the same folders are not writable for the default user
    code, out, _ = s.run(a, "for p in / /usr /etc /usr/bin; do touch $p/u-probe 2>/dev/null "
                            "&& echo wrote-$p; done; echo end")
    check(out.split() == ["end"], "user cannot write /, /usr, /etc: %r" % out)
    return paths, c


def run(s):
    base_root = rootfs_of("base")
    ci_root = rootfs_of("code-interpreter-v1")
    check(base_root is not None and os.path.isdir(base_root + "/etc"),
          "base's cached root found via `abx-local template list`: %s" % base_root)
    check(ci_root is not None and ci_root != base_root,
          "code-interpreter-v1's cached root found: %s" % ci_root)
    base_fp = fingerprint(base_root)
    m = Markers(s.state_dir)
    try:
        run_checks(s, m, base_root, ci_root, base_fp)
    finally:
        m.remove()


def run_checks(s, m, base_root, ci_root, base_fp):
    a = s.create("base", timeout=300)["sandboxID"]
    b = s.create("base", timeout=300)["sandboxID"]
    sb = s.create("base", timeout=300, secure=True)
    sec, tok = sb["sandboxID"], sb["envdAccessToken"]
    # python3 (the port-8000 servers) is in code-interpreter-v1, not base
    c1 = s.create("code-interpreter-v1", timeout=300)["sandboxID"]
    c2 = s.create("code-interpreter-v1", timeout=300)["sandboxID"]
    all_ids = [a, b, sec, c1, c2]
    pidns = {}
    for sid in all_ids:
        with open(os.path.join(s.state_dir, "sandboxes", sid, "pid")) as f:
            pid1 = int(f.read().split()[0])
        pidns[sid] = (pid1, pid_ns(pid1))

    # ---- identity: hostname, users ----
    code, out, _ = s.run(a, "hostname")
    check(code == 0 and out.strip() == a, "hostname is the sandbox id (A)")
    code, out, _ = s.run(b, "hostname")
    check(out.strip() == b, "hostname is the sandbox id (B)")
    code, out, _ = s.run(a, "id -u; id -un; echo $HOME; pwd")
    check(out.split() == ["1000", "user", "/home/user", "/home/user"],
          "default user is user(1000) in /home/user: %r" % out)
    code, out, _ = s.run(a, "id -u; id -un", user="root")
    check(out.split() == ["0", "root"], "user root is uid 0")
    code, out, _ = s.run(a, "stat -c '%u %a' /home/user /tmp")
    check(out.split() == ["1000", "755", "0", "1777"], "/home/user owned by user, /tmp 1777: %r" % out)

    # ---- nothing of the host inside ----
    host_only = set(os.listdir("/")) - set(os.listdir(base_root) if base_root else DEBIAN_TOP)
    check(m.topdir is not None and os.path.basename(m.topdir) in host_only,
          "a random folder made at the host's / for the test: %s" % m.topdir)
    # An unplanted marker is found nowhere: the checks below would pass.
    check(len(m.made) == len(m.paths) + 1, "every host marker planted (missing: %r)"
          % sorted(set(m.paths) - set(m.made)))
    for sid, where, root in ((a, "base", base_root), (c1, "code-interpreter-v1", ci_root)):
        check_top_level(s, sid, where, root, host_only)
        check_markers(s, sid, where, m)
        check_etc(s, sid, where, root)
    code, out, _ = s.run(b, "[ -e %s ] && echo visible; [ -e /work ] && echo work; "
                            "[ -e %s ] && echo cache; echo end" % (s.state_dir, CACHE), user="root")
    check(out.split() == ["end"], "the host's state dir, /work and the template cache are not "
          "visible inside: %r" % out)
    host_side = os.path.join(s.state_dir, "sandboxes", a)
    check(sorted(os.listdir(host_side)) == ["disk", "disk.img", "envd.log", "etc", "lower", "pid",
                                            "ro", "root", "run"]
          and os.listdir(host_side + "/disk") == [] and os.listdir(host_side + "/root") == []
          and os.listdir(host_side + "/lower") == []
          and all(os.listdir(host_side + "/ro/" + k) == [] for k in os.listdir(host_side + "/ro"))
          and sorted(os.listdir(host_side + "/etc")) == ["hostname", "hosts", "resolv.conf"]
          and sorted(os.listdir(host_side + "/run")) == ["boot_id", "config.json"],
          "host-side sandbox folder: empty mount points, /etc seeds, run/config.json and "
          "boot_id: %r"
          % sorted(os.listdir(host_side)))
    check(host_mounts_naming(a) == [], "no mount of the sandbox on the host while it runs")
    code, out, _ = s.run(a, "cat /proc/mounts /proc/self/mountinfo", user="root")
    check(code == 0 and s.state_dir not in out and CACHE not in out,
          "the sandbox's /proc/mounts and mountinfo name no host path (state dir, cache): %r"
          % [x for x in out.splitlines() if s.state_dir in x or CACHE in x][:3])

    # ---- files: each sandbox its own ----
    s.run(a, "echo secret-a > /home/user/a.txt; echo tmp-a > /tmp/a.txt")
    code, out, _ = s.run(b, "ls /home/user /tmp; cat /home/user/a.txt /tmp/a.txt")
    check(code != 0 and "secret-a" not in out and "tmp-a" not in out,
          "B cannot see A's /home/user or /tmp")
    code, out, _ = s.run(b, "find / -xdev -name a.txt 2>/dev/null | head", user="root")
    check(out.strip() == "", "B (root) finds no file of A anywhere: %r" % out)
    code, out, _ = s.run(a, "cat /run/abx/config.json >/dev/null 2>&1 && echo readable || echo denied")
    check(out.strip() == "denied", "user cannot read envd's config (token)")
    code, out, _ = s.run(a, "touch /var/tmp/mine && ls -A /var/tmp")
    check(code == 0 and out.split() == ["mine"], "/var/tmp is the sandbox's own: %r" % out)

    # ---- root's writes stay in the sandbox ----
    paths, content = check_root_writes(s, a, b, base_root, base_fp)
    probe = os.path.join(s.state_dir, "abx-probe")
    code, out, _ = s.run(a, "mkdir -p %s && echo made" % probe, user="root")
    check(out.strip() == "made" and not os.path.exists(probe),
          "root making the state dir's path inside makes it in the sandbox only")
    for path in ("/opt/abx/bin/abx-probe", "/run/abx/abx-probe"):
        code, _, _ = s.run(a, "touch %s" % path, user="root")
        check(code != 0, "root cannot write %s (read-only binds)" % os.path.dirname(path))
    code, _, _ = s.run(a, "echo h > /proc/sysrq-trigger", user="root")
    check(code != 0, "root cannot write /proc/sysrq-trigger")
    # no sysfs inside: /sys is the template's empty folder (on the overlay)
    code, out, _ = s.run(a, "echo 1 > /sys/kernel/mm/ksm/run 2>/dev/null && echo wrote; "
                            "ls -A /sys; grep -c sysfs /proc/mounts", user="root")
    check(out.split() == ["0"], "root cannot reach the host's /sys (no sysfs, empty /sys): %r"
          % out)
    code, _, _ = s.run(a, "mount -t tmpfs x /mnt", user="root")
    check(code != 0, "root cannot mount")
    code, _, _ = s.run(a, "echo 1 > /proc/sys/kernel/sysrq", user="root")
    check(code != 0, "root cannot write /proc/sys")
    code, _, _ = s.run(a, "hostname evil", user="root")
    code2, out, _ = s.run(a, "hostname")
    check(code != 0 and out.strip() == a, "root cannot change the hostname")

    # ---- processes ----
    s.run(a, "nohup sleep 1234 >/dev/null 2>&1 &")

    def a_sleeps():   # the background job may not have exec'd sleep yet
        out = s.run(a, PROCS)[1]
        return out if [x for x in out.splitlines() if x.split()[1:] == ["sleep"]] else None
    out = until(a_sleeps, 10, step=0.1) or s.run(a, PROCS)[1]
    apids = [x.split()[0] for x in out.splitlines() if x.split()[1:] == ["sleep"]]
    apid = apids[0] if apids else ""
    check(apid.isdigit(), "A's background process is visible in A: %r" % out)
    code, out, _ = s.run(b, PROCS, user="root")
    check("sleep" not in out.split(), "B cannot see A's processes: %r" % out)
    check(0 < len(out.splitlines()) < 10, "B sees only its own few processes (%d)"
          % len(out.splitlines()))
    # a pid of A means nothing in B: kill it there only if B has no such pid
    code, out, _ = s.run(b, "[ -e /proc/%s ] && echo exists || kill -9 %s" % (apid, apid),
                         user="root")
    code2, out2, _ = s.run(a, PROCS)
    check(apid + " sleep" in out2.splitlines(), "B cannot kill A's process")
    code, out, _ = s.run(a, PROCS, user="root")
    check(len(out.splitlines()) < 12, "A cannot see host processes (%d)" % len(out.splitlines()))

    # ---- network: loopback only; the host's ports are not reachable ----
    code, out, _ = s.run(a, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    check(out.split() == ["lo"], "only loopback in the network namespace: %r" % out)
    port = s.api.split(":")[1]
    code, out, _ = s.run(a, "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%s' 2>/dev/null"
                            " && echo reached || echo refused" % port)
    check(out.strip() == "refused", "the host's control port is not reachable: %r" % out)
    code, out, _ = s.run(a, "timeout 5 bash -c 'exec 3<>/dev/tcp/8.8.8.8/53' 2>/dev/null"
                            " && echo reached || echo unreachable")
    check(out.strip() == "unreachable", "no route out of the sandbox: %r" % out)

    # ---- both can listen on 8000, each reached through its own route ----
    for sid, word in ((c1, "from-A"), (c2, "from-B")):
        # `&` on the server alone, with its output redirected: envd ends a
        # command only when nothing holds its stdout/stderr any more.
        s.run(sid, "mkdir -p /home/user/www && echo %s > /home/user/www/index.html; "
                   "cd /home/user/www; nohup python3 -m http.server 8000 >/dev/null 2>&1 &" % word)
    ba, bb = wait_port(s, c1, 8000), wait_port(s, c2, 8000)
    check(ba is not None and b"from-A" in ba, "A serves its own page on 8000")
    check(bb is not None and b"from-B" in bb, "B serves its own page on 8000")
    c = http.client.HTTPConnection(s.data, timeout=10)
    c.request("GET", "/", headers={"Host": "8000-%s.%s" % (c2, s.env["E2B_DOMAIN"])})
    r = c.getresponse()
    check(r.status == 200 and b"from-B" in r.read(), "Host-based routing reaches B:8000")
    c.close()
    st, body, _ = s.data_request(c1, 8001, "GET", "/")
    check(st == 502 and b"8001" in body, "closed port -> 502 naming the port")

    # ---- secure sandbox: envd needs the token ----
    try:
        s.run(sec, "true")
        ok = False
    except RuntimeError as e:
        ok = "401" in str(e)
    check(ok, "secure sandbox: Process/Start without X-Access-Token -> 401")
    code, out, _ = s.run(sec, "echo yes", token=tok)
    check(code == 0 and out.strip() == "yes", "secure sandbox: with the token it runs")

    # ---- kill: nothing left behind ----
    for sid in all_ids:
        pid1, ns = pidns[sid]
        check(s.kill(sid) == 204, "kill %s" % sid)
        killed = boot_ticks()
        check(not os.path.exists(os.path.join(s.state_dir, "sandboxes", sid)), "folder removed")
        check(until(lambda: not os.path.exists("/proc/%d" % pid1), 5), "sandbox pid 1 gone")
        left = until(lambda: pidns_procs(ns, killed) == {}, 5) or sorted(pidns_procs(ns, killed))
        check(left is True, "no process of the sandbox left on the host: %r" % left)
        check(host_mounts_naming(sid) == [], "no mount naming the sandbox on the host")
        check(cgroup_dirs(sid) == [], "its cgroups are gone: %r" % cgroup_dirs(sid))
    # a new sandbox of the same template starts from the template again
    d = s.create("base", timeout=60)["sandboxID"]
    code, out, _ = s.run(d, "cat %s 2>/dev/null; grep -c %s /etc/issue; ls -A /var/tmp /tmp; "
                            "[ -e /usr/bin/yes ] && echo yes-here" % (" ".join(paths), content))
    check(out.split() == ["0", "/tmp:", "/var/tmp:", "yes-here"] or
          out.split() == ["0", "/var/tmp:", "/tmp:", "yes-here"],
          "a new sandbox starts from the template (nothing of A's writes): %r" % out)
    check(s.kill(d) == 204, "kill the new sandbox")
    check(fingerprint(base_root) == base_fp, "template cache unchanged at the end")
    check(os.listdir(os.path.join(s.state_dir, "sandboxes")) == [], "no sandbox folder left")


if __name__ == "__main__":
    run_with_server(run)
