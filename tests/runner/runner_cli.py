"""harness.py's scenarios on the command line: --help and --version,
sub-commands and their options, exec, the sandbox options, .env."""

import json
import os
import re
import shutil

from runner_common import SECRET, O  # first: puts tests/lib on sys.path
from abxtest import must, outcomes


def sc_cli(c):
    p = c.run("--help")
    must(p.returncode == 0, "help exit")
    for opt in ["-k", "-m", "--lf", "--ff", "--shard", "--collect-only", "--list", "-x", "--maxfail",
                "--timeout", "-n", "-s", "-v", "-q", "-r", "--durations", "--junitxml", "--json",
                "--evidence", "--version", "exec", "--help", "--color", "--lfnf",
                "--last-failed-no-failures", "--reruns", "--reruns-delay", "--fail-on-flaky"]:
        must(re.search(r"(^|[\s,])" + re.escape(opt) + r"([\s,=]|$)", p.stdout, re.M),
             "help lacks " + opt)
    must("P passed with" in p.stdout and "BUILD_NUMBER" in p.stdout, "help lacks -r P / cutting")
    p = c.run("--version")
    must(p.returncode == 0 and p.stdout.startswith("abx-e2e "), p.stdout)
    p, doc = c.json_run("cases/test_outcomes.lua", "--durations", "3", "-q")
    must("slowest 3 durations" in p.stdout, p.stdout)
    os.makedirs(os.path.join(c.dir, "tests-lua"))
    shutil.copy(os.path.join(c.dir, "cases", "test_crash.lua"), os.path.join(c.dir, "tests-lua", "test_x.lua"))
    with open(os.path.join(c.dir, "tests-lua", "test_x.lua"), "w") as f:
        f.write('local e2e = require "e2e"\ne2e.test("default discovery", function() end)\n')
    p, doc = c.json_run()
    must(outcomes(doc) == {"tests-lua/test_x.lua::default discovery": "passed"}, str(outcomes(doc)))
    must(p.returncode == 0, f"exit {p.returncode}")
    shutil.rmtree(os.path.join(c.dir, "tests-lua"))
    os.makedirs(os.path.join(c.dir, "tests-lua"))
    p = c.run()
    must(p.returncode == 5, f"no tests: exit {p.returncode}")


