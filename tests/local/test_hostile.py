"""abx-local against an attacker inside a sandbox (docs/security.md): what
a sandbox's root tries on the host, and what a client sends that should
not be taken. Each case names the defence it checks.

  test_hostile.py [--profile e2b|fc] [--runtime bwrap|gvisor] [--only leftovers]

Root in a sandbox is an unprivileged host uid (user namespace); the host's
kernel settings cannot be written; pid 1's environment and descriptors hold
nothing of the host (a canary variable planted in abx-local's environment
and in abx-e2e's is never found); runc's /proc paths are masked; Docker's
seccomp deny list holds; a fork bomb ends with its command's timeout and
the sandbox keeps answering; all sandboxes together meet --max-pids;
paths and names with NUL or bad UTF-8 are refused (envd and the control
plane), as are trailing JSON, raw control bytes, bad env names, negative
timeouts; a request framed two ways is refused and its connection closed;
writes to read-only mounts are a 4xx; a SIGKILLed server's sandboxes (a
paused one too) are removed by the next server, whatever its state dir,
and by `abx-local gc`, which leaves live servers' sandboxes alone."""
import argparse
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, Server, cgroup_dirs, server_groups  # noqa: E402
from abxtest import check, done, pid_ns, pidns_procs, raw_http, until  # noqa: E402

UID_BASE = 1879048192    # sandbox uid 0 on the host (abx-local/server/base/base.h)
CANARY = "ABX_HOSTILE_CANARY"
CANARY_VALUE = "canary-5f1e0c7d9b"
LOG_CAP = 8 * 1024 * 1024  # envd.log's cap (ABXL_SBXLOG_CAP)
# CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID (abxl_sandbox_caps)
KEPT_CAPS = 0xeb
GVISOR = False   # --runtime gvisor


def host_read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def sh(s, sid, cmd, user="root", **kw):
    """(exit code, stdout + stderr) of bash -c cmd in the sandbox."""
    code, out, err, _ = s.run_end(sid, cmd, user=user, **kw)
    return code, out + err


def multipart(name, data):
    b = "abxhostileboundary"
    body = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n" % (b, name)).encode() + data + \
        ("\r\n--%s--\r\n" % b).encode()
    return body, {"Content-Type": "multipart/form-data; boundary=" + b}


def upload(s, sid, raw_path, data):
    body, h = multipart("f", data)
    st, out, _ = s.data_request(sid, 49983, "POST", "/files?username=root&path=" + raw_path,
                                body, h)
    return st, out


# ---- the sandbox's root is nobody on the host ----
def host_uids(pid):
    st = host_read("/proc/%d/status" % pid) or ""
    return [int(u) for x in st.splitlines() if x.startswith("Uid:") for u in x.split()[1:]]


def user_namespace_gvisor(s, sid):
    """Under gVisor the ids inside are its kernel's; on the host, every
    process of the sandbox but runsc's monitor (its pid 1) runs as an
    unprivileged uid: the sentry and the gofer."""
    mon = s.sandbox_pid(sid)
    procs = [p for p in pidns_procs(pid_ns(mon)) if p != mon]
    uids = {p: host_uids(p) for p in procs}
    check(procs and all(u and min(u) >= UID_BASE for u in uids.values()),
          "the sentry and gofer run as host uids >= %d: %s" % (UID_BASE, uids))


