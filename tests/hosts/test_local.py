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
  - abx-local check (and local.check) finds nothing blocking, and says
    where the groups would go: a scope of its own, or a cgroup
    namespace's root;
  - systemd's delegation holds: each server runs in a scope of its own
    (abx-local-*.scope, Delegate=yes), one started as a service whose
    unit says Delegate=yes stays in that service's cgroup, the root's
    subtree_control is as systemd left it and no abx-local group is left
    once they stop;
  - in a cgroup namespace of its own (as a container has: a shell moved
    into a cgroup, unshare --cgroup, cgroup2 mounted again) abx-local
    moves that namespace's processes into a leaf and local.limits passes.

A kind of another Debian release than this machine's gets binaries built
for it (native.py: in a cached root of that release).

usage: test_local.py KIND BUILD SRC"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hostlib import check, done, run, stage  # noqa: E402
from abxtest import remove  # noqa: E402

CASES = ["test_lifecycle.py", "test_limits.py", "test_pause_fs.py", "test_check.py"]

# In the guest (after hostlib.PRELUDE): one server on its own, each case,
# the suite file, what is left, then a cgroup namespace.
SCRIPT = r"""
$ABX_LOCAL_BIN check --envd $ABX_ENVD_BIN > /tmp/check.out 2>&1
echo "check exit $?"
cat /tmp/check.out
before=$(cat /sys/fs/cgroup/cgroup.subtree_control)
echo "subtree_control before: $before"
$ABX_LOCAL_BIN serve --listen 127.0.0.1:0 --state-dir /tmp/one --envd $ABX_ENVD_BIN \
  > /tmp/one.out 2> /tmp/one.err &
for i in $(seq 1 300); do grep -q '^ready' /tmp/one.out && break; sleep 0.2; done
grep -h "sandbox cgroups below\|outside any delegated" /tmp/one.err |
  sed 's/abx-local-[0-9-]*\.scope/abx-local-N.scope/'
echo "its cgroup: $(sed 's/abx-local-[0-9-]*\.scope/abx-local-N.scope/' /proc/$!/cgroup)"
kill -TERM $! && wait $!
# serve as a service whose unit says Delegate=yes (abx-local/DESIGN.md)
systemd-run --quiet --unit=abx-svc -p Delegate=yes -p StandardOutput=file:/tmp/svc.out \
  -p StandardError=file:/tmp/svc.err -E ABX_LOCAL_CACHE="$ABX_LOCAL_CACHE" \
  "$ABX_LOCAL_BIN" serve --listen 127.0.0.1:0 --state-dir /tmp/svc --envd "$ABX_ENVD_BIN"
for i in $(seq 1 300); do grep -q '^ready' /tmp/svc.out 2>/dev/null && break; sleep 0.2; done
grep -h "sandbox cgroups below\|outside any delegated" /tmp/svc.err
systemctl stop abx-svc
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
    $ABX_LOCAL_BIN check --envd $ABX_ENVD_BIN | grep cgroups &&
    timeout 900 python3 $T/test_limits.py"' > /tmp/ns.log 2>&1
echo "case ns-limits exit $? ($(tail -n 1 /tmp/ns.log))"
grep -E '^FAIL|^0::|cgroup /sys|cgroups ' /tmp/ns.log | head -n 20
"""


def main():
    kind, build, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    stage_dir = tempfile.mkdtemp(prefix="abx-hosts-local-")
    try:
        stage(kind, build, src, stage_dir)
        out = run(kind, src, stage_dir, SCRIPT.replace("CASES", " ".join(CASES)))
        for t in CASES:
            check(("case %s exit 0 " % t) in out, "%s: local %s passes in the guest" % (kind, t))
        check("check exit 0" in out and "serve can start here" in out and
              "sandbox groups would go in a systemd scope of its own" in out,
              "%s: abx-local check: nothing blocks, groups in a scope of its own" % kind)
        check("sandbox groups would go in this cgroup namespace's root" in out,
              "%s: abx-local check in a cgroup namespace: its root" % kind)
        check("case leftovers exit 0 " in out,
              "%s: a killed server's leftovers are removed, across scopes" % kind)
        check("suite exit 0 " in out and " passed" in out,
              "%s: abx-e2e --local tests-lua/test_02_lifecycle.lua is green in the guest" % kind)
        check("below /sys/fs/cgroup/system.slice/abx-local-N.scope (a delegated scope)"
              in out and "its cgroup: 0::/system.slice/abx-local-N.scope/init" in out,
              "%s: a server runs in a delegated scope of its own, in its leaf" % kind)
        check("below /sys/fs/cgroup/system.slice/abx-svc.service (a delegated cgroup)" in out,
              "%s: a service with Delegate=yes keeps the server in its own cgroup" % kind)
        check("subtree_control unchanged" in out,
              "%s: the root's subtree_control is as systemd left it" % kind)
        check("groups left: []" in out, "%s: no abx-local group is left" % kind)
        check("case ns-limits exit 0 " in out and "\n0::/\n" in out,
              "%s: in a cgroup namespace of its own, local.limits passes" % kind)
    finally:
        remove(stage_dir)
    done()


if __name__ == "__main__":
    main()