def sc_subcommands(c):
    """Every sub-command of the one option table alike: its options before
    or after the word, its own usage line and --help, exit 4 for a usage
    error naming the option; exec's options before the script, the rest
    the script's."""
    with open(os.path.join(c.dir, "args.lua"), "w") as f:
        f.write('print("args", ...)\n')
    fake = os.path.join(c.dir, "fake-profile.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"fake abx-local: profile=$ABX_LOCAL_PROFILE\" >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    for args in (["exec", "--local", "--profile", "fc", "args.lua"],
                 ["--local", "exec", "--profile=fc", "args.lua"],
                 ["--local", "--profile", "fc", "exec", "args.lua"]):
        p = c.run(*args, env={"ABX_LOCAL_BIN": fake})
        must(p.returncode == 3 and "profile=fc" in p.stderr and "cannot open" not in p.stderr,
             f"{args}: the options reach abx-local (exit {p.returncode}, {p.stderr!r})")
    # One default for every --local: fc (the cloud the product ships
    # against); ABX_LOCAL_PROFILE and --profile choose the other.
    for args, extra, want in ((["--local", "cases/test_outcomes.lua"], {}, "fc"),
                              (["exec", "--local", "args.lua"], {}, "fc"),
                              (["--local", "cases/test_outcomes.lua"],
                               {"ABX_LOCAL_PROFILE": "e2b"}, "e2b"),
                              (["--local", "--profile", "e2b", "cases/test_outcomes.lua"],
                               {"ABX_LOCAL_PROFILE": "fc"}, "e2b")):
        p = c.run(*args, env=dict(extra, ABX_LOCAL_BIN=fake))
        must(("profile=%s\n" % want) in p.stderr, f"{args} {extra}: profile {want} "
             f"reaches abx-local: {p.stderr!r}")
    # abx-local starts only when a test or a script will run: a wrong
    # path, a script that does not compile, a selection of nothing or a
    # listing never start it.
    with open(os.path.join(c.dir, "broken.lua"), "w") as f:
        f.write("print(\n")
    for args, code in ((["--local", "no-such-file.lua"], 4),
                       (["--local", "-k", "zzz_no_test", "cases/test_outcomes.lua"], 5),
                       (["--local", "--collect-only", "cases/test_outcomes.lua"], 0),
                       (["exec", "--local", "broken.lua"], 4),
                       (["exec", "--local", "no-such-script.lua"], 4)):
        p = c.run(*args, env={"ABX_LOCAL_BIN": fake})
        must(p.returncode == code and "fake abx-local" not in p.stderr,
             f"{args}: exit {p.returncode} (want {code}) without starting abx-local: "
             f"{p.stderr!r}")
    p = c.run("exec", "args.lua", "--bogus", "-k", "x")
    must(p.returncode == 0 and "args\t--bogus\t-k\tx" in p.stdout,
         f"after the script, its own arguments: {p.returncode} {p.stdout!r} {p.stderr!r}")
    p = c.run("exec", "--", "args.lua", "1")
    must(p.returncode == 0 and "args\t1" in p.stdout, f"exec -- SCRIPT: {p.stderr!r}")
    for args, usage, want in (
            (["exec", "--bogus", "args.lua"], "exec", "unrecognized option '--bogus'"),
            (["exec"], "exec", "exec needs a SCRIPT.lua"),
            (["exec", "--local", "--profile", "aws", "args.lua"], "exec",
             "--profile expects e2b or fc, got 'aws'"),
            (["repl", "--profile", "fc"], "repl", "--profile fc: needs --local"),
            (["repl", "extra"], "repl", "unexpected argument 'extra'"),
            (["doctor", "--bogus"], "doctor", "unrecognized option '--bogus'"),
            (["doctor", "--keep-failed"], "doctor", "unrecognized option"),
            (["cleanup", "--local"], "cleanup", "unrecognized option '--local'"),
            (["cleanup", "extra"], "cleanup", "unexpected argument 'extra'"),
            (["cleanup", "--run-id", "x", "--all-tagged"], "cleanup",
             "--run-id and --all-tagged exclude each other"),
            (["--bogus"], "[run]", "unrecognized option '--bogus'"),
            (["cases/test_outcomes.lua", "--maxfail", "x"], "[run]",
             "--maxfail expects a number, got 'x'"),
            (["--junitxml="], "[run]", "--junitxml expects a FILE"),
            (["--timeout"], "[run]", "--timeout expects seconds"),
            (["--local", "cleanup"], "cleanup", "unrecognized option '--local'"),
            (["--local", "merge", "a.json"], "merge", "unrecognized option '--local'"),
            (["merge"], "merge", "no SHARD.json given"),
            (["merge", "a.json", "--json"], "merge", "--json expects a FILE"),
            (["merge", "--bogus", "a.json"], "merge", "unrecognized option '--bogus'"),
            (["diff-records", "a"], "diff-records", "expects two folders of traces"),
            (["diff-records", "a", "b", "c"], "diff-records",
             "expects two folders of traces (abx-e2e --record DIR), got 3"),
            (["diff-records", "--html", "x", "a", "b"], "diff-records",
             "unrecognized option '--html'"),
            (["diff-records", "no-such-a", "no-such-b"], "diff-records",
             "cannot read the folder no-such-a")):
        p = c.run(*args)
        must(p.returncode == 4, f"{args}: exit {p.returncode} (want 4): {p.stderr!r}")
        first = (p.stderr.splitlines() or [""])[0]
        must(first.startswith("usage: abx-e2e " + usage),
             f"{args}: the usage line is {usage}'s: {first!r}")
        who = "abx-e2e" + ("" if usage == "[run]" else " " + usage)
        must((who + ": error: " + want) in p.stderr, f"{args}: names {want!r}: {p.stderr!r}")
    for sub, opts in (("exec", ["--local", "--profile", "--trace-http", "-h"]),
                      ("repl", ["--local", "--profile", "--trace-http", "-h"]),
                      ("doctor", ["--local", "--profile", "--json", "--trace-http", "-h"]),
                      ("merge", ["--junitxml", "--json", "--html", "-q", "-h"]),
                      ("diff-records", ["--json", "-q", "-h"])):
        p = c.run(sub, "--help")
        must(p.returncode == 0 and p.stdout.startswith("usage: abx-e2e " + sub),
             f"{sub} --help: {p.returncode} {p.stdout[:80]!r}")
        listed = re.findall(r"^  (-[-\w]+)", p.stdout, re.M)
        must(sorted(listed) == sorted(opts), f"{sub} --help lists {listed}, want {opts}")
    # Each sub-command's --help and its parser agree (both are the one
    # table): every option listed is taken by that sub-command (with a
    # sample of the value its help names, then --help: nothing runs), and
    # the run command's options no other sub-command lists are refused there.
    samples = {"N": "100", "S": "1", "MB": "1", "EXPR": "x", "FILE": "f", "DIR": "d",
               "TOPIC": "t", "K/N": "1/2", "N|auto": "1", "CHARS": "fE", "all|none": "all",
               "e2b|fc": "fc", "yes|no|auto": "no", "ID": "run-1"}
    modes = {"--dist": "load", "--trace": "on"}
    listed = {}
    for sub in ("run", "exec", "repl", "doctor", "cleanup", "merge", "diff-records"):
        head = [] if sub == "run" else [sub]
        p = c.run(*head, "--help")
        opts = {}
        for m in re.finditer(r"^  ((?:-[-\w=]+(?:, )?)+)(?: (\S+))?(?:  |\n)", p.stdout, re.M):
            for name in m.group(1).split(", "):
                opts[name] = m.group(2)
        must(len(opts) >= (40 if sub == "run" else 3), f"{sub} --help lists {sorted(opts)}")
        listed[sub] = opts
        for name, meta in opts.items():
            if name in ("-h", "--help", "-V", "--version"):
                continue
            value = [] if meta is None else [modes.get(name) or samples.get(meta, "x")]
            p = c.run(*head, name, *value, "--help")
            must(p.returncode == 0 and "usage: abx-e2e" in p.stdout,
                 f"{sub}: {name} {value} is taken (exit {p.returncode}: {p.stderr!r})")
    for sub in ("exec", "repl", "doctor", "cleanup", "merge", "diff-records"):
        for name in sorted(set(listed["run"]) - set(listed[sub]) - {"-V", "--version"}):
            p = c.run(sub, name, "x", "--help")
            must(p.returncode == 4 and "unrecognized option" in p.stderr,
                 f"{sub}: {name} (not in its --help) is refused: {p.returncode} {p.stderr!r}")
    # The variables: the run's --help lists each with its default, the
    # doctor reports the same set, and a bad value is a usage error
    # naming the variable and where it came from.
    p = c.run("--help")
    env = p.stdout.split("\nenvironment", 1)[-1]
    helpvars = re.findall(r"^  ([A-Z][A-Z0-9_]+)", env, re.M)
    must(len(helpvars) >= 12 and "E2E_SERVER_PORT" in helpvars, f"--help variables: {helpvars}")
    blocks = re.split(r"^  (?=[A-Z])", env.split("\n\n")[0], flags=re.M)[1:]
    defaults = {}
    for b in blocks:
        m = re.search(r"\(default ([^)]+)\)", b)
        if m:
            defaults[b.split()[0]] = m.group(1)
    must(defaults.get("E2E_SERVER_PORT") == "8080" and defaults.get("E2E_SHORT_TTL") == "20",
         f"--help defaults: {defaults}")
    p = c.run("doctor", "--json")
    doc = json.loads(p.stdout)
    must([k for k in doc["config"] if k != "runId"] == helpvars,
         f"doctor's variables {list(doc['config'])} are --help's {helpvars}")
    for var, default in defaults.items():
        if doc["config"][var]["source"] != "default" or doc["config"][var]["value"] != default:
            must(False, f"doctor: {var} {doc['config'][var]} (--help: default {default})")
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("E2E_SHORT_TTL=0\n")
    p = c.run("cases/test_outcomes.lua")
    must(p.returncode == 4 and "abx-e2e: error: E2E_SHORT_TTL expects seconds (1-3600), got '0' "
         "(from .env)" in p.stderr, f"a bad .env value: {p.returncode} {p.stderr!r}")
    os.unlink(os.path.join(c.dir, ".env"))
    # Options after the paths, as pytest takes them; -- ends them.
    p, doc = c.json_run("cases/test_outcomes.lua", "-k", "passes", "-q")
    must(outcomes(doc) and all("passes" in k for k in outcomes(doc)),
         f"options after a path: {outcomes(doc)} {p.stderr!r}")
    p = c.run("--", "-q")
    must(p.returncode == 4 and "-q" in p.stderr and "unrecognized" not in p.stderr,
         f"after --, -q is a path: {p.returncode} {p.stderr!r}")


