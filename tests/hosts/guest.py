#!/usr/bin/env python3
"""Boots a host kind the project's tests run on, as a QEMU guest, and runs
one command in it (docs/testing.md "Host kinds").

usage: guest.py build KIND
       guest.py run KIND [--copy DIR[:NAME]]... [--user USER] [--timeout S]
                         [--accel auto|tcg|kvm] -- CMD [ARG ...]
       guest.py kinds
       guest.py accel KIND

build  makes KIND's image once (mmdebstrap with Debian's cloud kernel,
       systemd and a one-shot unit that runs the command and powers off),
       cached under $ABX_HOSTS_CACHE (default /var/cache/abx-local/hosts)
       by a hash of what goes into it; prints its folder.
run    boots a copy of the image (the cached one is never written) with a
       second disk that holds the command and each --copy DIR (under
       /mnt/in/NAME, NAME default DIR's base name; the command runs in
       /mnt/in), runs CMD as USER (default root) and prints its output;
       exits with the command's status. The guest always powers off: after
       --timeout S (default 600) it is killed and this exits 124 naming the
       timeout. Nothing of the run is left: its folder in /var/tmp goes.
       The guest has no network.

Accelerator (--accel, or ABX_HOSTS_ACCEL): auto, the default, is KVM when
/dev/kvm boots the kind's kernel to its first panic (no root disk) within
10 s, else software emulation (tcg): on a machine that is itself a VM,
/dev/kvm may exist and hang a guest (seen on this project's CI machine).
The probe's verdict is kept until the machine reboots; `accel KIND`
prints what auto picks.
Needs root (mmdebstrap, mke2fs) and the Debian packages mmdebstrap,
qemu-system-x86 and e2fsprogs. Standard library only."""
import argparse
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("ABX_HOSTS_CACHE", "/var/cache/abx-local/hosts")
MARK = "ABX-GUEST-RC="
# The guest's disk: sparse, so room for sandboxes' disks (1 GiB each) costs
# nothing until they are written.
ROOT_SIZE = "16G"

# Each kind: its Debian suite and what its image holds beyond the base.
# Debian 12's: what abx-local and abx-e2e built on this machine (Debian 12)
# run with, and what their tests drive them with.
# Debian 13's: the same for a build of its own (native.py; the t64 names),
# and podman, whose containers are a host kind of their own.
RUNTIME12 = ["libcurl4", "libcjson1", "libmicrohttpd12", "libseccomp2", "libnftables1",
             "libmnl0", "liblua5.4-0", "libedit2", "bubblewrap", "e2fsprogs", "python3"]
RUNTIME13 = ["libcurl4t64", "libmicrohttpd12t64"] + \
    [p for p in RUNTIME12 if p not in ("libcurl4", "libmicrohttpd12")]
