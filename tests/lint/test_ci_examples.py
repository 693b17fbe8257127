#!/usr/bin/env python3
"""lint.ci_examples: the CI files of examples/ci/ (GitHub Actions, GitLab
CI) stay valid and stay true to abx-e2e:

  1. each parses as YAML (a syntax error names the file and line) and
     passes `yamllint -d relaxed`;
  2. their structure: a shard matrix whose size is the N of --shard K/N,
     the pipeline's E2E_RUN_ID defined once at the top and set by no job
     (every shard runs with it unchanged), credentials only from the CI's
     secrets and never printed, a janitor and a merge job that run
     whatever the shards did, the janitor running `abx-e2e cleanup
     --run-id "$E2E_RUN_ID" --yes` exactly once, no loop (ci_pipeline.py);
  3. every abx-e2e command line in a run:/script: block uses only options
     listed by the built binary's `abx-e2e [SUB] --help` (a bad one is
     reported with its file and line; a self-test plants one to prove it);
  4. the pipeline runs here, offline, through the real binary: each shard's
     script without credentials (exit 0, 1 or 5, its JSON, JUnit and HTML
     reports written), the merge script on those reports (no shard missing),
     the janitor script against a fake platform, which must be asked, by
     one cleanup, for exactly the one run id all the shards used (and no
     e2e_session: all sessions);
  5. the jobs that only download the binary install the packages of its
     shared libraries.

  test_ci_examples.py --bin ABX_E2E --src SRC [--github F] [--gitlab F]

--github/--gitlab check another file in place of examples/ci/'s."""
import argparse
import json
import os
import re
import shutil
import sys
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from abxtest import (ALL_ABX, FakeHandler, check, copy_suite, done, eq,  # noqa: E402
                     load_json, remove, run, scratch, scrubbed_env, serve_in_thread,
                     tail, write_file)
import ci_model as cm  # noqa: E402
from ci_pipeline import CREDS, GitHub, GitLab, check_one_run_id  # noqa: E402

BASE_ENV = scrubbed_env(ALL_ABX + ("GITHUB_", "GITLAB_", "CI_", "RUNNER_"), CI="true")
HELPS = {}


def help_opts(binary, sub):
    """{option: takes a value} of `abx-e2e [SUB] --help`, or a LintError
    saying why there is none (run in an empty directory: an unknown
    subcommand word must not start a run of the suite)."""
    if sub not in HELPS:
        cmd = [binary, "--help"] if sub == "run" else [binary, sub, "--help"]
        d = scratch("abx-ci-help-")
        try:
            p = run(cmd, cwd=d, env=BASE_ENV, timeout=60)
        finally:
            remove(d)
        first = (p.stdout.splitlines() or [""])[0]
        want = "usage: abx-e2e" + ("" if sub == "run" else " " + sub)
        if p.returncode == 0 and first.startswith(want):
            HELPS[sub] = cm.parse_help(p.stdout)
        else:
            HELPS[sub] = cm.LintError(
                "abx-e2e %s failed: exit %d, first line %r (want %r...)%s" % (
                    " ".join(cmd[1:]), p.returncode, first, want,
                    ("; stderr: " + tail(p.stderr, 300).strip()) if p.stderr.strip() else ""))
    return HELPS[sub]


def option_problems(path, text, root, binary):
    """(abx-e2e command lines found, problems: "FILE:LINE: ...")."""
    found, problems = [], []
    for body, line0 in cm.script_blocks(root):
        for line, args in cm.invocations(body, line0):
            sub, rest = cm.subcommand(args)
            found.append((line, sub, rest))
            opts = help_opts(binary, sub)
            if isinstance(opts, cm.LintError):
                problems.append("%s:%d: %s" % (path, line, opts))
                continue
            for bad in cm.unknown_options(rest, opts):
                problems.append("%s:%d: unknown option %s: `abx-e2e %s--help` does not "
                                "list it" % (path, cm.line_of(text, bad, line), bad,
                                             "" if sub == "run" else sub + " "))
    return found, problems