def sc_exec(c):
    script = os.path.join(c.dir, "script.lua")
    with open(script, "w") as f:
        f.write('local e2e = require "e2e"\nprint("args", ...)\nprint("key", os.getenv("ABX_SANDBOX_API_KEY"))\n'
                'e2e.expect(1):eq(1)\nif arg[1] == "fail" then error("boom") end\nos.exit(tonumber(arg[2] or 0))\n')
    p = c.run("exec", "script.lua", "ok", "3", env={"ABX_SANDBOX_API_KEY": SECRET})
    must(p.returncode == 3, f"exit {p.returncode} {p.stderr}")
    must("args\tok\t3" in p.stdout, p.stdout)
    must(SECRET not in p.stdout and "key\t[MASKED]" in p.stdout, "exec output masked")
    p = c.run("exec", "script.lua", "fail")
    must(p.returncode == 1 and "boom" in p.stderr, f"{p.returncode} {p.stderr}")


def sc_sandbox_cli(c):
    """The sandbox options without a platform: --help names them, cleanup
    refuses bad usage (exit 4), --local fails clearly when abx-local is
    missing, and bad knob values are usage errors naming the variable."""
    p = c.run("--help")
    for opt in ["--local", "--profile", "--keep-failed", "--trace-http", "cleanup", "E2E_SANDBOX_TTL",
                "E2E_SERVER_TEMPLATE", "E2E_SERVER_PORT", "E2E_SHORT_TTL"]:
        must(re.search(r"(^|[\s,(])" + re.escape(opt) + r"([\s,=)]|$)", p.stdout, re.M),
             "help lacks " + opt)
    for args, want in [(["cleanup", "--bogus"], "unrecognized option '--bogus'"),
                       (["cleanup", "--older-than", "-3"], "--older-than"),
                       (["cleanup", "--run-id"], "--run-id expects an ID"),
                       (["cleanup", "--run-id", "a b"], "not a run id"),
                       (["cleanup", "--all-tagged", "--run-id", "x"], "exclude each other"),
                       (["cleanup"], "ABX_SANDBOX_API_KEY")]:
        p = c.run(*args)
        must(p.returncode == 4, f"{args}: exit {p.returncode} (want 4)")
        must(want in p.stderr, f"{args}: stderr lacks {want!r}: {p.stderr}")
    for args, want in [(["--local", "--profile", "aws", "cases/test_outcomes.lua"],
                        "--profile expects e2b or fc, got 'aws'"),
                       (["--profile", "fc", "cases/test_outcomes.lua"], "needs --local"),
                       (["--local", "--profile"], "--profile expects e2b or fc")]:
        p = c.run(*args)
        must(p.returncode == 4 and want in p.stderr, f"{args}: exit {p.returncode}, {p.stderr!r}")
    # The profile reaches abx-local as ABX_LOCAL_PROFILE.
    fake = os.path.join(c.dir, "fake-profile.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho \"fake abx-local: profile=$ABX_LOCAL_PROFILE\" >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    p = c.run("--local", "--profile=fc", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": fake})
    must(p.returncode == 3 and "profile=fc" in p.stderr, "--profile=fc reaches abx-local: " + p.stderr)
    p = c.run("cleanup", "--help")
    must(p.returncode == 0 and "--yes" in p.stdout and "--older-than" in p.stdout,
         "cleanup --help")
    p = c.run("--local", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": "/nonexistent"})
    must(p.returncode == 3, f"--local without abx-local: exit {p.returncode} (want 3)")
    must("ABX_LOCAL_BIN=/nonexistent is not an executable file" in p.stderr,
         "--local names the missing binary: " + p.stderr)
    fake = os.path.join(c.dir, "fake-local.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'fake abx-local: cannot bind' >&2\nexit 7\n")
    os.chmod(fake, 0o755)
    p = c.run("--local", "cases/test_outcomes.lua", env={"ABX_LOCAL_BIN": fake})
    must(p.returncode == 3 and "before it was ready" in p.stderr and
         "cannot bind" in p.stderr, "--local shows why abx-local failed: " + p.stderr)
    for var, val in [("E2E_SANDBOX_TTL", "ten"), ("E2E_SERVER_PORT", "70000"),
                     ("E2E_SERVER_TEMPLATE", "two words"), ("E2E_RUN_ID", "../up"),
                     ("E2E_SHORT_TTL", "ten"), ("E2E_SHORT_TTL", "0"),
                     ("E2E_SHORT_TTL", "3601")]:
        p = c.run("cases/test_outcomes.lua", env={var: val})
        must(p.returncode == 4 and var in p.stderr, f"{var}={val}: exit {p.returncode}, "
             f"stderr {p.stderr!r}")
    # The range's ends are accepted (1..3600).
    for val in ["1", "3600"]:
        p = c.run("cases/test_outcomes.lua", env={"E2E_SHORT_TTL": val})
        must(p.returncode != 4 and "E2E_SHORT_TTL" not in p.stderr,
             f"E2E_SHORT_TTL={val}: exit {p.returncode}, stderr {p.stderr!r}")
    p = c.run("cases/test_outcomes.lua::needs platform",
              env={"E2B_API_KEY": SECRET, "ABX_SANDBOX_BASE_URL": "ftp://nowhere"})
    must(p.returncode == 4 and "ftp://nowhere" in p.stderr and "http" in p.stderr,
         f"a bad base URL is a usage error: exit {p.returncode}, {p.stderr!r}")
    must(SECRET not in p.stdout + p.stderr, "the key is never printed")


def sc_dotenv(c):
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("# local settings\nexport ABX_SANDBOX_API_KEY=\"%s\"  # key\n" % SECRET)
    p, doc = c.json_run("cases/test_outcomes.lua::needs platform")
    must(outcomes(doc) == {O + "needs platform": "passed"}, ".env key not used: " + str(outcomes(doc)))
    with open(os.path.join(c.dir, ".env"), "w") as f:
        f.write("GOOD=1\nthis line is broken\n")
    p = c.run("cases/test_outcomes.lua")
    must(p.returncode == 4, f"malformed .env: exit {p.returncode}")
    must(".env:2" in p.stderr, "malformed line named by file:line: " + p.stderr)
