"""abx-local: a sandbox's resource limits hold, and a sandbox at its limits
harms neither the other sandboxes nor the server. With a private templates
dir (same root filesystem as base, so already cached):
- the limits are set in the sandbox's cgroups (memory, pids, cpu) and
  reported by GET /sandboxes/<id>/metrics;
- a memory hog past memoryMB is killed by the OOM killer (SIGKILL), envd
  survives it and the sandbox keeps working; another sandbox answers
  meanwhile;
- a bounded process storm stops at pidsLimit with fork failures, another
  sandbox and the server answer meanwhile, and killing the sandbox leaves
  none of its processes nor its cgroups on the host;
- writing past diskSizeMB fails with ENOSPC."""
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, cgroup_dirs, cgroup_file  # noqa: E402
from abxtest import (boot_ticks, check, done, pid_ns, pidns_procs, proc_stat, until,  # noqa: E402
                     write_file)

MiB = 1024 * 1024
ROOTFS = {"debian": "bookworm", "variant": "essential", "packages": []}
SMALL = {"templateID": "small", "rootfs": ROOTFS, "memoryMB": 128, "pidsLimit": 200,
         "cpuCount": 1, "diskSizeMB": 64}
SMALLDISK = {"templateID": "smalldisk", "rootfs": ROOTFS, "memoryMB": 256, "pidsLimit": 200,
             "cpuCount": 1, "diskSizeMB": 32}
NORMAL = {"templateID": "normal", "rootfs": ROOTFS}

# 400 MiB in 4 MiB steps (so the hog takes a moment to reach the limit).
HOG = ("perl -e 'my $x = \"\"; for (1..100) { $x .= \"a\" x (4 << 20); "
       "select(undef, undef, undef, 0.005) } print \"survived\\n\"'")
STORM_MAX = 3000
# At most STORM_MAX children, each a `sleep 300` with its stdio on
# /dev/null (or envd would wait for them); perl does not retry a failed
# fork (bash does, for seconds). It then counts the sandbox's processes
# from /proc without forking: "made failed count last-error".
STORM = ("perl -e 'my ($ok, $fail, $err) = (0, 0, \"\"); for (1..%d) { my $p = fork; "
         "if (!defined $p) { $fail++; $err = \"$!\"; next } "
         "if (!$p) { open STDIN, \"<\", \"/dev/null\"; open STDOUT, \">\", \"/dev/null\"; "
         "open STDERR, \">\", \"/dev/null\"; exec \"sleep\", \"300\"; exit 1 } $ok++ } "
         "opendir my $d, \"/proc\"; my $n = grep { /^[0-9]+$/ } readdir $d; "
         "print \"$ok $fail $n $err\\n\"'" % STORM_MAX)


class Background(threading.Thread):
    """fn() in a thread; its result (or exception) in .result."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.t_end = fn, None, None

    def run(self):
        try:
            self.result = self.fn()
        except Exception as e:  # noqa: BLE001 (reported by the checks)
            self.result = e
        self.t_end = time.time()


def meanwhile(s, job, other, secs=40, rounds=400):
    """While job runs (and once after): `echo ok` in sandbox other and the
    server's /health. (answers, all fine, first answer started before job
    ended)."""
    n, fine, t_first = 0, True, None
    deadline = time.time() + secs
    while n < rounds and time.time() < deadline:
        alive = job.is_alive()
        t0 = time.time()
        try:
            code, out, _ = s.run(other, "echo ok", timeout=20)
            st = s.request("GET", "/health", key=False)[0]
            fine = fine and code == 0 and out == "ok\n" and st == 200
        except Exception:  # noqa: BLE001
            fine = False
        n += 1
        t_first = t_first or t0
        if not alive:
            break
    job.join(max(1, deadline - time.time()))
    return n, fine, t_first is not None and job.t_end is not None and t_first < job.t_end


def beside(s, sid, cmd, other, what):
    """Runs cmd in sid while sandbox other and /health are checked to keep
    answering; run_end's result, or None (a failed check) if it raised."""
    job = Background(lambda: s.run_end(sid, cmd))
    job.start()
    n, fine, overlap = meanwhile(s, job, other)
    check(n > 0 and fine and overlap, "another sandbox and /health answer while %s runs "
          "(%d rounds, overlapping: %s)" % (what, n, overlap))
    if isinstance(job.result, Exception):
        check(False, "%s's Process/Start answered: %r" % (what, job.result))
        return None
    return job.result


def same_process_alive(pid, start):
    st = proc_stat(pid)
    return st is not None and int(st[1][19]) == start and st[1][0] != "Z"


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cg(sid, v1_ctrl, v1_file, v2_file):
    """A cgroup file of the sandbox: (path, text) on v1, else on v2."""
    p = cgroup_file(sid, v1_ctrl, v1_file, v2_file)
    return (p, read(p)) if p else (None, None)


