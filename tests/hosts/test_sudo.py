#!/usr/bin/env python3
"""hosts.sudo.KIND: `make e2e-local` as GitHub's runners run it, in a
guest of KIND (a developer's Debian: make e2e-local's packages and sudo,
tests/hosts/guest.py):

  - user `runner`, with passwordless sudo, in a copy of the source it owns
    (built beforehand on this machine at the same path: a build under
    software emulation takes too long), runs `make e2e-local
    ARGS=tests-lua/test_02_lifecycle.lua`: green, said in one line that
    abx-local runs through sudo, abx-local stopped cleanly by the SIGTERM
    sudo relays, no file in the copy that is not its own, nothing of
    abx-local left running or in /tmp;
  - user `nosudo`, without sudo, in a copy it owns: refused, naming root,
    sudo and the cloud platform; no file that is not its own.

usage: test_sudo.py KIND SRC   (the template roots: this machine's cache)"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from abxtest import check, done, remove, tail  # noqa: E402
from guest import KINDS, die  # noqa: E402
from hostlib import CACHE, copy_source  # noqa: E402

WHERE = "/srv/abx-e2e"   # the copy's path, here (bwrap) and in the guest

# As root in the guest: the users, then each run in a fresh copy it owns.
SCRIPT = r"""
useradd -m -s /bin/sh runner && useradd -m -s /bin/sh nosudo || exit 1
echo 'runner ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/runner && chmod 440 /etc/sudoers.d/runner
for u in runner nosudo; do
  rm -rf WHERE && cp -a /mnt/in/abx-e2e WHERE && chown -R "$u:$u" WHERE
  runuser -u "$u" -- env -C WHERE ABX_LOCAL_CACHE=/mnt/in/cache \
    timeout 2400 make e2e-local ARGS=tests-lua/test_02_lifecycle.lua > "/tmp/$u.log" 2>&1
  echo "$u exit $?"
  grep -E 'sudo|must run as root|cloud platform|passed|failed' "/tmp/$u.log" | tail -n 8
  echo "$u not its own: [$(find WHERE ! -user "$u" | head -n 5 | tr '\n' ' ')]"
  echo "$u abx-local left: [$(pgrep -a -f 'abx-local serve' | tr '\n' ' ')]"
  echo "$u tmp left: [$(ls -d /tmp/abx-e2e-local* 2>/dev/null | tr '\n' ' ')]"
  tail -n 30 "/tmp/$u.log" | sed "s/^/$u| /"
done
"""


def build_copy(src, top):
    """The source copied to top/abx-e2e and built there (make build-local)
    as it will be found in the guest: at WHERE."""
    copy = os.path.join(top, "abx-e2e")
    copy_source(src, copy)
    p = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--tmpfs", os.path.dirname(WHERE),
                        "--bind", copy, WHERE, "--chdir", WHERE, "--die-with-parent",
                        "make", "build-local"], capture_output=True, text=True, timeout=3000)
    if not check(p.returncode == 0, "the copy builds at %s (make build-local)" % WHERE):
        print(tail(p.stdout + p.stderr, 3000))
        done()


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS:
        die("usage: test_sudo.py KIND SRC (KIND: %s)" % ", ".join(sorted(KINDS)))
    kind, src = sys.argv[1], os.path.abspath(sys.argv[2])
    top = tempfile.mkdtemp(prefix="abx-hosts-sudo-", dir="/var/tmp")
    try:
        build_copy(src, top)
        with open(os.path.join(top, "run.sh"), "w") as f:
            f.write(SCRIPT.replace("WHERE", WHERE))
        os.makedirs(os.path.join(top, "stage"))
        shutil.move(os.path.join(top, "run.sh"), os.path.join(top, "stage", "run.sh"))
        p = subprocess.run([sys.executable, os.path.join(HERE, "guest.py"), "run", kind,
                            "--timeout", "3000",
                            "--copy", os.path.join(top, "abx-e2e") + ":abx-e2e",
                            "--copy", os.path.join(CACHE, "rootfs") + ":cache/rootfs",
                            "--copy", os.path.join(top, "stage") + ":stage",
                            "--", "sh", "/mnt/in/stage/run.sh"],
                           capture_output=True, text=True, timeout=3600)
        out = p.stdout
        print(out[-20000:])
        check(p.returncode == 0, "%s: the guest ran the script (exit %d: %s)" % (
            kind, p.returncode, p.stderr[-1500:]))
        run = "\n".join(ln for ln in out.splitlines() if ln.startswith("runner| "))
        check("runner exit 0" in out and re.search(r"=+ \d+ passed", run) is not None and
              " failed" not in run, "%s: runner (passwordless sudo) runs make e2e-local "
              "green" % kind)
        check("abx-local serve runs through passwordless sudo" in out,
              "%s: it says abx-local runs through sudo" % kind)
        check("did not stop cleanly" not in run,
              "%s: abx-local, under sudo, stopped cleanly on the runner's SIGTERM" % kind)
        for u in ("runner", "nosudo"):
            check("%s not its own: []" % u in out,
                  "%s: no file in %s's copy that is not its own" % (kind, u))
            check("%s abx-local left: []" % u in out and "%s tmp left: []" % u in out,
                  "%s: nothing of abx-local left after %s's run" % (kind, u))
        check("nosudo exit 0" not in out and "nosudo exit" in out,
              "%s: nosudo (no sudo) is refused" % kind)
        nos = "\n".join(ln for ln in out.splitlines() if ln.startswith("nosudo| "))
        check("must run as root" in nos and "sudo" in nos and "cloud platform" in nos,
              "%s: the refusal names root, sudo and a cloud platform" % kind)
    finally:
        remove(top)
    done()


if __name__ == "__main__":
    main()