def user_namespace(s, sid):
    if GVISOR:
        user_namespace_gvisor(s, sid)
        return bounding(s, sid)
    code, out = sh(s, sid, "cat /proc/self/uid_map /proc/self/gid_map; id -u")
    lines = [x.split() for x in out.strip().splitlines()]
    check(code == 0 and len(lines) == 3 and lines[0] != ["0", "0", "4294967295"],
          "root inside is not the host's root: uid_map %r" % out)
    base = int(lines[0][1]) if len(lines) == 3 and lines[0][1].isdigit() else -1
    check(base >= UID_BASE and (base - UID_BASE) % 65536 == 0 and lines[0][2] == "65536"
          and lines[1][:3] == lines[0][:3],
          "uids and gids 0..65535 inside are a sandbox range of the host's, %d.. and up: %r"
          % (UID_BASE, lines[:2]))
    envd = s.envd_pid(sid)
    st = host_read("/proc/%d/status" % envd) if envd else ""
    uid = [x.split()[1:] for x in (st or "").splitlines() if x.startswith("Uid:")]
    check(uid and all(int(u) >= UID_BASE for u in uid[0]),
          "envd (root inside) runs as an unprivileged host uid: %s" % uid)
    caps = [x for x in (st or "").splitlines() if x.startswith("CapEff:")]
    check(caps != [], "envd's capabilities are readable: %s" % caps)
    bounding(s, sid)


def bounding(s, sid):
    """The bounding set is the kept capabilities (envd's), as runc bounds
    a container's to its configured set; no process inside holds more."""
    for user in ("root", "user"):
        code, out = sh(s, sid, "grep -E '^Cap(Bnd|Prm|Eff|Amb):' /proc/self/status", user=user)
        caps = dict((k, int(v, 16)) for k, v in (x.split(":") for x in out.split("\n") if x))
        check(code == 0 and caps.get("CapBnd") == KEPT_CAPS,
              "%s: the bounding set is the kept capabilities (%x, want %x)"
              % (user, caps.get("CapBnd", -1), KEPT_CAPS))
        check(all(v & ~KEPT_CAPS == 0 for v in caps.values()),
              "%s: no capability beyond the kept ones (%s)" % (user, out.strip()))


def kernel_settings(s, sid):
    # The values written are the host's own (sysrq: "help" only prints):
    # should a write get through, the check fails but nothing changes.
    for path in ("/proc/sys/kernel/printk_ratelimit", "/proc/sys/kernel/core_pattern",
                 "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"):
        before = host_read(path) if "sysrq" not in path else None
        value = {"/proc/sys/vm/drop_caches": "1", "/proc/sysrq-trigger": "h"}.get(
            path, (before or "").strip())
        code, out = sh(s, sid, "printf '%%s\\n' '%s' > %s" % (value, path))
        check(code != 0, "write of %s refused inside (%s)" % (path, out.strip()[:120]))
        if before is not None:
            check(host_read(path) == before, "host's %s unchanged" % path)
    for name in ("kcore", "keys", "timer_list", "sched_debug", "latency_stats"):
        if not os.path.exists("/proc/" + name):
            continue   # this kernel has none to mask
        code, out = sh(s, sid, "wc -c < /proc/%s" % name)
        # gVisor's kernel has none of them
        check((code == 0 and out.strip() == "0") or (GVISOR and "No such file" in out),
              "/proc/%s masked (empty or absent): %r" % (name, out))
    if GVISOR:
        code, out = sh(s, sid, "touch /proc/sys/x")
        check(code != 0, "gVisor: /proc/sys takes no new entry (%s)" % out.strip()[:100])
        return
    code, out = sh(s, sid, "touch /proc/sys/x 2>&1; grep -E ' /proc/(sys|fs|irq|bus) ' "
                   "/proc/self/mounts")
    ro = [x for x in out.splitlines() if x.startswith("proc ") or " ro," in x or " ro " in x]
    check(sum(" ro" in x for x in ro) >= 3, "/proc/sys, fs, irq, bus read-only: %r" % out)


def syscalls(s, sid):
    if GVISOR:   # the calls inside go to gVisor's kernel; the sentry's to a filter
        mon = s.sandbox_pid(sid)
        procs = [p for p in pidns_procs(pid_ns(mon)) if p != mon]
        modes = [(host_read("/proc/%d/status" % p) or "").split("Seccomp:")[-1].split()[:1]
                 for p in procs]
        check(procs and all(m == ["2"] for m in modes),
              "gVisor: the sentry and gofer run under a seccomp filter: %s" % modes)
        return
    code, out = sh(s, sid, "grep -E '^Seccomp:' /proc/self/status")
    check(out.split()[-1:] == ["2"], "commands run under a seccomp filter: %r" % out)
    code, out = sh(s, sid, "unshare -U -r true")
    check(code != 0, "a nested user namespace is refused (unshare -U: %s)" % out.strip()[:100])
    code, out = sh(s, sid, "unshare -m true")
    check(code != 0, "a new mount namespace is refused: %s" % out.strip()[:100])