def metric(s, sid):
    st, js, _, _ = s.request("GET", "/sandboxes/%s/metrics" % sid)
    return js[-1] if st == 200 and isinstance(js, list) and js else {}   # the newest


def check_limits(s, sid, t):
    _, d, _, _ = s.request("GET", "/sandboxes/" + sid)
    check((d["memoryMB"], d["diskSizeMB"], d["cpuCount"]) ==
          (t["memoryMB"], t["diskSizeMB"], t["cpuCount"]),
          "%s: sizes from the template in GET /sandboxes/<id>" % t["templateID"])
    p, mem = cg(sid, "memory", "memory.limit_in_bytes", "memory.max")
    check(mem == str(t["memoryMB"] * MiB), "%s: memory limit %s = %r (%d MiB)"
          % (t["templateID"], p, mem, t["memoryMB"]))
    p, pids = cg(sid, "pids", "pids.max", "pids.max")
    check(pids == str(t["pidsLimit"]), "%s: pids limit %s = %r" % (t["templateID"], p, pids))
    p, cpu = cg(sid, "cpu", "cpu.cfs_quota_us", "cpu.max")
    want = str(t["cpuCount"] * 100000)
    check(cpu is not None and cpu.split()[0] == want, "%s: cpu quota %s = %r (%d cpu)"
          % (t["templateID"], p, cpu, t["cpuCount"]))
    m = metric(s, sid)
    total = t["diskSizeMB"] * MiB
    check(m.get("memUsed", 0) > 0 and m.get("memTotal") == t["memoryMB"] * MiB,
          "%s: metrics memUsed > 0, memTotal = memoryMB: %r / %r"
          % (t["templateID"], m.get("memUsed"), m.get("memTotal")))
    check(abs(m.get("diskTotal", 0) - total) <= total * 0.05,
          "%s: metrics diskTotal = diskSizeMB (5%%): %r" % (t["templateID"], m.get("diskTotal")))


def check_memory(s, small, normal):
    envd = s.envd_pid(small)
    check(envd is not None, "small: envd found on the host (pid %s)" % envd)
    _, oom0 = cg(small, "memory", "memory.oom_control", "memory.events")
    t0 = time.time()
    r = beside(s, small, HOG, normal, "the hog")
    if r is None:
        return
    code, out, err, end = r
    check("survived" not in out, "the hog never got its 400 MiB (past 128 MiB)")
    check(code != 0 and (end.get("status") == "signal: killed" or code == 137),
          "the hog is killed by SIGKILL (exitCode %r, status %r) in %.1f s"
          % (code, end.get("status"), time.time() - t0))
    _, oom = cg(small, "memory", "memory.oom_control", "memory.events")
    kills = [x.split()[1] for x in (oom or "").splitlines() if x.startswith("oom_kill ")]
    kills0 = [x.split()[1] for x in (oom0 or "").splitlines() if x.startswith("oom_kill ")]
    check(kills and int(kills[0]) > int((kills0 or ["0"])[0]),
          "the cgroup counted an OOM kill: %r" % kills)
    code, out, _ = s.run(small, "echo ok")
    check(code == 0 and out == "ok\n", "the sandbox keeps working after the OOM kill")
    check(s.envd_pid(small) == envd, "its envd survived (same process)")
    st, d, _, _ = s.request("GET", "/sandboxes/" + small)
    check(st == 200 and d.get("state") == "running", "the sandbox is still listed, running")
    code, out, _ = s.run(small, "perl -e '$x = \"a\" x (16 << 20); print length($x), \"\\n\"'")
    check(code == 0 and out.strip() == str(16 << 20), "memory under the limit is still usable")


def check_disk(s, sid):
    t = SMALLDISK
    code, out, err = s.run(sid, "dd if=/dev/zero of=/big bs=1M count=%d" % (t["diskSizeMB"] * 3),
                           user="root")
    check(code != 0 and "No space left on device" in err,
          "writing 3x diskSizeMB fails with ENOSPC: %d %r" % (code, err[-200:]))
    m = metric(s, sid)
    total = t["diskSizeMB"] * MiB
    check(m.get("diskUsed", 0) >= total * 0.9, "metrics: the disk is full (%r of %r)"
          % (m.get("diskUsed"), m.get("diskTotal")))
    # A file system may stop a big write a little early (ext4 holds blocks
    # back for the file's extent tree while it is written, and gives them
    # back after): what is left, allocated at once, fills it. Or nothing is
    # left (Linux 6.1's ext4: the write took it all), and there is no /rest.
    s.run(sid, "fallocate -l $(df -B1 --output=avail / | tail -n 1) /rest", user="root")
    code, out, err = s.run(sid, "echo x > /home/user/more")
    check(code != 0 and "No space left on device" in err, "the user cannot write either: %r" % err)
    code, out, err = s.run(sid, "rm -f /big /rest && echo x > /home/user/more && cat /home/user/more",
                           user="root")
    check(code == 0 and out == "x\n", "after removing the file, writes work again (%d %r %r)"
          % (code, out, err[-300:]))
    code, out, _ = s.run(sid, "df -k / | tail -n 1")
    f = out.split()
    check(len(f) > 1 and f[1].isdigit() and abs(int(f[1]) * 1024 - total) <= total * 0.05,
          "df / shows diskSizeMB: %r" % out)


