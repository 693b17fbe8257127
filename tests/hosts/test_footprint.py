#!/usr/bin/env python3
"""The runner's footprint (issue: two footprints): in a root of KIND's
Debian release holding only `scripts/deps.sh build`'s packages (no sudo,
no abx-local libraries), a non-root user with a copy of the source
- runs `make build`: it installs nothing, builds abx-e2e and says
  abx-local was left out;
- runs `make e2e ARGS=tests-lua/test_02_lifecycle.lua` against an
  abx-local on this machine (the cloud platform it stands in for): green;
- runs `make e2e-local`: refused before building, naming the missing
  packages and the apt-get line to run as root.

usage: test_footprint.py KIND SRC   (ABX_LOCAL_BIN, ABX_ENVD_BIN: this build's)
Needs root (mmdebstrap, the cache) and bubblewrap."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from abxtest import check, done, summary_counts, tail  # noqa: E402
from abxlocal import Server  # noqa: E402
from guest import CACHE, KINDS, deps_packages, die  # noqa: E402
from hostlib import copy_source  # noqa: E402
import native  # noqa: E402

USER, HOME = 1000, "/home/user"


def check_or_show(cond, what, out):
    """check(), with out's tail in the line only when it failed."""
    return check(cond, what if cond else "%s (%s)" % (what, tail(out, 1500)))


def as_user(root, work, script, env, timeout):
    """script (sh) as uid USER (no capability) in root, work at HOME."""
    os.makedirs(os.path.join(root, HOME.lstrip("/")), exist_ok=True)
    args = ["bwrap", "--ro-bind", root, "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--bind", work, HOME, "--unshare-user", "--uid", str(USER),
            "--gid", str(USER), "--unshare-pid", "--die-with-parent", "--chdir", HOME + "/src",
            "--clearenv", "--setenv", "PATH", "/usr/sbin:/usr/bin:/sbin:/bin",
            "--setenv", "HOME", HOME]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return subprocess.run(args + ["sh", "-c", script], capture_output=True, text=True,
                          timeout=timeout)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS:
        die("usage: test_footprint.py KIND SRC (KIND: %s)" % ", ".join(sorted(KINDS)))
    kind, src = sys.argv[1], os.path.abspath(sys.argv[2])
    if os.geteuid() != 0:
        die("needs root (mmdebstrap, the cache)")
    top = native.build_root(kind, deps_packages("build"), name="runner")
    work = tempfile.mkdtemp(prefix=".footprint-", dir=CACHE)
    try:
        copy_source(src, os.path.join(work, "src"))
        root = os.path.join(top, "root")

        p = as_user(root, work, "id -u && make build 2>&1", {}, 1800)
        out = p.stdout + p.stderr
        check_or_show(p.returncode == 0 and out.startswith("%d\n" % USER),
                      "make build as uid %d with the build packages alone" % USER, out)
        check_or_show("deps:" not in out, "make build installed nothing", out)
        check("abx-local and its tests: not built" in out,
              "cmake said abx-local was left out, and why")
        built = os.path.join(work, "src", "build")
        check(os.access(os.path.join(built, "host", "abx-e2e"), os.X_OK),
              "build/host/abx-e2e built")
        check(not os.path.exists(os.path.join(built, "abx-local", "server", "abx-local")),
              "no abx-local in the build")

        with Server(["--data-listen", "127.0.0.1:0"]) as srv:
            p = as_user(root, work, "make e2e ARGS=tests-lua/test_02_lifecycle.lua 2>&1",
                        srv.vars(), 900)
        out = p.stdout + p.stderr
        lines = [ln.strip("= ") for ln in out.splitlines() if ln.startswith("==") and " in " in ln]
        counts = summary_counts(lines[-1]) if lines else {}
        check_or_show(p.returncode == 0 and counts.get("passed", 0) >= 10 and
                      not counts.get("failed") and not counts.get("error"),
                      "make e2e (test_02_lifecycle) green against a platform: %s"
                      % (lines[-1] if lines else "no summary"), out)

        p = as_user(root, work, "make e2e-local 2>&1", {}, 600)
        out = p.stdout + p.stderr
        check(p.returncode != 0, "make e2e-local refused without root or sudo")
        check_or_show("apt-get install -y" in out and "libmicrohttpd-dev" in out and
                      "no passwordless sudo" in out,
                      "the refusal names the packages and the apt-get line", out)
        check("Building C" not in out, "nothing built before the refusal")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
