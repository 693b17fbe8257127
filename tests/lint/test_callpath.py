#!/usr/bin/env python3
"""scripts/callpath.py can fail: a fake tree where a binding's file calls a
helper in another file that calls back into the first must be reported as
a return (exit 1); without the call back it passes (exit 0), and the
counts are the calls made."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import check, done, eq  # noqa: E402

SANDBOX = """int abx_h(int x);
static int local(int x) { return x * 2; }
int abx_back(int x) { return x + 1; }
int l_create(int x) { return abx_h(local(x)); }
"""


def helper(bad):
    call = "abx_back(x)" if bad else "x"
    return "int abx_back(int x);\nint abx_h(int x) { return %s + 3; }\n" % call


def run(tmp, bad):
    src = os.path.join(tmp, "bindings", "sdk")
    os.makedirs(src, exist_ok=True)
    files = {"lua_sandbox.c": SANDBOX, "lua_util.c": helper(bad)}
    cmds = []
    for name, text in files.items():
        with open(os.path.join(src, name), "w") as f:
            f.write(text)
        cmds.append({"directory": tmp, "file": os.path.join(src, name),
                     "command": "cc -O0 -c %s -o %s.o" % (os.path.join(src, name), name)})
    build = os.path.join(tmp, "build")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(cmds, f)
    env = dict(os.environ, ABX_CALLPATH_ROOT=tmp)
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "callpath.py"),
                           build, "l_create"], env=env, capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory(prefix="abx-callpath-test-") as tmp:
        p = run(tmp, bad=True)
        eq(p.returncode, 1, "a call back into the file it left fails: " + p.stdout + p.stderr)
        check("1 returns" in p.stdout and "problem: l_create (bindings/sdk/lua_sandbox.c) -> "
              "abx_h (bindings/sdk/lua_util.c) leads back into bindings/sdk/lua_sandbox.c"
              in p.stdout,
              "the return is named: " + p.stdout)
        p = run(tmp, bad=False)
        eq(p.returncode, 0, "no call back: passes: " + p.stdout + p.stderr)
        check("l_create (bindings/sdk/lua_sandbox.c): 1 stays, 1 moves, 0 returns" in p.stdout,
              "the calls are counted: " + p.stdout)
    done()


if __name__ == "__main__":
    main()
