#!/usr/bin/env python3
"""hosts.local.KIND: abx-local on a host kind (tests/hosts/guest.py): the
abx-local, abx-envd and abx-e2e of BUILD, the tests, the templates and the
template roots of this machine's cache copied into the guest, where

  - local.lifecycle (tests/local/test_lifecycle.py: limits on creates,
    SIGTERM, a killed envd, a crash and the leftovers the next server
    removes), local.limits (tests/local/test_limits.py: memory, pids and
    CPU caps enforced) and local.pause_fs run as they run here;
  - abx-e2e --local runs tests-lua/test_02_lifecycle.lua, green;

and what abx-local leaves of the guest's cgroups is printed (issue 44:
systemd's delegation; not asserted yet).

Only Debian 12's kind: the binaries are this machine's (Debian 12).

usage: test_local.py KIND BUILD SRC"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import check, done, remove, write_file  # noqa: E402

CACHE = os.environ.get("ABX_LOCAL_CACHE", "/var/cache/abx-local")
CASES = ["test_lifecycle.py", "test_limits.py", "test_pause_fs.py"]

# In the guest: the source tree's templates where the binaries look for
# them, each case with the copied binaries, then the suite file.
SCRIPT = r"""
mkdir -p "$(dirname "$SRC")" && ln -s /mnt/in/src "$SRC"
export ABX_LOCAL_BIN=/mnt/in/bin/abx-local ABX_ENVD_BIN=/mnt/in/bin/abx-envd
export ABX_LOCAL_CACHE=/mnt/in/cache PYTHONDONTWRITEBYTECODE=1
echo "subtree_control before: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
for t in CASES; do
  timeout 900 python3 "/mnt/in/src/tests/local/$t" > "/tmp/$t.log" 2>&1
  echo "case $t exit $? ($(tail -n 1 "/tmp/$t.log"))"
  grep '^FAIL' "/tmp/$t.log" | head -n 20
done
cd /mnt/in/src && timeout 900 /mnt/in/bin/abx-e2e --local -q tests-lua/test_02_lifecycle.lua \
  > /tmp/suite.log 2>&1
echo "suite exit $? ($(tail -n 1 /tmp/suite.log))"
grep -E '^(FAILED|ERROR) ' /tmp/suite.log | head -n 20
echo "subtree_control after: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
echo "groups left: $(ls /sys/fs/cgroup | grep abx | tr '\n' ' ')"
"""


def main():
    kind, build, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    stage = tempfile.mkdtemp(prefix="abx-hosts-local-")
    try:
        os.makedirs(os.path.join(stage, "bin"))
        for b in ("abx-local/server/abx-local", "abx-local/envd/abx-envd", "host/abx-e2e"):
            subprocess.run(["cp", "-a", os.path.join(build, b), os.path.join(stage, "bin")],
                           check=True)
        os.makedirs(os.path.join(stage, "src", "abx-local"))
        for d in ("tests", "tests-lua"):
            subprocess.run(["cp", "-a", os.path.join(src, d), os.path.join(stage, "src", d)],
                           check=True)
        subprocess.run(["cp", "-a", os.path.join(src, "abx-local", "templates"),
                        os.path.join(stage, "src", "abx-local", "templates")], check=True)
        script = SCRIPT.replace("CASES", " ".join(CASES)).replace("$SRC", src)
        write_file(os.path.join(stage, "run.sh"), script)
        p = subprocess.run([sys.executable, os.path.join(HERE, "guest.py"), "run", kind,
                            "--timeout", "3000", "--copy", os.path.join(stage, "bin") + ":bin",
                            "--copy", os.path.join(stage, "src") + ":src",
                            "--copy", os.path.join(CACHE, "rootfs") + ":cache/rootfs",
                            "--copy", stage + ":stage", "--", "sh", "/mnt/in/stage/run.sh"],
                           capture_output=True, text=True, timeout=3600)
        print(p.stdout[-20000:])
        check(p.returncode == 0, "%s: the guest ran the cases (exit %d: %s)" % (
            kind, p.returncode, p.stderr[-1500:]))
        for t in CASES:
            check(("case %s exit 0 " % t) in p.stdout, "%s: local %s passes in the guest" % (kind, t))
        check("suite exit 0 " in p.stdout and " passed" in p.stdout,
              "%s: abx-e2e --local tests-lua/test_02_lifecycle.lua is green in the guest" % kind)
    finally:
        remove(stage)
    done()


if __name__ == "__main__":
    main()
