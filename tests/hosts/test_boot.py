#!/usr/bin/env python3
"""hosts.boot.KIND: the host harness (guest.py) on one host kind: the
guest boots the kernel and systemd the kind names, on cgroup v2 with the
memory, pids and cpu controllers; a command's output and exit status come
back; a copied folder is there; the command runs as the user asked; a
guest that does not power off in time is killed (exit 124) and nothing of
it is left (no qemu process, no run folder in /var/tmp, no mount), this
machine's cgroup mounts are as they were, and the cached image is
untouched by runs.

usage: test_boot.py KIND"""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import check, done, eq, remove, write_file  # noqa: E402

GUEST = os.path.join(HERE, "guest.py")
SUITE = {"debian12-v2": "12", "debian13-v2": "13"}


def guest(*args, timeout=900):
    return subprocess.run([sys.executable, GUEST] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def digest(path):
    st = os.stat(path)   # a 4 GiB sparse file: its size and time say enough
    return (st.st_size, st.st_mtime_ns)


def mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(" ".join(line.split()[3:5]) + " " + line.split(" - ")[1].split()[0]
                      for line in f)


def main():
    kind = sys.argv[1]
    p = guest("build", kind)
    image = p.stdout.strip()
    if not check(p.returncode == 0 and os.path.isdir(image),
                 "%s: the image is built or found (%r)" % (kind, p.stderr[-2000:])):
        done()
    before = digest(os.path.join(image, "root.img"))
    mounted = mounts()
    data = tempfile.mkdtemp(prefix="abx-hosts-test-")
    try:
        write_file(os.path.join(data, "f.txt"), "from the host\n")
        p = guest("run", kind, "--copy", data + ":data", "--", "sh", "-c",
                  ". /etc/os-release; echo \"version=$VERSION_ID\"; "
                  "echo \"fs=$(stat -fc %T /sys/fs/cgroup)\"; "
                  "echo \"controllers=$(cat /sys/fs/cgroup/cgroup.controllers)\"; "
                  "echo \"pid1=$(cat /proc/1/comm)\"; echo \"user=$(id -un)\"; "
                  "cat data/f.txt; exit 3")
        out = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
        eq(p.returncode, 3, "%s: the command's exit status comes back" % kind)
        eq(out.get("version"), SUITE[kind], "%s: the guest is Debian %s" % (kind, SUITE[kind]))
        eq(out.get("fs"), "cgroup2fs", "%s: cgroup v2 (unified)" % kind)
        check({"memory", "pids", "cpu"} <= set(out.get("controllers", "").split()),
              "%s: the memory, pids and cpu controllers (%r)" % (kind, out.get("controllers")))
        eq(out.get("pid1"), "systemd", "%s: systemd is pid 1" % kind)
        eq(out.get("user"), "root", "%s: root by default" % kind)
        check("from the host" in p.stdout, "%s: a copied folder is there" % kind)
        p = guest("run", kind, "--user", "nobody", "--", "id", "-un")
        check(p.returncode == 0 and p.stdout.strip() == "nobody",
              "%s: --user nobody runs it as nobody (%r)" % (kind, p.stdout))
        p = guest("run", kind, "--timeout", "8", "--", "sleep", "1000")
        check(p.returncode == 124 and "no power-off within 8 s" in p.stderr,
              "%s: a guest past its timeout is killed, exit 124 (%d %r)" % (
                  kind, p.returncode, p.stderr[:200]))
        left = subprocess.run(["pgrep", "-f", "qemu-system-x86_64.*abx-guest-"],
                              capture_output=True, text=True).stdout.split()
        eq(left, [], "%s: no qemu process is left" % kind)
        eq(glob.glob("/var/tmp/abx-guest-*"), [], "%s: no run folder is left" % kind)
        now = mounts()
        eq([m for m in now if m not in mounted] + [m for m in mounted if m not in now], [],
           "%s: this machine's mounts (its cgroups' among them) are as they were" % kind)
        eq(digest(os.path.join(image, "root.img")), before,
           "%s: runs leave the cached image as it was" % kind)
    finally:
        remove(data)
    done()


if __name__ == "__main__":
    main()