def check_options(path, text, root, binary):
    found, problems = option_problems(path, text, root, binary)
    check(found, "%s: has abx-e2e command lines (%d)" % (path, len(found)))
    for pr in problems:
        check(False, pr)
    subs = sorted({s for _, s, _ in found})
    check(not problems, "%s: every option of abx-e2e %s is in its --help" % (path, "/".join(subs)))
    return found


def selftest(path, text, found, binary):
    """A planted bogus option is reported with its line; a broken YAML
    line with the file and a line number."""
    line = next((ln for ln, sub, _ in found if sub == "run"), None)
    if not check(line, "%s: self-test: a shard command line to plant an option in" % path):
        return
    lines = text.split("\n")
    lines[line - 1] = lines[line - 1].replace("abx-e2e", "abx-e2e --no-such-option", 1)
    t, _, root = cm.parse("\n".join(lines), path)
    _, problems = option_problems(path, t, root, binary)
    want = "%s:%d: unknown option --no-such-option" % (path, line)
    check(any(p.startswith(want) for p in problems),
          "%s: self-test: a planted --no-such-option is caught (line %d)" % (path, line))
    lines = text.split("\n")
    lines.insert(2, "\tbroken: 1")  # a tab cannot start a YAML token
    try:
        cm.parse("\n".join(lines), path)
        check(False, "self-test: a YAML syntax error in %s is caught" % path)
    except cm.LintError as e:
        check(str(e).startswith("%s:3:" % path),
              "%s: self-test: a YAML syntax error names the file and line (%s)" % (path, e))


def yamllint(path):
    exe = shutil.which("yamllint")
    if not check(exe, "yamllint installed (Debian package yamllint, scripts/deps.sh)"):
        return
    p = run([exe, "-d", "relaxed", "-f", "parsable", path])
    print(p.stdout + p.stderr, end="")  # its warnings too
    check(p.returncode == 0, "%s: yamllint -d relaxed passes" % path)


def image_packages():
    """The packages every Debian image has: the Essential and required
    ones and what they depend on (installed here; the first installed
    alternative)."""
    p = run(["dpkg-query", "-W", "-f",
             "${Package}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\n"])
    deps, todo = {}, []
    for line in p.stdout.splitlines():
        name, essential, prio, d = line.split("\t")
        deps[name] = [alt for alt in ([re.split(r"[ :(]", a.strip())[0] for a in dep.split("|")]
                                      for dep in d.split(",") if dep.strip())]
        if essential == "yes" or prio == "required":
            todo.append(name)
    have = set()
    while todo:
        name = todo.pop()
        if name in have or name not in deps:
            continue
        have.add(name)
        todo += [next((a for a in alts if a in deps), alts[0]) for alts in deps[name]]
    return have


SANITIZER_RUNTIME = re.compile(r"lib(asan|ubsan|lsan|tsan|hwasan)\.so")


def needed_packages(binary):
    """{package: [its libraries]} of abx-e2e's NEEDED libraries, but those
    of the packages every Debian image has."""
    p = run(["readelf", "-d", binary])
    libs = [ln.split("[")[1].rstrip("]") for ln in p.stdout.splitlines() if "(NEEDED)" in ln]
    # A sanitizer build (make check-sanitize) also needs the sanitizers'
    # runtimes; the examples build the release binary (make build), which
    # does not.
    libs = [lib for lib in libs if not SANITIZER_RUNTIME.match(lib)]
    # The directory each is loaded from (x86_64-linux-gnu, not lib32).
    where = dict(re.findall(r"^\s*(\S+) => (\S+)", run(["ldd", binary]).stdout, re.M))
    base, out = image_packages(), {}
    for lib in libs:
        arch_dir = os.path.basename(os.path.dirname(where.get(lib, "")))
        owners = [ln.split(": ", 1) for ln in run(["dpkg", "-S", "*/" + lib]).stdout.splitlines()
                  if ": " in ln and not ln.startswith("diversion")]
        owner = next((o for o in owners if o[1].endswith("/%s/%s" % (arch_dir, lib))),
                     owners[0] if owners else None)
        pkg = owner[0].split(":")[0] if owner else None
        if check(pkg, "%s comes from a Debian package (%s)" % (lib, pkg)) and pkg not in base:
            out.setdefault(pkg, []).append(lib)
    return out