# ---- nothing of the host passes in ----
def environment(s, sid):
    code, out = sh(s, sid, "cat /proc/1/environ | tr '\\0' '\\n'; for p in /proc/[0-9]*; do "
                   "tr '\\0' '\\n' < $p/environ 2>/dev/null; done")
    check(code == 0 and CANARY not in out and CANARY_VALUE not in out,
          "no process of the sandbox (pid 1 included) has abx-local's environment")
    check(s.key not in out, "the API key is in no process's environment")
    st, body, _ = s.data_request(sid, 49983, "GET", "/files?username=root&path=/proc/1/environ")
    check(CANARY_VALUE.encode() not in body and s.key.encode() not in body,
          "GET /files?path=/proc/1/environ: no host variable (%d)" % st)


def descriptors(s, sid, state_dir):
    code, out = sh(s, sid, "for f in /proc/[0-9]*/fd/*; do l=$(readlink $f) || continue; "
                   "echo \"$f $l\"; done")
    links = [x.split(" ", 1) for x in out.splitlines() if " " in x]
    outside = []
    for f, link in links:
        # host:[N] is gVisor's name for a descriptor runsc gave it (the
        # stdio pipe, checked on the host below)
        if link.split(":", 1)[0] in ("pipe", "socket", "anon_inode") or \
                (GVISOR and link.startswith("host:[")) or \
                link.startswith("/proc/") or link.startswith("/dev/"):
            continue
        # a path: it must exist inside, and name nothing of the host
        c, _ = sh(s, sid, "test -e '%s'" % link)
        if c != 0 or link.startswith(state_dir):
            outside.append((f, link))
    check(code == 0 and links and not outside,
          "every /proc/*/fd/* inside resolves inside the sandbox (%d links; outside: %s)"
          % (len(links), outside[:5]))
    fd1 = [link for f, link in links if f == "/proc/1/fd/1"]
    if GVISOR:
        fd1 = [os.readlink("/proc/%d/fd/1" % s.sandbox_pid(sid))]
    check(fd1 and fd1[0].startswith("pipe:"), "pid 1's stdout is a pipe, not a host file: %s"
          % fd1)
    log = os.path.join(state_dir, "sandboxes", sid, "envd.log")
    code, out = sh(s, sid, "head -c 20M /dev/zero >> /proc/1/fd/1; echo done", timeout=120)
    check("done" in out, "writing 20 MiB to pid 1's stdout: %r" % out[-200:])
    size = until(lambda: os.path.getsize(log) if os.path.getsize(log) >= LOG_CAP else None, 20)
    time.sleep(0.5)
    size = os.path.getsize(log) if os.path.exists(log) else -1
    check(0 < size <= LOG_CAP + 4096, "the host's envd.log is capped (%d bytes)" % size)
    code, out = sh(s, sid, "echo alive")
    check("alive" in out, "the sandbox answers after flooding its log")


