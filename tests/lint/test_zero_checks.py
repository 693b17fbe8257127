#!/usr/bin/env python3
"""Neither harness passes a test that checked nothing: a C test ending in
CHECK_DONE() with no check, a Python one calling done() with no check and
run_scenarios() with no scenario each exit 1 and say so; the same with one
passing check exit 0."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "lib")
sys.path.insert(0, LIB)
from abxtest import check, done, eq  # noqa: E402

C = """#include "check.h"
int main(void)
{
%s
    return CHECK_DONE();
}
"""
PY = """import sys
sys.path.insert(0, %r)
from abxtest import check, done, run_scenarios
%s
"""


def c_case(tmp, body):
    src, exe = os.path.join(tmp, "t.c"), os.path.join(tmp, "t")
    with open(src, "w") as f:
        f.write(C % body)
    subprocess.run(["cc", "-I", LIB, "-o", exe, src], check=True)
    return subprocess.run([exe], capture_output=True, text=True)


def py_case(tmp, body):
    src = os.path.join(tmp, "t.py")
    with open(src, "w") as f:
        f.write(PY % (LIB, body))
    return subprocess.run([sys.executable, src], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory(prefix="abx-zero-checks-") as tmp:
        p = c_case(tmp, "")
        eq(p.returncode, 1, "C: CHECK_DONE() after no check fails")
        check("0 checks, 0 failed: no check ran" in p.stderr, "C: ... and says so: " + p.stderr)
        p = c_case(tmp, "    CHECK(1 + 1 == 2);")
        eq(p.returncode, 0, "C: one passing check passes")
        p = py_case(tmp, "done()")
        eq(p.returncode, 1, "Python: done() after no check fails")
        check("no check ran" in p.stdout and p.stdout.rstrip().endswith("0 passed, 1 failed"),
              "Python: ... says so, and its closing line counts a failure: " + p.stdout)
        p = py_case(tmp, "check(True, 'one')\ndone()")
        eq(p.returncode, 0, "Python: one passing check passes")
        p = py_case(tmp, "sys.exit(run_scenarios([], lambda n: None))")
        eq(p.returncode, 1, "Python: run_scenarios() with no scenario fails")
        p = py_case(tmp, "sys.exit(run_scenarios(['a'], lambda n: None))")
        eq(p.returncode, 0, "Python: one scenario that passes passes")
    done()


if __name__ == "__main__":
    main()