def this_release():
    with open("/etc/os-release") as f:
        return dict(ln.rstrip("\n").split("=", 1) for ln in f if "=" in ln).get(
            "VERSION_ID", "").strip('"')


def check_runtime(pl, needed):
    # The packages are this machine's names for abx-e2e's libraries: right
    # for the examples' image only when it is this machine's release
    # (Debian 13 renamed libcurl4 libcurl4t64).
    with open(pl.path) as f:
        images = set(re.findall(r"\bdebian:(\d+)", f.read()))
    if images and images != {this_release()}:
        print("note %s: its jobs run in debian:%s, this machine is Debian %s: their runtime "
              "packages are checked on Debian %s" % (pl.path, "/".join(sorted(images)),
                                                    this_release(), "/".join(sorted(images))))
        return
    for j, pkgs in pl.runtime_jobs().items():
        missing = {p: libs for p, libs in needed.items() if p not in pkgs}
        check(not missing, "%s: job %s installs the packages of abx-e2e's libraries "
              "(missing: %s)" % (pl.path, j, missing or "none"))


def check_no_leak(path, root):
    """No script line prints a credential or turns on shell tracing."""
    bad = []
    for body, line0 in cm.script_blocks(root):
        for n, ln in enumerate(body.split("\n"), line0):
            cred = any("$" + c in ln or "${" + c in ln for c in CREDS)
            if (cred and any(w in ln for w in ("echo", "printf", "cat "))) or \
                    "set -x" in ln or "bash -x" in ln:
                bad.append("%s:%d: %s" % (path, n, ln.strip()))
    check(not bad, "%s: no script prints a credential or traces (set -x) %s" % (path, bad))


class FakePlatform(FakeHandler):
    """Lists nothing; remembers the metadata filter of each listing."""
    filters = []

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        if u.path == "/v2/sandboxes":
            md = dict(urllib.parse.parse_qsl(dict(urllib.parse.parse_qsl(u.query))
                                             .get("metadata", "")))
            FakePlatform.filters.append(md)
            return self.reply(200, [])
        return self.reply(404, {"code": 404, "message": "no route"})


def sim_dir(src, binary):
    """A checkout as the CI jobs see it: tests-lua/ and build/host/abx-e2e,
    here a wrapper logging each command line before running the binary."""
    d = scratch("abx-ci-sim-")
    copy_suite(src, d)
    if os.path.exists(os.path.join(src, "KNOWN-ISSUES.md")):
        shutil.copy(os.path.join(src, "KNOWN-ISSUES.md"), d)
    log = os.path.join(d, "argv.log")
    write_file(os.path.join(d, "build", "host", "abx-e2e"),
               "#!%s\nimport json, os, sys\n"
               "with open(%r, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
               "os.execv(%r, [%r] + sys.argv[1:])\n" % (sys.executable, log, binary, binary),
               0o755)
    return d, log


def take_log(log):
    """The command lines logged since the last call."""
    try:
        with open(log) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    except OSError:
        lines = []
    open(log, "w").close()
    return [cm.subcommand(a) for a in lines]


def ran(procs, ok, what):
    good = bool(procs) and all(p.returncode in ok for p in procs)
    if not check(good, "%s: exit %s, one of %s" % (what, [p.returncode for p in procs], ok)):
        for p in procs:
            print(tail(p.stdout, 2500) + tail(p.stderr, 1500))
    return good


