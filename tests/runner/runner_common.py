"""What harness.py's scenario modules (runner_*.py) and hostile.py share:
the scratch directory a scenario runs in (Ctx), the secrets the cases
plant, expect_outcomes, and the node-id prefixes of the common case files."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxtest import ALL_ABX, must, remove, run, scratch, scrubbed_env  # noqa: E402

SECRET = "e2b_" + "3f9a1c7e5b2d4086" * 2  # planted API key (fake)
RUNTIME_SECRET = "tok_" + "7" * 24


class Ctx:
    """A scratch directory holding a copy of this folder's `cases` (as
    cases/) where abx-e2e runs in self-test mode, its fixtures logging to
    fixtures.log; hostile.py's Ctx takes hostile/ instead."""
    cases = "cases"
    prefix = "abx-runner-"

    def __init__(self, binary):
        self.bin = binary
        self.dir = scratch(self.prefix, os.path.join(HERE, self.cases))
        self.log = os.path.join(self.dir, "fixtures.log")

    def env(self, extra=None):
        env = scrubbed_env(ALL_ABX, ABX_E2E_SELFTEST="1", ABX_SELFTEST_LOG=self.log,
                           NO_COLOR="1", CI="true")
        env.update(extra or {})
        return env

    def run(self, *args, env=None, timeout=120):
        return run([self.bin, *args], cwd=self.dir, env=self.env(env), timeout=timeout)

    def json_run(self, *args, env=None, name="report.json"):
        path = os.path.join(self.dir, name)
        if os.path.exists(path):
            os.unlink(path)
        p = self.run(*args, "--json", name, env=env)
        must(os.path.exists(path), "no JSON report written\n" + p.stdout + p.stderr)
        with open(path) as f:
            return p, json.load(f)

    def log_lines(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [l.rstrip("\n") for l in f]

    def cleanup(self):
        remove(self.dir)


def expect_outcomes(got, want):
    for nid, o in want.items():
        must(got.get(nid) == o, f"{nid}: expected {o}, got {got.get(nid)}")


F = "cases/test_fixtures.lua::"
O = "cases/test_outcomes.lua::"
T = "cases/test_timeouts.lua::"