def check_storm(s, small, normal):
    t = SMALL
    ns = pid_ns(s.sandbox_pid(small))
    peak_file, _ = cg(small, "memory", "memory.max_usage_in_bytes", "memory.peak")
    try:   # v1: the peak since now (the hog's is in it)
        with open(peak_file or "", "w") as f:
            f.write("0")
    except OSError:
        pass
    t0 = time.time()
    r = beside(s, small, STORM, normal, "the storm")
    if r is None:
        return
    code, out, err, _ = r
    _, peak = cg(small, "memory", "memory.max_usage_in_bytes", "memory.peak")
    print("     the storm's sandbox peaked at %s bytes of memory" % (peak or "?").strip())
    f = out.split(None, 3)
    ok = len(f) >= 3 and all(x.isdigit() for x in f[:3])
    made, failed, count = (int(x) for x in f[:3]) if ok else (0, 0, 0)
    check(ok and made + failed == STORM_MAX, "the storm ran (%r) in %.1f s%s"
          % (out.strip(), time.time() - t0, "" if ok else ": exit %r, %r, %r"
             % (code, err[-300:], r[3])))
    check(failed > 0 and made < STORM_MAX and "Resource temporarily unavailable" in out,
          "forks failed at the limit: %d made, %d failed" % (made, failed))
    check(t["pidsLimit"] // 2 <= count <= t["pidsLimit"],
          "processes in the sandbox reached the limit, not past it: %d (pidsLimit %d)"
          % (count, t["pidsLimit"]))
    p, cur = cg(small, "pids", "pids.current", "pids.current")
    check(cur is not None and int(cur) <= t["pidsLimit"], "cgroup %s = %s" % (p, cur))
    code, out, _ = s.run(normal, "echo ok")
    check(code == 0 and out == "ok\n", "another sandbox answers while this one is at its limit")
    check(s.request("GET", "/health", key=False)[0] == 200, "the server answers /health")
    procs = pidns_procs(ns)
    sleeps = {p: v for p, v in procs.items() if v[0] == "sleep"}
    check(len(sleeps) >= made - 5, "host sees the storm's sleeps in the sandbox's PID namespace "
          "(%d of %d)" % (len(sleeps), made))
    t1 = time.time()
    check(s.kill(small) == 204, "kill the sandbox at its limit")
    killed = boot_ticks()
    gone = until(lambda: pidns_procs(ns, killed) == {})
    check(gone, "no process of the sandbox is left on the host (%.2f s): %r"
          % (time.time() - t1, list(pidns_procs(ns, killed).items())[:5]))
    left = [p for p, (_, start) in sleeps.items() if same_process_alive(p, start)]
    check(left == [], "every sleep of the storm is gone: %r" % left[:5])
    check(until(lambda: cgroup_dirs(small) == [], 5), "its cgroup folders are gone: %r"
          % cgroup_dirs(small))
    check(not os.path.exists(os.path.join(s.state_dir, "sandboxes", small)),
          "its folder is gone")


def main():
    tdir = tempfile.mkdtemp(prefix="abx-local-limits-")
    made = []
    try:
        for t in (SMALL, SMALLDISK, NORMAL):
            write_file(os.path.join(tdir, t["templateID"], "template.json"), json.dumps(t))
        s = Server(extra=["--templates", tdir])
        try:
            small = s.create("small", timeout=120)["sandboxID"]
            made.append(small)
            normal = s.create("normal", timeout=120)["sandboxID"]
            made.append(normal)
            disk = s.create("smalldisk", timeout=120)["sandboxID"]
            made.append(disk)
            check_limits(s, small, SMALL)
            check_limits(s, disk, SMALLDISK)
            check_memory(s, small, normal)
            check_disk(s, disk)
            check_storm(s, small, normal)
            code, out, _ = s.run(normal, "echo ok")
            check(code == 0 and out == "ok\n", "the other sandbox is unharmed at the end")
        finally:
            for sid in made:
                try:
                    s.kill(sid)
                except Exception:  # noqa: BLE001 (already gone)
                    pass
            s.cleanup()
    finally:
        shutil.rmtree(tdir, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