def runner_environment():
    """`abx-e2e exec --local`: a token in the runner's environment (which
    abx-local inherits) is in no process of the sandbox, and the runner
    does not know it, so could not mask it: it must not get there."""
    e2e = os.environ.get("ABX_E2E_BIN")
    if not e2e:
        check(False, "ABX_E2E_BIN names abx-e2e (set by CMake)")
        return
    work = tempfile.mkdtemp(prefix="abx-hostile-exec-")
    script = os.path.join(work, "s.lua")
    with open(script, "w") as f:
        f.write('local sandbox = require "e2e.sandbox"\n'
                'local r = sandbox.create {}.commands:run("for p in /proc/[0-9]*; do '
                'tr \'\\\\0\' \'\\\\n\' < $p/environ; done; echo END", {user = "root"})\n'
                'print(r.stdout)\n')
    env = dict(os.environ, GITHUB_TOKEN="ghp_" + CANARY_VALUE, ABX_LOCAL_PROFILE="e2b")
    for k in ("ABX_SANDBOX_API_KEY", "E2B_API_KEY", "ABX_SANDBOX_BASE_URL", "E2B_API_URL"):
        env.pop(k, None)
    r = subprocess.run([e2e, "exec", "--local", script], capture_output=True, text=True,
                       env=env, timeout=300)
    shutil.rmtree(work, ignore_errors=True)
    check(r.returncode == 0 and "END" in r.stdout,
          "abx-e2e exec --local ran the script (%d): %s" % (r.returncode, r.stderr[-300:]))
    check(CANARY_VALUE not in r.stdout and "GITHUB_TOKEN" not in r.stdout,
          "the runner's GITHUB_TOKEN is in no process of the sandbox")


# ---- limits ----
def fork_bomb_gvisor(s, sid):
    """Under gVisor (ptrace platform) many processes inside end their own
    sandbox (docs/security.md): the bomb may take its sandbox down, never
    the host or another sandbox."""
    other = s.create("base", timeout=120)["sandboxID"]
    t0 = time.time()
    try:
        s.run_end(sid, "bomb() { bomb | bomb & }; bomb; sleep 60", user="user",
                  timeout=120, deadline_ms=4000, errors=False)
    except (OSError, ValueError, RuntimeError, http.client.HTTPException) as e:
        print("     (the bombed sandbox's stream ended: %s)" % type(e).__name__)
    check(time.time() - t0 < 30, "gVisor: the bomb's command ended within 30 s (%.1f s)"
          % (time.time() - t0))
    code, out = sh(s, other, "echo other-alive")
    check(code == 0 and "other-alive" in out, "gVisor: another sandbox answers after the bomb")
    ns = pid_ns(s.sandbox_pid(other))
    check(pidns_procs(ns), "gVisor: the other sandbox's processes are there")
    s.kill(other)


def fork_bomb(s, sid):
    if GVISOR:
        return fork_bomb_gvisor(s, sid)
    before = s.procs_inside(sid)
    t0 = time.time()
    _, _, _, _, error = s.run_end(sid, "bomb() { bomb | bomb & }; bomb; sleep 60", user="user",
                                  timeout=120, deadline_ms=4000, errors=False)
    secs = time.time() - t0
    check(secs < 30, "the fork bomb's command ended at its timeout (%.1f s, %s)"
          % (secs, (error or {}).get("code")))
    after = until(lambda: (lambda n: n if n <= before else None)(s.procs_inside(sid)), 20,
                  step=0.5)
    check(after is not None, "nothing the bomb started is left (%d processes before, %d now)"
          % (before, s.procs_inside(sid)))
    code, out = sh(s, sid, "echo after-bomb")
    check(code == 0 and "after-bomb" in out, "the sandbox answers after the bomb")


def total_pids(s):
    """--max-pids caps all sandboxes together."""
    srv = [p for p in (os.path.join(g, "pids.max") for g in server_groups(s.proc.pid))
           if os.path.exists(p)]
    check(srv and host_read(srv[0]).strip() == "300",
          "the server's parent cgroup holds --max-pids 300: %s" % srv)
    if GVISOR:   # processes inside are the sentry's tasks, not host pids
        return
    a, b = (s.create("base", timeout=120)["sandboxID"] for _ in range(2))
    counts = []
    for sid in (a, b):
        # each tries 250 sleepers; together they cannot pass 300 (the
        # second one's envd may not even get to fork: that is the cap)
        try:
            sh(s, sid, "for i in $(seq 250); do sleep 30 >/dev/null 2>&1 & done 2>/dev/null; "
               "echo started", timeout=60)
        except (OSError, RuntimeError, ValueError, http.client.HTTPException) as e:
            print("     (%s: %s)" % (sid, type(e).__name__))
    for sid in (a, b):
        counts.append(len(pidns_procs(pid_ns(s.sandbox_pid(sid)))))
    check(sum(counts) <= 300, "two sandboxes together stay under --max-pids (%s)" % counts)
    for sid in (a, b):
        s.kill(sid)