def simulate(pl, src, binary):
    """The pipeline, offline: shards (no credentials), merge, janitor."""
    if not (pl.shard_job and pl.shards and pl.reports and pl.janitors):
        check(False, "%s: pipeline not simulated (jobs missing, see above)" % pl.path)
        return
    work, log = sim_dir(src, binary)
    try:
        run_ids = []
        for k in pl.shards:
            what = "%s: shard %d/%d" % (pl.path, k, len(pl.shards))
            ok = ran(pl.run_job(pl.shard_job, work, BASE_ENV, shard=k), (0, 1, 5), what)
            logged = take_log(log)
            for _, args in (logged if ok else []):  # a failed run: said above
                for opt in ("--json", "--junitxml", "--html"):
                    for f in cm.option_values(args, opt):
                        check(os.path.isfile(os.path.join(work, f)), "%s wrote %s %s"
                              % (what, opt, f))
                for f in cm.option_values(args, "--json"):
                    run_ids.append((load_json(os.path.join(work, f)) or {}).get("run_id"))
        base = pl.pipeline_run_id()
        check(base, "%s: the pipeline's E2E_RUN_ID evaluates offline (%r)" % (pl.path, base))
        eq(len(run_ids), len(pl.shards), "%s: a JSON report (run_id) per shard" % pl.path)
        # Shared safely: a run's own sweeps list e2e=<id> and its e2e_session.
        eq(sorted(set(map(str, run_ids))), [base], "%s: every shard ran with the "
           "pipeline's E2E_RUN_ID, unchanged (one run id per pipeline)" % pl.path)
        for j in pl.reports:
            ran(pl.run_job(j, work, BASE_ENV), (0, 1), "%s: job %s (merge)" % (pl.path, j))
            for _, args in take_log(log):
                for f in cm.option_values(args, "--json"):
                    merge = (load_json(os.path.join(work, f)) or {}).get("merge") or {}
                    problems = {k: merge.get(k) for k in ("missing", "duplicates", "unreadable")}
                    eq(problems, {"missing": [], "duplicates": [], "unreadable": []},
                       "%s: job %s merged every shard's report (%s)" % (pl.path, j, f))
                for opt in ("--junitxml", "--html"):
                    for f in cm.option_values(args, opt):
                        check(os.path.isfile(os.path.join(work, f)), "%s: job %s wrote %s"
                              % (pl.path, j, f))
        srv, url = serve_in_thread(FakePlatform)
        try:
            creds = {"ABX_SANDBOX_API_KEY": "e2b_" + "0" * 38 + "ab", "ABX_SANDBOX_BASE_URL": url,
                     "ABX_SANDBOX_DOMAIN": "127.0.0.1:%d" % srv.server_address[1]}
            for j in pl.janitors:
                FakePlatform.filters = []
                ran(pl.run_job(j, work, BASE_ENV, secrets=creds), (0,),
                    "%s: job %s against a fake platform" % (pl.path, j))
                cleanups = [cm.option_values(a, "--run-id") for s, a in take_log(log)
                            if s == "cleanup"]
                eq(cleanups, [[base]], "%s: job %s ran one cleanup --run-id, with the "
                   "shards' run id" % (pl.path, j))
                # cleanup --run-id takes the whole run: no e2e_session filter.
                want = {"e2e": base}
                check(FakePlatform.filters and all(f == want for f in FakePlatform.filters),
                      "%s: job %s lists only by %s, all sessions (got %s)"
                      % (pl.path, j, want, FakePlatform.filters))
        finally:
            srv.shutdown()
    except cm.LintError as e:
        check(False, "%s: %s" % (pl.path, e))
    finally:
        remove(work)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--github")
    ap.add_argument("--gitlab")
    a = ap.parse_args()
    binary, src = os.path.abspath(a.bin), os.path.abspath(a.src)
    files = [(GitHub, a.github or os.path.join(src, "examples", "ci", "github-actions.yml")),
             (GitLab, a.gitlab or os.path.join(src, "examples", "ci", "gitlab-ci.yml"))]
    needed = needed_packages(binary)
    for kind, path in files:
        try:
            text, data, root = cm.load(path)
        except (OSError, cm.LintError) as e:
            check(False, str(e))
            continue
        if not check(isinstance(data, dict), "%s: a YAML mapping" % path):
            continue
        yamllint(path)
        pl = kind(path, text, data)
        pl.structure()
        check_one_run_id(pl)
        found = check_options(path, text, root, binary)
        selftest(path, text, found, binary)
        check_runtime(pl, needed)
        check_no_leak(path, root)
        simulate(pl, src, binary)
    done()


if __name__ == "__main__":
    main()
