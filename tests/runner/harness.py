#!/usr/bin/env python3
"""Runner self-tests: runs the built abx-e2e on the Lua files in cases/ and
checks what it reports (outcome per node id via --json, exit code, summary
line, JUnit validity, fixture logs, masking).

usage: harness.py --bin PATH/abx-e2e SCENARIO   (or "all")
       harness.py --list       the scenario names, one a line, sorted (the
                               ctest cases runner.NAME, read by CMakeLists.txt)

The scenarios, sc_NAME(c) each, live by concern beside this file:
  runner_outcomes.py  outcomes, fixtures, skips, capabilities, known issues,
                      the DSL, collection errors
  runner_select.py    -k/-m, -x, --lf/--ff, --shard, longest first, --dist
  runner_process.py   workers, pid 1, timeouts, crashes, watchdog, signals
  runner_cli.py       --help, sub-commands, exec, sandbox options, .env
  runner_reports.py   -rP, --reruns, JUnit, masking, cut lines
  runner_common.py    what they share: Ctx, SECRET, expect_outcomes, ...
A new sc_NAME in one of them is a new ctest case at the next cmake run.

Each scenario runs in a fresh temporary directory holding a copy of cases/,
so node ids read "cases/test_x.lua::name". Standard library only."""

import subprocess
import sys
import xml.etree.ElementTree as ET

# Each runner_* module imports runner_common first: it puts tests/lib on
# sys.path (abxtest).
import runner_cli
import runner_outcomes
import runner_process
import runner_reports
import runner_select
from abxtest import Fail, cli, run_scenarios
from runner_common import Ctx

MODULES = (runner_outcomes, runner_select, runner_process, runner_cli, runner_reports)


def registry(modules):
    """{NAME: sc_NAME} over the functions the modules define (not import);
    a name defined twice is an error."""
    out = {}
    for m in modules:
        for name, fn in vars(m).items():
            if name.startswith("sc_") and callable(fn) and fn.__module__ == m.__name__:
                if name[3:] in out:
                    raise SystemExit(f"harness.py: scenario {name[3:]} in {m.__name__} "
                                     f"and {out[name[3:]].__module__}")
                out[name[3:]] = fn
    return out


SCENARIOS = registry(MODULES)


def main(scenarios=None, ctx=None):
    """Runs one scenario by name, or "all"; shared by hostile.py. A failed
    scenario keeps its directory. --list prints the names instead."""
    scenarios = SCENARIOS if scenarios is None else scenarios
    ctx = Ctx if ctx is None else ctx
    if sys.argv[1:] == ["--list"]:
        print("\n".join(sorted(scenarios)))
        return 0
    a = cli(scenarios, extra_names=["all"])
    names = sorted(scenarios) if a.scenario == "all" else [a.scenario]

    def one(name):
        c = ctx(a.bin)
        try:
            scenarios[name](c)
        except BaseException:
            print(f"     (kept {c.dir})")
            raise
        c.cleanup()
    return run_scenarios(names, one, (Fail, AssertionError, subprocess.TimeoutExpired,
                                      ET.ParseError, KeyError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