# ---- inputs ----
def envd_inputs(s, sid):
    sh(s, sid, "echo host-secret > /tmp/a && mkdir -p /tmp/d")
    st, body, _ = s.data_request(sid, 49983, "GET", "/files?username=root&path=/etc/passwd%00.txt")
    check(st == 400 and b"root:" not in body, "GET /files with %%00 in the path -> 400 (%d)" % st)
    st, _, _ = s.data_request(sid, 49983, "GET", "/files?username=root&path=/tmp/%ff")
    check(st == 400, "GET /files with invalid UTF-8 in the path -> 400 (%d)" % st)
    st, _ = upload(s, sid, "/tmp/d/x%00y.txt", b"data")
    code, out = sh(s, sid, "ls /tmp/d")
    check(st == 400 and out.strip() == "", "upload to a %%00 path -> 400, nothing made (%d, %r)"
          % (st, out))
    raw = b'{"path": "/tmp/a\\u0000/../../etc/hostname"}'
    st, js = s.rpc(sid, "/filesystem.Filesystem/Remove", None, raw)
    code, out = sh(s, sid, "cat /tmp/a /etc/hostname")
    check(st == 400 and (js or {}).get("code") == "invalid_argument" and "host-secret" in out,
          "Remove of a path with \\u0000 -> invalid_argument, nothing removed (%d %s)" % (st, js))
    st, js = s.rpc(sid, "/filesystem.Filesystem/Stat", None, b'{"path": "/tmp/a"} {"x": 1}')
    check(st == 400, "a request followed by more JSON -> 400 (%d)" % st)
    # read-only mounts: a client error, never 500
    st, _ = upload(s, sid, "/opt/abx/bin/x", b"data")
    check(400 <= st < 500, "upload into a read-only mount -> 4xx (%d)" % st)
    st, js = s.rpc(sid, "/filesystem.Filesystem/Remove", {"path": "/opt/abx/bin/abx-envd"})
    check(400 <= st < 500 and (js or {}).get("code") == "permission_denied",
          "Remove in a read-only mount -> permission_denied (%d %s)" % (st, js))
    st, js = s.rpc(sid, "/filesystem.Filesystem/Move",
                 {"source": "/tmp/a", "destination": "/opt/abx/bin/a"})
    check(400 <= st < 500 and (js or {}).get("code") == "permission_denied",
          "Move onto a read-only mount -> permission_denied (%d %s)" % (st, js))


def control_inputs(s, sid, fc):
    bad = [(b'{"templateID": "base"} x', "trailing garbage"),
           (b'{"templateID": "base"}\x00', "a raw NUL"),
           (b'{"templateID": "ba\\u0000se"}', "\\u0000 in a string"),
           (b'{"templateID": "ba\x01se"}', "a raw control byte"),
           (b'{"templateID": "b\xffse"}', "invalid UTF-8"),
           (b'{"templateID": "base", "envVars": {"A=B": "1"}}', "env key A=B"),
           (b'{"templateID": "base", "envVars": {"": "1"}}', "empty env key"),
           (b'{"templateID": "base", "envVars": {"1A": "1"}}', "env key starting with a digit"),
           (b'{"templateID": "base", "metadata": {"": "1"}}', "empty metadata key")]
    n0 = len(s.list())
    for raw, what in bad:
        st, js, _, _ = s.request("POST", "/sandboxes", raw=raw)
        check(st == 400 and isinstance(js, dict) and js.get("code") == 400,
              "create with %s -> 400 (%d %s)" % (what, st, js))
    check(len(s.list()) == n0, "no refused create made a sandbox")
    st, _, _, _ = s.request("POST", "/sandboxes/%s/timeout" % sid, {"timeout": -1})
    check(st == 400, "set-timeout -1 -> 400 (%d)" % st)
    st, _, _, _ = s.request("POST", "/sandboxes/%s/connect" % sid, {"timeout": -5})
    check(st == 400, "connect with timeout -5 -> 400 (%d)" % st)
    if not fc:   # pause is allow-listed on FC (403 before the body)
        st, _, _, _ = s.request("POST", "/sandboxes/%s/pause" % sid, {"memory": "x"})
        check(st == 400, "pause with memory \"x\" -> 400 (%d)" % st)
    _, d, _, _ = s.get(sid)
    check((d or {}).get("state") == "running", "the sandbox is still running after all that")


