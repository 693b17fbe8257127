#!/usr/bin/env python3
"""Builds abx-local, abx-envd and abx-e2e for a host kind whose Debian
release is not this machine's (Debian 13's libraries are not Debian 12's:
a binary built here does not start there), at this machine's speed: in a
root of that release, made once with mmdebstrap and cached beside the
kinds' images, through bubblewrap (the source read-only at its own path,
so the templates folder compiled in is the same path in the guest).

usage: native.py KIND SRC OUT
       native.py KIND SRC --test LABEL

OUT gets a build folder's layout (abx-local/server/abx-local,
abx-local/envd/abx-envd, host/abx-e2e), what test_local.py takes.
--test builds everything with warnings as errors (CI's flags) and runs
the ctest cases labelled LABEL there (not the `hosts` ones: no guest in a
guest), with ctest's output; exits with ctest's status. The build
folders are kept in the cache: the next build is incremental. Needs root
(mmdebstrap, the cache) and bubblewrap."""
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from guest import CACHE, KINDS, deps_packages, die, need  # noqa: E402

# What the whole build and its `quick` cases need: `make test`'s packages
# but those no quick case uses (the template builders, gVisor).
FULL = [p for p in deps_packages("test") if p not in ("mmdebstrap", "umoci", "skopeo", "runsc")]
TARGETS = {"abx-local": "abx-local/server/abx-local", "abx-envd": "abx-local/envd/abx-envd",
           "abx-e2e": "host/abx-e2e"}


def build_root(kind, pkgs=None, name="native"):
    """The cached root of kind's release with pkgs (default FULL), named
    name-SUITE-HASH."""
    suite, pkgs = KINDS[kind]["suite"], pkgs or FULL
    h = hashlib.sha256((suite + "\0" + " ".join(pkgs)).encode()).hexdigest()[:16]
    final = os.path.join(CACHE, "%s-%s-%s" % (name, suite, h))
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(os.path.join(final, "root", "usr")):
            return final
        tmp = tempfile.mkdtemp(prefix=".native-", dir=CACHE)
        try:
            t0 = time.monotonic()
            p = subprocess.run(["mmdebstrap", "--variant=apt",
                                "--include=" + ",".join(pkgs),
                                suite, os.path.join(tmp, "root")],
                               capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                die("mmdebstrap of %s's build root failed (exit %d):\n%s" % (
                    suite, p.returncode, p.stderr[-3000:]))
            os.makedirs(os.path.join(tmp, "build"))
            os.makedirs(os.path.join(tmp, "build-all"))
            os.rename(tmp, final)
            for old in os.listdir(CACHE):   # older package lists' roots go
                if old.startswith("%s-%s-" % (name, suite)) and os.path.join(CACHE, old) != final:
                    shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
            print("native: %s's build root made in %.0f s" % (suite, time.monotonic() - t0),
                  file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def bwrap(top, src, build, script, timeout, extra=()):
    """script (sh) in top's root, the source read-only at its own path,
    build at /build, extra bwrap arguments; its CompletedProcess."""
    for d in (src.lstrip("/"), "build"):   # mount points: empty folders of the root
        os.makedirs(os.path.join(top, "root", d), exist_ok=True)
    return subprocess.run(["bwrap", "--ro-bind", os.path.join(top, "root"), "/",
                           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                           "--ro-bind", src, src, "--bind", os.path.join(top, build), "/build",
                           "--unshare-pid", "--die-with-parent", "--chdir", "/build",
                           "--setenv", "HOME", "/tmp", *extra, "sh", "-c", script],
                          capture_output=True, text=True, timeout=timeout)


def main():
    argv = sys.argv[1:]
    label = None
    if len(argv) == 4 and argv[2] == "--test":
        label = argv[3]
        argv = argv[:2] + [None]
    if len(argv) != 3 or argv[0] not in KINDS:
        die("usage: native.py KIND SRC OUT | native.py KIND SRC --test LABEL (KIND: %s)"
            % ", ".join(sorted(KINDS)))
    kind, src = argv[0], os.path.abspath(argv[1])
    if os.geteuid() != 0:
        die("needs root (mmdebstrap, the cache)")
    need("mmdebstrap", "bwrap")
    if not os.path.isfile(os.path.join(src, "CMakeLists.txt")):
        die("%s: not the project's source (no CMakeLists.txt)" % src)
    os.makedirs(CACHE, exist_ok=True)
    top = build_root(kind)
    with open(os.path.join(top, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # one build in a build folder at a time
        if label:
            p = bwrap(top, src, "build-all",
                      # -Werror: a build that succeeds has no warning
                      "cmake -S '%s' -B /build -DABX_WERROR=ON >/dev/null && "
                      "{ cmake --build /build -j2 > /tmp/build.log 2>&1 || "
                      "{ grep -E -A5 'error|warning' /tmp/build.log | tail -n 80; exit 1; }; } && "
                      "echo 'built with -Werror: no warning' && ctest --test-dir /build "
                      "-L '%s' -LE hosts -j2 --output-on-failure" % (src, label), 3600)
            sys.stdout.write(p.stdout[-30000:] + p.stderr[-5000:])
            return p.returncode
        p = bwrap(top, src, "build",
                  "cmake -S '%s' -B /build -DCMAKE_BUILD_TYPE=Release >/dev/null && "
                  "cmake --build /build -j2 --target %s" % (src, " ".join(TARGETS)), 1800)
        if p.returncode != 0:
            die("the %s build failed (exit %d):\n%s" % (kind, p.returncode,
                                                       (p.stdout + p.stderr)[-3000:]))
        out = os.path.abspath(argv[2])
        for rel in TARGETS.values():
            dest = os.path.join(out, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(os.path.join(top, "build", rel), dest)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
