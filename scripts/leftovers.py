#!/usr/bin/env python3
"""What a run of the project's tests left on the machine.

usage: leftovers.py snapshot DIR    record what is there now into DIR
       leftovers.py check DIR       print what is there now and was not at
                                    the snapshot; exit 1 if anything is

Counted as left behind (new since the snapshot):
  - processes of ours: one whose command line names abx-, bwrap, runsc,
    mmdebstrap, node, or this checkout; one running as a sandbox's user
    (host uid 1879048192 and up, docs/security.md); or one carrying the
    run's mark in its environment (ABX_LEFTOVER_MARK, set by .ci/run);
  - mounts in this mount namespace;
  - loop devices attached to a file (a sandbox's disk detaches its own);
  - cgroup folders whose path names abx;
  - entries of /tmp, /var/tmp and /dev/shm (systemd's private folders of
    services the machine started meanwhile are not ours, and are listed
    as such without failing).
Standard library only; Linux /proc."""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = re.compile(r"abx-|abx_|bwrap|runsc|mmdebstrap|\bnode\b|" + re.escape(ROOT))
SANDBOX_UID = 1879048192
TMPS = ["/tmp", "/var/tmp", "/dev/shm"]
MARK = "ABX_LEFTOVER_MARK"


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def processes():
    """{pid: (start ticks, uid, command line)} of user-space processes."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        stat = read("/proc/%s/stat" % d)
        cmd = read("/proc/%s/cmdline" % d, "rb")
        status = read("/proc/%s/status" % d)
        if not stat or not cmd or status is None:
            continue  # gone, or a kernel thread (no command line)
        fields = stat.rsplit(")", 1)[1].split()
        m = re.search(r"^Uid:\s+(\d+)", status, re.M)
        out[int(d)] = (int(fields[19]), int(m.group(1)) if m else -1,
                       cmd.replace(b"\0", b" ").decode("utf-8", "replace").strip())
    return out


def marked(pid, mark):
    env = read("/proc/%d/environ" % pid, "rb") or b""
    return mark and ("%s=%s" % (MARK, mark)).encode() in env.split(b"\0")


def mounts():
    text = read("/proc/self/mountinfo") or ""
    return sorted({ln.split()[4] for ln in text.splitlines() if len(ln.split()) > 4})


def loops():
    found = []
    for d in sorted(os.listdir("/sys/block")):
        back = read("/sys/block/%s/loop/backing_file" % d) if d.startswith("loop") else None
        if back:
            found.append("%s: %s" % (d, back.strip()))
    return found


def cgroups():
    found = []
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        if "abx" in base:
            found.append(base)
        if base.count("/") > 8:
            dirs[:] = []
    return sorted(found)


def temps():
    found = []
    for t in TMPS:
        try:
            found += [os.path.join(t, n) for n in os.listdir(t)]
        except OSError:
            pass
    return sorted(found)


def snapshot():
    return {"processes": {str(p): v[0] for p, v in processes().items()},
            "mounts": mounts(), "loops": loops(), "cgroups": cgroups(), "temps": temps()}


def check(before, mark):
    bad, notes = [], []
    me = {os.getpid(), os.getppid()}
    for pid, (start, uid, cmd) in sorted(processes().items()):
        if pid in me or before["processes"].get(str(pid)) == start:
            continue
        if OURS.search(cmd) or uid >= SANDBOX_UID or marked(pid, mark):
            bad.append("process %d (uid %d): %s" % (pid, uid, cmd[:200]))
    bad += ["mount %s" % m for m in mounts() if m not in set(before["mounts"])]
    bad += ["loop device %s" % d for d in loops() if d not in set(before.get("loops", []))]
    bad += ["cgroup %s" % c for c in cgroups() if c not in set(before["cgroups"])]
    for t in temps():
        if t in set(before["temps"]):
            continue
        if os.path.basename(t).startswith("systemd-private-"):
            notes.append("temporary %s (systemd's, not ours)" % t)
        else:
            bad.append("temporary %s" % t)
    return bad, notes


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("snapshot", "check"):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 4
    path = os.path.join(sys.argv[2], "leftovers.json")
    if sys.argv[1] == "snapshot":
        with open(path, "w") as f:
            json.dump(snapshot(), f)
        return 0
    try:
        with open(path) as f:
            before = json.load(f)
    except (OSError, ValueError) as e:
        print("leftovers: no snapshot to compare with (%s)" % e)
        return 1
    bad, notes = check(before, os.environ.get(MARK, ""))
    for n in notes:
        print("leftovers: note: " + n)
    for b in bad:
        print("leftovers: LEFT BEHIND: " + b)
    print("leftovers: %s" % ("%d things left behind" % len(bad) if bad else "nothing left behind"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
