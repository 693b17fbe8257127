#!/usr/bin/env python3
"""scripts/layers.py can fail: a fake build tree with one object per group,
a cycle between two codec files and a codec file reaching up into the
client, must be reported as exactly those two problems (exit 1); the same
tree without them passes (exit 0)."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
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
        g = group.replace("-", "_")
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
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        tree(os.path.join(tmp, "bad"), True)
        rc, out = run(os.path.join(tmp, "bad"))
        want = ["cycle in codec: a <-> b",
                "codec/a uses client_fn from client, which codec may not use",
                "2 problems"]
        for w in want:
            if w not in out:
                print(f"FAIL: missing {w!r} in:\n{out}")
                fails += 1
        if rc != 1:
            print(f"FAIL: exit {rc}, want 1")
            fails += 1
        tree(os.path.join(tmp, "good"), False)
        rc, out = run(os.path.join(tmp, "good"))
        if rc != 0 or "0 problems" not in out:
            print(f"FAIL: clean tree: exit {rc}:\n{out}")
            fails += 1
        rc, out = run(os.path.join(tmp, "none"))
        if rc != 2 or "build first" not in out:
            print(f"FAIL: missing build: exit {rc}:\n{out}")
            fails += 1
    print(f"{6 - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
