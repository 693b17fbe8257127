#!/usr/bin/env python3
"""hosts.container.KIND: abx-local and abx-e2e in an unprivileged container
(podman from Debian in KIND's guest; a container whose root is the
guest's own, under an overlay, so no image is pulled):

  - with podman's default flags abx-local refuses at start, exit 1, with
    the reason and the flag that fixes it (--privileged): a default
    container has no user namespaces for bubblewrap and read-only cgroups;
  - with --privileged, local.limits passes in it: the sandboxes' groups
    below the container's own cgroup (its cgroup namespace's root), every
    process of which abx-local moved into a leaf first;
  - abx-e2e in a default container (sharing the guest's network, to reach
    it) against abx-local on the guest: tests-lua/test_02_lifecycle.lua
    green;
  - no container is left.

usage: test_container.py KIND BUILD SRC"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hostlib import check, done, run, stage  # noqa: E402
from abxtest import remove  # noqa: E402

# In the guest (after hostlib.PRELUDE). --rootfs comes last: its path is
# the first argument after the options.
SCRIPT = r"""
echo "podman $(podman --version | cut -d' ' -f3), cgroup manager $(podman info --format '{{.Host.CgroupManager}}')"
serve="/mnt/in/bin/abx-local serve --listen 127.0.0.1:0 --state-dir /tmp/s --envd /mnt/in/bin/abx-envd"
timeout 300 podman run --rm -v /mnt/in:/mnt/in -e ABX_LOCAL_CACHE --rootfs /:O $serve \
  < /dev/null > /tmp/default.log 2>&1
echo "default flags: exit $?"
grep -v '^export' /tmp/default.log | head -n 5
timeout 900 podman run --rm --privileged -v /mnt/in:/mnt/in -e ABX_LOCAL_CACHE -e ABX_LOCAL_BIN \
  -e ABX_ENVD_BIN --rootfs /:O python3 $T/test_limits.py < /dev/null > /tmp/priv.log 2>&1
echo "privileged limits: exit $? ($(tail -n 1 /tmp/priv.log))"
grep -E '^FAIL|^ok   cgroup ' /tmp/priv.log | head -n 20
/mnt/in/bin/abx-local serve --listen 127.0.0.1:0 --state-dir /tmp/g --envd /mnt/in/bin/abx-envd \
  > /tmp/g.out 2> /tmp/g.err &
g=$!
for i in $(seq 1 300); do grep -q '^ready' /tmp/g.out && break; sleep 0.2; done
grep '^export' /tmp/g.out > /tmp/g.env && . /tmp/g.env
envs=$(sed -n 's/^export \([A-Z0-9_]*\)=.*/-e \1/p' /tmp/g.env | tr '\n' ' ')
cd /mnt/in/src
timeout 900 podman run --rm --network host -v /mnt/in:/mnt/in $envs -w /mnt/in/src --rootfs /:O \
  /mnt/in/bin/abx-e2e -q tests-lua/test_02_lifecycle.lua < /dev/null > /tmp/e2e.log 2>&1
echo "e2e in a container: exit $? ($(tail -n 1 /tmp/e2e.log))"
grep -E '^(FAILED|ERROR) ' /tmp/e2e.log | head -n 20
kill -TERM $g && wait $g
echo "containers left: $(podman ps -a -q | wc -l)"
"""


def main():
    kind, build, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    stage_dir = tempfile.mkdtemp(prefix="abx-hosts-container-")
    try:
        stage(kind, build, src, stage_dir)
        out = run(kind, src, stage_dir, SCRIPT)
        check("default flags: exit 1" in out and "cannot run sandboxes here" in out and
              "start that container with --privileged" in out,
              "%s: with default flags abx-local refuses, naming the reason and --privileged"
              % kind)
        check("privileged limits: exit 0 " in out and "ok   cgroup /sys/fs/cgroup/srv-" in out,
              "%s: with --privileged local.limits passes, the groups below the container's "
              "own cgroup" % kind)
        check("e2e in a container: exit 0 " in out and " passed" in out,
              "%s: abx-e2e in a default container against the guest's abx-local is green"
              % kind)
        check("containers left: 0" in out, "%s: no container is left" % kind)
    finally:
        remove(stage_dir)
    done()


if __name__ == "__main__":
    main()
