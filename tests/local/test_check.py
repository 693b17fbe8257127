"""`abx-local check [--json]`: what the host offers serve, changing
nothing. As root here: every fact, no problem, exit 0, the text and the
JSON agreeing. As an unprivileged user without sudo: exit 1, the problem
names root and sudo and its fix the cloud platform. Without bubblewrap,
or runsc with the gvisor runtime (serve's options): each is a problem
naming its package. A bad argument: exit 2. Nothing is left in /tmp."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN  # noqa: E402
from abxtest import check, done, tail  # noqa: E402

KEYS = ("user", "userNamespaces", "cgroup", "bubblewrap", "overlay", "gvisor", "pidfd", "envd",
        "container", "ok", "problems", "lines")


def run(args, env=None, user=None):
    cmd = [LOCAL_BIN, "check"] + args
    if user is not None:
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})))


def as_json(p, what):
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        check(False, "%s: --json prints one JSON object (%s)" % (what, tail(p.stdout + p.stderr)))
        return {}
    check(all(k in doc for k in KEYS), "%s: the JSON has %s (%s)" % (what, ", ".join(KEYS),
                                                                    sorted(doc)))
    return doc


def problems(doc):
    return " | ".join("%s FIX: %s" % (x.get("problem"), x.get("fix"))
                      for x in doc.get("problems", []))


def main():
    before = set(glob.glob("/tmp/abx-local-check.*"))
    p = run([])
    check(p.returncode == 0 and "abx-local serve can start here" in p.stdout,
          "as root: exit 0, serve can start here (%s)" % tail(p.stdout + p.stderr))
    for fact in ("user ", "user namespaces", "cgroups ", "bubblewrap", "overlayfs",
                 "gVisor (runsc)", "pidfd_open", "abx-envd", "container"):
        check(("\n  %s" % fact) in p.stdout, "the text names %s" % fact.strip())
    doc = as_json(run(["--json"]), "as root")
    check(doc.get("ok") is True and doc.get("problems") == [] and
          doc.get("user", {}).get("root") is True,
          "as root: ok, no problem (%s)" % problems(doc))
    check(doc.get("bubblewrap", {}).get("sandboxStarts") is True and
          doc.get("overlay", {}).get("mounted") is True,
          "as root: a test sandbox started and an overlay mounted")
    check(doc.get("cgroup", {}).get("version") in (1, 2), "the cgroup version is told")

    p = run([], user=65534)
    check(p.returncode == 1, "as uid 65534 without sudo: exit 1 (%d)" % p.returncode)
    check("not root" in p.stdout and "FIX:" in p.stdout and "cloud platform" in p.stdout,
          "the problem names root and the fix a cloud platform (%s)" % tail(p.stdout, 800))
    doc = as_json(run(["--json"], user=65534), "as uid 65534")
    check(doc.get("user", {}).get("root") is False and
          doc.get("user", {}).get("sudo") in ("absent", "asks a password"),
          "as uid 65534: not root, sudo told (%s)" % doc.get("user"))

    doc = as_json(run(["--json", "--bwrap", "/nonexistent/bwrap", "--runsc",
                       "/nonexistent/runsc", "--runtime", "gvisor"]), "no bwrap, no runsc")
    text = problems(doc)
    check(doc.get("ok") is False and "bubblewrap not found" in text and
          "install bubblewrap" in text, "no bwrap: a problem naming its package (%s)" % text)
    check("runsc is not installed" in text and "RUNTIME=gvisor" in text,
          "runtime gvisor without runsc: a problem naming how to install it (%s)" % text)
    p = run(["--bwrap", "/nonexistent/bwrap"])
    check(p.returncode == 1 and "cannot start here: 1 problem" in p.stdout,
          "the text counts the problem, exit 1 (%s)" % tail(p.stdout, 600))

    p = run(["--bogus"])
    check(p.returncode == 2 and "unknown option --bogus" in p.stderr,
          "a bad option: exit 2, named (%d, %s)" % (p.returncode, tail(p.stderr, 300)))
    p = run(["--help"])
    check(p.returncode == 0 and "usage: abx-local check" in p.stdout, "--help")
    check(set(glob.glob("/tmp/abx-local-check.*")) == before, "nothing left in /tmp")
    done()


if __name__ == "__main__":
    main()
