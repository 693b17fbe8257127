"""What the hosts.* cases share: this build (or one made for the kind's
Debian release) and the tests, templates and template roots staged for a
guest, a script run in it, and what came back (tests/hosts/guest.py)."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from abxtest import check, done, write_file  # noqa: E402
from guest import KINDS  # noqa: E402

CACHE = os.environ.get("ABX_LOCAL_CACHE", "/var/cache/abx-local")
BINARIES = ("abx-local/server/abx-local", "abx-local/envd/abx-envd", "host/abx-e2e")

# Before each script: the source tree's templates where the binaries look
# for them (the path compiled in), the binaries and the roots' cache.
PRELUDE = r"""
mkdir -p "$(dirname "$SRC")" && ln -s /mnt/in/src "$SRC"
export ABX_LOCAL_BIN=/mnt/in/bin/abx-local ABX_ENVD_BIN=/mnt/in/bin/abx-envd
export ABX_LOCAL_CACHE=/mnt/in/cache PYTHONDONTWRITEBYTECODE=1
export T=/mnt/in/src/tests/local
"""


def copy_source(src, dest):
    """The files git knows of in src (tracked, or untracked and not
    ignored) into dest: a fresh clone's content with this tree's changes,
    no build folder."""
    p = subprocess.run(["git", "-C", src, "ls-files", "-z", "-co", "--exclude-standard"],
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("%s: not a git work tree (%s)" % (
            src, p.stderr.decode(errors="replace").strip()))
    for rel in p.stdout.decode().split("\0"):
        if not rel or not os.path.lexists(os.path.join(src, rel)):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dest, rel), follow_symlinks=False)


def this_suite():
    with open("/etc/os-release") as f:
        for line in f:
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip()
    return ""


def stage(kind, build, src, stage_dir):
    """Fills stage_dir with bin/ (BUILD's binaries, or a build for kind's
    release: native.py), src/ (tests, tests-lua, the templates)."""
    if KINDS[kind]["suite"] != this_suite():
        build = os.path.join(stage_dir, "native")
        p = subprocess.run([sys.executable, os.path.join(HERE, "native.py"), kind, src, build],
                           capture_output=True, text=True, timeout=3600)
        if not check(p.returncode == 0, "%s: abx-local, abx-envd and abx-e2e built for it (%s)"
                     % (kind, p.stderr[-2000:])):
            done()
    os.makedirs(os.path.join(stage_dir, "bin"))
    for b in BINARIES:
        subprocess.run(["cp", "-a", os.path.join(build, b), os.path.join(stage_dir, "bin")],
                       check=True)
    os.makedirs(os.path.join(stage_dir, "src", "abx-local"))
    for d in ("tests", "tests-lua"):
        subprocess.run(["cp", "-a", os.path.join(src, d), os.path.join(stage_dir, "src", d)],
                       check=True)
    subprocess.run(["cp", "-a", os.path.join(src, "abx-local", "templates"),
                    os.path.join(stage_dir, "src", "abx-local", "templates")], check=True)


def run(kind, src, stage_dir, script):
    """Runs PRELUDE + script in kind's guest with what stage() put in
    stage_dir: the guest's output, printed, and guest.py's exit status."""
    write_file(os.path.join(stage_dir, "run.sh"), (PRELUDE + script).replace("$SRC", src))
    p = subprocess.run([sys.executable, os.path.join(HERE, "guest.py"), "run", kind,
                        "--timeout", "3000", "--copy", os.path.join(stage_dir, "bin") + ":bin",
                        "--copy", os.path.join(stage_dir, "src") + ":src",
                        "--copy", os.path.join(CACHE, "rootfs") + ":cache/rootfs",
                        "--copy", stage_dir + ":stage", "--", "sh", "/mnt/in/stage/run.sh"],
                       capture_output=True, text=True, timeout=3600)
    print(p.stdout[-20000:])
    check(p.returncode == 0, "%s: the guest ran the script (exit %d: %s)" % (
        kind, p.returncode, p.stderr[-1500:]))
    return p.stdout
