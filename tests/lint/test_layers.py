#!/usr/bin/env python3
"""scripts/layers.py can fail: a fake build tree with one object per group,
a cycle between two codec files and a codec file reaching up into the
client, must be reported as exactly those two problems (exit 1); the same
tree without them passes (exit 0)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from abxtest import check, done, eq  # noqa: E402
import layers  # noqa: E402


def obj(build, folder, name, src):
    d = os.path.join(build, folder)
    os.makedirs(d, exist_ok=True)
    c = os.path.join(d, name + ".c")
    with open(c, "w") as f:
        f.write(src)
    subprocess.run(["cc", "-c", c, "-o", os.path.join(d, name + ".c.o")],
                   check=True)
    os.unlink(c)


def tree(build, bad):
    for group, (folder, _) in layers.LAYERS.items():
        g = group.replace("-", "_").replace("/", "_")
        obj(build, folder, "f_" + g, f"int {g}_fn(void) {{ return 1; }}\n")
    codec = layers.LAYERS["codec"][0]
    up = "int client_fn(void);\n" if bad else ""
    call_b = "b_fn()" if bad else "0"
    call_up = " + client_fn()" if bad else ""
    obj(build, codec, "a", f"int b_fn(void);\n{up}int a_fn(void) "
        f"{{ return {call_b}{call_up}; }}\n")
    obj(build, codec, "b", "int a_fn(void);\nint b_fn(void) "
        "{ return a_fn(); }\n")


def run(build):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/layers.py"),
                        build], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tree(os.path.join(tmp, "bad"), True)
        rc, out = run(os.path.join(tmp, "bad"))
        for w in ["cycle in codec: a <-> b",
                  "codec/a uses client_fn from client, which codec may not use",
                  "2 problems"]:
            check(w in out, "bad tree reports %r" % w)
        eq(rc, 1, "bad tree: exit status")
        tree(os.path.join(tmp, "good"), False)
        rc, out = run(os.path.join(tmp, "good"))
        check(rc == 0 and "0 problems" in out, "clean tree passes: " + out.strip())
        rc, out = run(os.path.join(tmp, "none"))
        check(rc == 2 and "build first" in out, "no build: exit 2 saying so")
    done()


if __name__ == "__main__":
    main()