def framing(s, sid):
    target = "Host: 49983-%s.%s\r\n" % (sid, s.env["E2B_DOMAIN"])
    smuggle = ("POST /health HTTP/1.1\r\n%sContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n"
               "0\r\n\r\nGET /envs HTTP/1.1\r\n%s\r\n" % (target, target))
    for where, addr in (("data plane", s.data), ("control plane", s.api)):
        got, closed = raw_http(addr, smuggle.encode())
        check(got.startswith(b"HTTP/1.1 400") and got.count(b"HTTP/1.") == 1 and closed,
              "%s: Content-Length with Transfer-Encoding -> one 400, connection closed (%r)"
              % (where, got[:60]))
        got, closed = raw_http(addr, ("POST /health HTTP/1.1\r\n%sTransfer-Encoding: chunked, "
                                      "identity\r\n\r\n0\r\n\r\n" % target).encode())
        check(got.startswith(b"HTTP/1.1 400") and closed,
              "%s: Transfer-Encoding 'chunked, identity' -> 400, closed (%r)" % (where, got[:60]))

    envd_framing_inside(s, sid)
    for name in ("A=B", "", "1A", "A B", "\u00e9"):
        code, out, _, _, error = s.run_end(sid, "echo ran", user="root", envs={name: "x"},
                                           errors=False)
        check((error or {}).get("code") == "invalid_argument" and "ran" not in out,
              "Process Start with env name %r -> invalid_argument, nothing run (%r)"
              % (name, error))


# Requests that two parsers could read two ways, sent from inside the
# sandbox to envd's own port (no proxy re-frames them): a request hidden
# in the body must never be served.
HIDDEN = "GET /envs HTTP/1.1\r\nHost: envd\r\n\r\n"
INSIDE = [("Content-Length with Transfer-Encoding", "Content-Length: %d\r\nTransfer-Encoding: "
           "chunked\r\n" % (5 + len(HIDDEN)), "0\r\n\r\n" + HIDDEN),
          ("two Transfer-Encodings", "Transfer-Encoding: chunked\r\nTransfer-Encoding: "
           "chunked\r\n", "0\r\n\r\n" + HIDDEN),
          ("two Content-Lengths", "Content-Length: 0\r\nContent-Length: 0\r\n", HIDDEN)]


def envd_framing_inside(s, sid):
    for name, headers, body in INSIDE:
        req = "POST /health HTTP/1.1\r\nHost: envd\r\n%s\r\n%s" % (headers, body)
        # bash's /dev/tcp; the request in one write (bash's printf writes
        # a line at a time, and envd may close after the first lines);
        # timeout ends a connection envd kept open.
        code, out = sh(s, sid, "printf \"%s\" > /tmp/req && timeout 5 bash -c 'trap \"\" PIPE; "
                               "exec 3<>/dev/tcp/127.0.0.1/49983; cat /tmp/req >&3; cat <&3'; "
                               "echo \"status=$?\"" % req)
        check(out.startswith("HTTP/1.1 400") and out.count("HTTP/1.") == 1 and
              "status=0" in out,
              "inside the sandbox, to envd: %s -> one 400, connection closed (%r)"
              % (name, out[:80]))



