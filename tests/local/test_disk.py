"""abx-local: a sandbox's disk is a disk (docs/security.md, "Budgets").

  test_disk.py [--runtime bwrap|gvisor]

The base template has 512 MiB of memory and a 1024 MiB disk. What the
sandbox writes is capped by the disk, not by its memory: a 1.5 GiB upload
is refused with envd's 507 (E2B's answer to ENOSPC, the SDKs'
NotEnoughSpace error) whose message names the disk's size, and a 2 GiB
`dd` stops at the disk's end with "No space left on device". Through both,
envd is the same process (nothing was OOM-killed) and the sandbox answers;
once the files are removed the space is back. When the sandbox ends its
disk goes with it: no loop device still holds a file of the state dir.

On a writable layer kept in memory (a tmpfs, 9d0e6bf), the upload
OOM-killed envd and with it the sandbox, and `dd` was killed at about the
memory limit."""
import glob
import http.client
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, runtime_cli  # noqa: E402
from abxtest import check, done, until  # noqa: E402

MIB = 1 << 20


def upload(s, sid, path, mib):
    """Streams mib MiB (chunked) to envd's POST /files; (status, body).
    envd may answer before the body ends: a send error is not the verdict,
    its answer is."""
    c = http.client.HTTPConnection(s.data, timeout=300)
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983",
         "Content-Type": "application/octet-stream", "Authorization": "Basic dXNlcjo="}
    block = b"\xa5" * MIB
    try:
        c.request("POST", "/files?path=" + path, (block for _ in range(mib)), h,
                  encode_chunked=True)
    except OSError as e:
        print("     the upload's send ended early: %r" % e)
    try:
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e)
    finally:
        c.close()


def loops_of(state_dir):
    """Loop devices whose backing file is under state_dir."""
    held = []
    for f in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(f) as fh:
                if fh.read().strip().startswith(state_dir):
                    held.append(f.split("/")[3])
        except OSError:
            pass   # detached while we looked
    return held


def envd_inside(s, sid):
    """envd's pid as the sandbox sees it (both runtimes: gVisor's tasks
    are no host processes)."""
    code, out, _ = s.run(sid, "for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = "
                         "abx-envd ] && echo ${p#/proc/}; done; true", user="root", timeout=20)
    return out.split() if code == 0 else None


def answers(s, sid):
    """Whether the sandbox runs `echo` (a dead one's data plane says 502)."""
    try:
        return s.run(sid, "echo alive", user="root", timeout=20)[:2] == (0, "alive\n")
    except RuntimeError as e:
        print("     " + str(e)[:200])
        return False


def free_mib(s, sid):
    code, out, _ = s.run(sid, "df -Pm / | tail -1", user="root")
    fields = out.split()
    return int(fields[3]) if code == 0 and len(fields) > 3 and fields[3].isdigit() else -1


def main():
    rt, runtime = runtime_cli()
    with Server(extra=["--profile", "e2b"] + runtime) as s:
        sid = s.create("base", timeout=600)["sandboxID"]
        info = s.get(sid)[1]
        disk, mem = info.get("diskSizeMB"), info.get("memoryMB")
        check(disk == 1024 and mem == 512, "base: a 1024 MiB disk, 512 MiB of memory (%s, %s)"
              % (disk, mem))
        envd = envd_inside(s, sid)
        check(bool(envd), "envd found inside (%s)" % envd)
        before = free_mib(s, sid)
        # Under gVisor df sees its own overlay over the root (unbounded):
        # the cap is the disk under it, which the upload and dd meet.
        check(rt == "gvisor" or disk * 0.95 <= before <= disk,
              "df: %d MiB free of the %d MiB disk" % (before, disk))

        st, body = upload(s, sid, "/home/user/big", 1536)
        check(st == 507, "a 1.5 GiB upload: 507 (%s %s)" % (st, body[:200]))
        m = re.search(r"disk is (\d+) MiB", body)
        size = int(m.group(1)) if m else 0
        check(disk * 0.95 <= size <= disk, "its message names the disk's size (%s)"
              % body[:200])
        if not check(answers(s, sid), "the sandbox answers after the upload"):
            done()
        check(envd_inside(s, sid) == envd, "envd is the same process (nothing was OOM-killed)")

        code, out, _ = s.run(sid, "rm -f /home/user/big; dd if=/dev/zero of=/home/user/dd "
                             "bs=1M count=2048 2>&1; echo status=$?", user="root", timeout=300)
        check("No space left on device" in out and "status=1" in out,
              "a 2 GiB dd stops at the disk's end (%s)" % out.strip()[-200:])
        m = re.search(r"(\d+)\+\d+ records out", out)
        wrote = int(m.group(1)) if m else 0
        check(wrote > mem, "dd wrote %d MiB, more than the %d MiB of memory" % (wrote, mem))
        if not check(answers(s, sid), "the sandbox answers after dd"):
            done()
        check(envd_inside(s, sid) == envd, "envd is still the same process")

        s.run(sid, "rm -f /home/user/dd", user="root")
        after = free_mib(s, sid)
        check(after >= before - 8, "removing the files gives the space back (%d MiB free, "
              "%d before)" % (after, before))
        if rt == "gvisor":   # df cannot tell: the upload does
            st, body = upload(s, sid, "/home/user/again", 512)
            check(st in (200, 201), "after removing them, 512 MiB upload again (%s %s)"
                  % (st, body[:120]))
        s.kill(sid)
        left = until(lambda: not loops_of(s.state_dir), 15, step=0.2)
        check(left, "no loop device holds a file of the state dir once the sandbox ended (%s)"
              % loops_of(s.state_dir))
    done()


if __name__ == "__main__":
    main()