SRC_TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def deps_packages(*groups):
    """scripts/deps.sh's packages of groups (its footprints)."""
    p = subprocess.run(["bash", os.path.join(SRC_TOP, "scripts", "deps.sh"), "--list"]
                       + list(groups), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        die("scripts/deps.sh --list %s: %s" % (" ".join(groups), p.stderr.strip()))
    return p.stdout.split()


KINDS = {
    "debian12-v2": {"suite": "bookworm", "what": "Debian 12, systemd 252, cgroup v2",
                    "extra": RUNTIME12},
    # A developer's machine: what `make e2e-local` needs (scripts/deps.sh
    # local) and sudo, whose users the tests make.
    "debian12-dev": {"suite": "bookworm",
                     "what": "Debian 12, systemd 252, cgroup v2, make e2e-local's packages, sudo",
                     "extra": ["sudo"] + deps_packages("local")},
    "debian13-v2": {"suite": "trixie", "what": "Debian 13, systemd 257, cgroup v2, podman 5",
                    "extra": RUNTIME13 + ["podman", "crun", "nftables", "dbus"]},
}
PACKAGES = ["linux-image-cloud-amd64", "systemd-sysv", "udev", "kmod", "iproute2",
            "util-linux", "procps"]

# Runs the command from the second disk with its output on the second
# serial port, then powers off, whatever happened.
UNIT = """[Unit]
Description=abx-e2e host harness: run the command, power off
After=local-fs.target systemd-udev-settle.service
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/abx-guest-run
ExecStopPost=/bin/systemctl poweroff --no-block
[Install]
WantedBy=multi-user.target
"""
RUNNER = """#!/bin/sh
# The harness's command (tests/hosts/guest.py): /dev/vdb holds it.
out=/dev/ttyS1
stty -F "$out" raw -echo 2>/dev/null
rc=125
if mkdir -p /mnt/in && mount /dev/vdb /mnt/in; then
  user=$(cat /mnt/in/.user)
  cd /mnt/in && runuser -u "$user" -- sh /mnt/in/.run.sh >"$out" 2>&1
  rc=$?
else
  echo "guest: cannot mount the command's disk /dev/vdb" >"$out"
fi
printf '\\n%s%d\\n' '""" + MARK + """' "$rc" >"$out"
sync
"""


def die(msg, code=2):
    print("guest: " + msg, file=sys.stderr)
    sys.exit(code)


def need(*progs):
    for p in progs:
        if shutil.which(p) is None:
            die("%s not found: install the Debian package %s" % (p, {
                "mmdebstrap": "mmdebstrap", "qemu-system-x86_64": "qemu-system-x86",
                "mke2fs": "e2fsprogs"}.get(p, p)))


def packages(kind):
    return PACKAGES + KINDS[kind]["extra"]


def image_key(kind):
    h = hashlib.sha256()
    for part in (kind, KINDS[kind]["suite"], " ".join(packages(kind)), UNIT, RUNNER, ROOT_SIZE):
        h.update(part.encode() + b"\0")
    return "%s-%s" % (kind, h.hexdigest()[:16])


def build(kind):
    """The folder of kind's cached image (vmlinuz, initrd.img, root.img)."""
    need("mmdebstrap", "mke2fs")
    os.makedirs(CACHE, exist_ok=True)
    final = os.path.join(CACHE, image_key(kind))
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # two builds of one key never overlap
        if os.path.exists(os.path.join(final, "root.img")):
            return final
        tmp = tempfile.mkdtemp(prefix=".build-", dir=CACHE)
        try:
            root = os.path.join(tmp, "root")
            t0 = time.monotonic()
            p = subprocess.run(
                ["mmdebstrap", "--variant=apt", "--include=" + ",".join(packages(kind)),
                 "--customize-hook=echo guest > \"$1/etc/hostname\"",
                 KINDS[kind]["suite"], root], capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                die("mmdebstrap of %s failed (exit %d):\n%s" % (kind, p.returncode,
                                                                 p.stderr[-3000:]))
            with open(os.path.join(root, "etc/systemd/system/abx-guest.service"), "w") as f:
                f.write(UNIT)
            run = os.path.join(root, "usr/local/sbin/abx-guest-run")
            with open(run, "w") as f:
                f.write(RUNNER)
            os.chmod(run, 0o755)
            wants = os.path.join(root, "etc/systemd/system/multi-user.target.wants")
            os.makedirs(wants, exist_ok=True)
            os.symlink("/etc/systemd/system/abx-guest.service",
                       os.path.join(wants, "abx-guest.service"))
            boot = os.path.join(root, "boot")
            for name in os.listdir(boot):
                for prefix, dest in (("vmlinuz-", "vmlinuz"), ("initrd.img-", "initrd.img")):
                    if name.startswith(prefix):
                        shutil.copy(os.path.join(boot, name), os.path.join(tmp, dest))
            p = subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", root, "-F",
                                os.path.join(tmp, "root.img"), ROOT_SIZE],
                               capture_output=True, text=True)
            if p.returncode != 0:
                die("mke2fs of %s's image failed: %s" % (kind, p.stderr[-1000:]))
            shutil.rmtree(root)
            os.rename(tmp, final)
            # the kind's older images (another package list) go
            for old in os.listdir(CACHE):
                if old.startswith(kind + "-") and os.path.join(CACHE, old) != final:
                    shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
            print("guest: built %s (%s) in %.0f s" % (kind, KINDS[kind]["what"],
                                                     time.monotonic() - t0), file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def input_disk(work, cmd, user, copies):
    """The second disk: the command, its user, the copied folders."""
    d = os.path.join(work, "in")
    os.makedirs(d)
    with open(os.path.join(d, ".run.sh"), "w") as f:
        f.write("exec " + " ".join("'" + a.replace("'", "'\\''") + "'" for a in cmd) + "\n")
    with open(os.path.join(d, ".user"), "w") as f:
        f.write(user + "\n")
    size = 64 << 20
    for spec in copies:
        src, _, name = spec.partition(":")
        dest = os.path.join(d, name or os.path.basename(os.path.abspath(src)))
        # cp -a: owners, modes and links as they are (a template root's)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        subprocess.run(["cp", "-a", src, dest], check=True)
        for top, _, files in os.walk(dest):
            size += sum(os.lstat(os.path.join(top, f)).st_size for f in files) + 4096 * len(files)
    img = os.path.join(work, "in.img")
    p = subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", d, "-F", img,
                        "%dK" % (size * 3 // 2 // 1024)], capture_output=True, text=True)
    if p.returncode != 0:
        die("mke2fs of the command's disk failed: %s" % p.stderr[-1000:])
    shutil.rmtree(d)
    return img


def qemu_args(image, work, in_img, accel):
    cpus = "2"
    return ["qemu-system-x86_64", "-accel", "kvm" if accel == "kvm" else "tcg,thread=multi",
            "-m", "3072", "-smp", cpus, "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", os.path.join(image, "vmlinuz"),
            "-initrd", os.path.join(image, "initrd.img"),
            "-append", "root=/dev/vda rw console=ttyS0 quiet panic=-1",
            "-drive", "file=%s,if=virtio,format=raw" % os.path.join(work, "root.img"),
            "-drive", "file=%s,if=virtio,format=raw" % in_img,
            "-serial", "file:" + os.path.join(work, "console.log"),
            "-serial", "file:" + os.path.join(work, "out.log"),
            "-monitor", "none"]


def kvm_works(image):
    """Whether KVM boots image's kernel: with no root disk it panics at
    once and, -no-reboot, qemu exits. Kept per boot of this machine."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    mark = os.path.join(CACHE, ".kvm-" + boot)
    if os.path.exists(mark):
        with open(mark) as f:
            return f.read().strip() == "yes"
    try:
        p = subprocess.run(["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-nographic",
                            "-no-reboot", "-nic", "none", "-monitor", "none",
                            "-kernel", os.path.join(image, "vmlinuz"),
                            "-append", "console=ttyS0 panic=-1 root=/dev/nowhere"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        ok = b"Kernel panic" in p.stdout
    except subprocess.TimeoutExpired:   # subprocess.run kills it
        ok = False
    for old in os.listdir(CACHE):
        if old.startswith(".kvm-"):
            os.unlink(os.path.join(CACHE, old))
    with open(mark, "w") as f:
        f.write("yes\n" if ok else "no\n")
    return ok


def run(kind, cmd, copies, user, timeout, accel):
    need("qemu-system-x86_64", "mke2fs")
    image = build(kind)
    if accel == "auto":
        accel = "kvm" if kvm_works(image) else "tcg"
    work = tempfile.mkdtemp(prefix="abx-guest-", dir="/var/tmp")
    proc = None
    try:
        # A sparse copy: the cached image is never written.
        subprocess.run(["cp", "--sparse=always", os.path.join(image, "root.img"),
                        os.path.join(work, "root.img")], check=True)
        in_img = input_disk(work, cmd, user, copies)
        proc = subprocess.Popen(qemu_args(image, work, in_img, accel), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            tail = open(os.path.join(work, "console.log"), errors="replace").read()[-1500:]
            die("%s: no power-off within %d s: killed (console's last lines:\n%s)" % (
                kind, timeout, tail), 124)
        out = open(os.path.join(work, "out.log"), "rb").read().decode(errors="replace")
        at = out.rfind(MARK)
        if at < 0:
            tail = open(os.path.join(work, "console.log"), errors="replace").read()[-1500:]
            die("%s powered off without the command's status (qemu exit %d: %s; console:\n%s)" % (
                kind, proc.returncode, err.decode(errors="replace")[-500:], tail), 125)
        sys.stdout.write(out[:at].rstrip("\n") + "\n" if out[:at].strip() else "")
        return int(out[at + len(MARK):].split()[0])
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def stop(signum, _frame):
    """SIGTERM (ctest's timeout, kill) ends a run as a timeout does: the
    guest killed and its folder removed (the finally clauses run)."""
    die("stopped by signal %d" % signum, 128 + signum)


def main():
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    b = sub.add_parser("build")
    b.add_argument("kind", choices=sorted(KINDS))
    r = sub.add_parser("run")
    r.add_argument("kind", choices=sorted(KINDS))
    r.add_argument("--copy", action="append", default=[], metavar="DIR[:NAME]")
    r.add_argument("--user", default="root")
    r.add_argument("--timeout", type=int, default=600)
    r.add_argument("--accel", choices=["auto", "tcg", "kvm"],
                   default=os.environ.get("ABX_HOSTS_ACCEL", "auto"))
    r.add_argument("cmd", nargs="+")
    sub.add_parser("kinds")
    c = sub.add_parser("accel")
    c.add_argument("kind", choices=sorted(KINDS))
    a = ap.parse_args()
    if os.geteuid() != 0:
        die("needs root (mmdebstrap, mke2fs, the image cache)")
    if a.verb == "kinds":
        for k in sorted(KINDS):
            print("%s\t%s" % (k, KINDS[k]["what"]))
        return 0
    if a.verb == "build":
        print(build(a.kind))
        return 0
    if a.verb == "accel":
        need("qemu-system-x86_64")
        print("kvm" if kvm_works(build(a.kind)) else "tcg")
        return 0
    for spec in a.copy:
        if not os.path.isdir(spec.partition(":")[0]):
            die("--copy %s: not a folder" % spec)
    return run(a.kind, a.cmd, a.copy, a.user, a.timeout, a.accel)


if __name__ == "__main__":
    sys.exit(main())
