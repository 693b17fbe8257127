#!/usr/bin/env python3
"""hosts.local.KIND: abx-local on a host kind (tests/hosts/guest.py): the
abx-local, abx-envd and abx-e2e of BUILD, the tests, the templates and the
template roots of this machine's cache copied into the guest, where

  - local.lifecycle (tests/local/test_lifecycle.py: limits on creates,
    SIGTERM, a killed envd, a crash and the leftovers the next server
    removes), local.limits (memory, pids and CPU caps enforced),
    local.pause_fs and the leftovers of local.hostile (a killed server's
    sandboxes, a paused one among them, removed by the next server, in a
    scope of its own, and by `abx-local gc`) run as they run here;
  - abx-e2e --local runs tests-lua/test_02_lifecycle.lua, green;
  - systemd's delegation holds: each server runs in a scope of its own
    (abx-local-*.scope, Delegate=yes), the root's subtree_control is as
    systemd left it and no abx-local group is left once they stop;
  - in a cgroup namespace of its own (as a container has: a shell moved
    into a cgroup, unshare --cgroup, cgroup2 mounted again) abx-local
    moves that namespace's processes into a leaf and local.limits passes.

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
export T=/mnt/in/src/tests/local
before=$(cat /sys/fs/cgroup/cgroup.subtree_control)
echo "subtree_control before: $before"
$ABX_LOCAL_BIN serve --listen 127.0.0.1:0 --state-dir /tmp/one --envd $ABX_ENVD_BIN \
  > /tmp/one.out 2> /tmp/one.err &
for i in $(seq 1 300); do grep -q '^ready' /tmp/one.out && break; sleep 0.2; done
grep -h "sandbox cgroups below\|outside any delegated" /tmp/one.err |
  sed 's/abx-local-[0-9-]*\.scope/abx-local-N.scope/'
echo "its cgroup: $(sed 's/abx-local-[0-9-]*\.scope/abx-local-N.scope/' /proc/$!/cgroup)"
kill -TERM $! && wait $!
for t in CASES; do
  timeout 900 python3 "$T/$t" > "/tmp/$t.log" 2>&1
  echo "case $t exit $? ($(tail -n 1 "/tmp/$t.log"))"
  grep '^FAIL' "/tmp/$t.log" | head -n 20
done
timeout 900 python3 "$T/test_hostile.py" --only leftovers > /tmp/leftovers.log 2>&1
echo "case leftovers exit $? ($(tail -n 1 /tmp/leftovers.log))"
grep '^FAIL' /tmp/leftovers.log | head -n 20
cd /mnt/in/src && timeout 900 /mnt/in/bin/abx-e2e --local -q tests-lua/test_02_lifecycle.lua \
  > /tmp/suite.log 2>&1
echo "suite exit $? ($(tail -n 1 /tmp/suite.log))"
grep -E '^(FAILED|ERROR) ' /tmp/suite.log | head -n 20
# systemd removes a stopped scope's group on its own, just after.
for i in $(seq 1 50); do
  left=$(find /sys/fs/cgroup -name 'abx-local*' -o -name 'srv-*' | tr '\n' ' ')
  [ -z "$left" ] && break
  sleep 0.2
done
after=$(cat /sys/fs/cgroup/cgroup.subtree_control)
echo "subtree_control after: $after"
[ "$before" = "$after" ] && echo "subtree_control unchanged"
echo "groups left: [$left]"
# A container's cgroup namespace, made as runtimes make it.
mkdir /sys/fs/cgroup/ctr && echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
sh -c 'echo $$ > /sys/fs/cgroup/ctr/cgroup.procs &&
  exec unshare --cgroup --mount sh -c "umount -l /sys/fs/cgroup &&
    mount -t cgroup2 cgroup2 /sys/fs/cgroup && cat /proc/self/cgroup &&
    timeout 900 python3 $T/test_limits.py"' > /tmp/ns.log 2>&1
echo "case ns-limits exit $? ($(tail -n 1 /tmp/ns.log))"
grep -E '^FAIL|^0::|cgroup /sys' /tmp/ns.log | head -n 20
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
        check("case leftovers exit 0 " in p.stdout,
              "%s: a killed server's leftovers are removed, across scopes" % kind)
        check("suite exit 0 " in p.stdout and " passed" in p.stdout,
              "%s: abx-e2e --local tests-lua/test_02_lifecycle.lua is green in the guest" % kind)
        check("below /sys/fs/cgroup/system.slice/abx-local-N.scope (a delegated scope)"
              in p.stdout and "its cgroup: 0::/system.slice/abx-local-N.scope/init" in p.stdout,
              "%s: a server runs in a delegated scope of its own, in its leaf" % kind)
        check("subtree_control unchanged" in p.stdout,
              "%s: the root's subtree_control is as systemd left it" % kind)
        check("groups left: []" in p.stdout, "%s: no abx-local group is left" % kind)
        check("case ns-limits exit 0 " in p.stdout and "\n0::/\n" in p.stdout,
              "%s: in a cgroup namespace of its own, local.limits passes" % kind)
    finally:
        remove(stage)
    done()


if __name__ == "__main__":
    main()