def boot_id(s, sid):
    """/proc/sys/kernel/random/boot_id: a UUID of the sandbox's own, not
    the host's, another in another sandbox."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        host = f.read().strip()
    other = s.create("base", timeout=60)["sandboxID"]
    ids = []
    for x in (sid, other):
        code, out = sh(s, x, "cat /proc/sys/kernel/random/boot_id")
        ids.append(out.strip() if code == 0 else "")
    s.kill(other)
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    check(all(re.fullmatch(uuid, x) for x in ids) and host not in ids and ids[0] != ids[1],
          "boot_id: a random UUID of each sandbox's own, not the host's (%r)" % ids)


# ---- what a dead server leaves ----
def leftovers(profile, runtime):
    """A SIGKILLed server (sandboxes running, one paused) leaves processes
    and cgroups outside its state dir: the next server, on another state
    dir, removes them; so does `abx-local gc`, but not a live server's."""
    live = Server(extra=["--profile", "e2b"] + runtime)
    keep = live.create("base", timeout=300)["sandboxID"]
    for how in ("next server", "abx-local gc"):
        state = tempfile.mkdtemp(prefix="abx-hostile-dead-")
        dead = Server(extra=["--profile", "e2b"] + runtime, state_dir=state)
        a, b = (dead.create("base", timeout=300)["sandboxID"] for _ in range(2))
        st, _, _, _ = dead.request("POST", "/sandboxes/%s/pause" % b)
        check(st == 204, "%s: a sandbox paused before the crash (%d)" % (how, st))
        nss = [pid_ns(dead.sandbox_pid(x)) for x in (a, b)]
        with open("/proc/%d/cgroup" % dead.proc.pid) as f:
            scoped = ".scope/" in f.read()   # a systemd scope of its own
        dead.proc.send_signal(signal.SIGKILL)
        dead.proc.wait()
        shutil.rmtree(state, ignore_errors=True)   # as abx-e2e --local does
        left = [x for x in (a, b) if cgroup_dirs(x)]
        # systemd (257 seen) may stop a scope whose first process died,
        # killing what is left in it, before anyone looks.
        check(left or scoped, "%s: the killed server left cgroups (%s), or systemd removed "
              "its scope" % (how, left))
        if how == "next server":
            nxt = Server(extra=["--profile", "e2b"] + runtime)
            nxt.cleanup()
        else:
            r = subprocess.run([LOCAL_BIN, "gc"], capture_output=True, text=True, timeout=120)
            check(r.returncode == 0 and "removed" in r.stdout, "abx-local gc: %r" % r.stdout)
        gone = until(lambda: all(not cgroup_dirs(x) for x in (a, b)) and
                     all(not pidns_procs(ns) for ns in nss), 20, step=0.2)
        check(gone, "%s: the dead server's cgroups and processes (the paused one's too) are gone"
              % how)
        check(cgroup_dirs(keep) and live.run(keep, "echo ok")[1].strip() == "ok",
              "%s: a live server's sandbox is left alone" % how)
    live.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="e2b")
    ap.add_argument("--runtime", default="")
    ap.add_argument("--only", choices=["leftovers"],
                    help="only what a dead server leaves (tests/hosts: a host kind's cgroups)")
    a = ap.parse_args()
    runtime = ["--runtime", a.runtime] if a.runtime else []
    global GVISOR
    GVISOR = a.runtime == "gvisor"
    os.environ[CANARY] = CANARY_VALUE   # abx-local's environment holds it
    if a.only == "leftovers":
        leftovers(a.profile, runtime)
        done()
    with Server(extra=["--profile", a.profile, "--max-pids", "300"] + runtime) as s:
        sid = s.create("base", timeout=300)["sandboxID"]
        user_namespace(s, sid)
        kernel_settings(s, sid)
        boot_id(s, sid)
        syscalls(s, sid)
        environment(s, sid)
        descriptors(s, sid, s.state_dir)
        envd_inputs(s, sid)
        control_inputs(s, sid, a.profile == "fc")
        framing(s, sid)
        fork_bomb(s, sid)
        s.kill(sid)
        total_pids(s)
    if a.profile == "e2b":   # pause, which fc allow-lists, is part of it
        leftovers(a.profile, runtime)
        runner_environment()
    done()


if __name__ == "__main__":
    main()
