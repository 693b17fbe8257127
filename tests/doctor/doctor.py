#!/usr/bin/env python3
"""`abx-e2e doctor`: one scenario per ctest case.

usage: doctor.py --bin PATH/abx-e2e --src SOURCE_DIR SCENARIO

Every run happens in a scratch directory holding a copy of tests-lua/
(never a .env of the developer's), with the platform and suite variables
dropped from the environment. Scenarios:
  local.fc, local.e2b       --local --profile P: exit 0, every section in
                            order, envdVersion, capabilities and the tests
                            they skip, the sandbox killed and swept, no
                            secret printed (abx-local's key is fixed through
                            a wrapper so the test knows it), --json too
  bad_key                   a running abx-local, a wrong key: exit 1, FIX
                            naming ABX_SANDBOX_API_KEY, the key never printed
  unreachable               nothing listens at the URL: exit 1, URL and FIX
  no_credentials            no key: exit 1, FIX naming ABX_SANDBOX_API_KEY;
                            usage errors exit 4
  local_host                --local on a host abx-local cannot run on (no
                            bubblewrap; then not root, no sudo): the
                            local host section names each problem with its
                            FIX, abx-local is not started, the platform's
                            sections are skipped: exit 1
  missing_server_template   --local with E2E_SERVER_TEMPLATE=no-such-template:
                            exit 0, a warning naming it, test_06 listed
  missing_base              an abx-local without base: not listed, the create
                            says 404: exit 1, FIX naming the template
  broken_tags, broken_server_port, broken_upload, broken_envs
                            a set-up broken on purpose (metadata values with
                            ' or [ refused, E2E_SERVER_PORT wrong, uploads
                            capped at 1 MiB, a create's envs dropped): exit
                            1, that one problem named with its FIX, the
                            other checks passing, nothing left
Standard library only."""

import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxlocal import Server  # noqa: E402
from abxtest import (KNOBS, PLATFORM, check, check_not_printed, cli, copy_suite,  # noqa: E402
                     done, remove, run, scratch, scrubbed_env)

LOCAL_HOST = "== local host (abx-local check) =="
SECTIONS = ["== config ==", "== control plane ==", "== templates ==", "== sandbox ==",
            "== clock skew ==", "== capabilities =="]
ENV_KEY = "e2b_doctor_env_key_5f1c9a7be3d24c60a8b1"     # given in the environment
LOCAL_KEY = "e2b_doctor_local_key_0d6e2f9c41b7a358e7"   # abx-local's, via the wrapper
WRONG_KEY = "e2b_doctor_wrong_key_9a7c3e5d1f0b2468ac"


class Ctx:
    def __init__(self, binary, src, tmp):
        self.bin, self.src, self.tmp = binary, src, tmp
        copy_suite(src, tmp)
        # The suite's own files stay clean: no platform variable leaks in.
        self.env = scrubbed_env(PLATFORM + KNOBS + ("ABX_LOCAL_PROFILE",), NO_COLOR="1")

    def run(self, args, env=None, timeout=240):
        e = dict(self.env)
        e.update(env or {})
        p = run([self.bin, "doctor"] + args, cwd=self.tmp, env=e, timeout=timeout)
        print("$ abx-e2e doctor %s  -> exit %d" % (" ".join(args), p.returncode))
        print(p.stdout[-6000:])
        if p.stderr.strip():
            print("[stderr]\n" + p.stderr[-3000:])
        return p.returncode, p.stdout, p.stderr

    def local_wrapper(self):
        """ABX_LOCAL_BIN that runs abx-local with a key this test knows."""
        real = os.environ.get("ABX_LOCAL_BIN", "")
        check(os.access(real, os.X_OK), "ABX_LOCAL_BIN is set (%r)" % real)
        path = os.path.join(self.tmp, "abx-local-fixed-key")
        with open(path, "w") as f:
            f.write('#!/bin/sh\nexec "%s" "$@" --api-key %s\n' % (real, LOCAL_KEY))
        os.chmod(path, 0o755)
        return path

    def suite_requires(self):
        return any(re.search(r"requires\s*=", open(f).read())
                   for f in glob.glob(os.path.join(self.tmp, "tests-lua", "*.lua")))


def fix_lines(out):
    return [ln.strip() for ln in out.splitlines() if ln.strip().startswith("FIX: ")]


def closing(out):
    lines = [ln for ln in out.splitlines() if ln.strip()]
    m = re.fullmatch(r"doctor: (\d+) problems, (\d+) warnings", lines[-1] if lines else "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def sections_in_order(out, what):
    pos = [out.find(s) for s in SECTIONS]
    check(all(p >= 0 for p in pos), "%s: every section printed (%r)" % (what, pos))
    check(pos == sorted(pos), "%s: sections in order" % what)


def section(out, title):
    """The text of one section (up to the next heading or the end)."""
    i = out.find("== %s ==" % title)
    if i < 0:
        return ""
    j = out.find("\n== ", i + 1)
    return out[i:j if j >= 0 else len(out)]


def local(ctx, profile):
    fc = profile == "fc"
    what = "local." + profile
    with open(os.path.join(ctx.tmp, ".env"), "w") as f:
        f.write("E2E_SANDBOX_TTL=123\n")
    env = {"ABX_LOCAL_BIN": ctx.local_wrapper(), "ABX_SANDBOX_API_KEY": ENV_KEY}
    rc, out, err = ctx.run(["--local", "--profile", profile], env)
    check(rc == 0, "%s: exit 0 (%d)" % (what, rc))
    sections_in_order(out, what)
    host = section(out, "local host (abx-local check)")
    check(0 <= out.find(LOCAL_HOST) < out.find(SECTIONS[0]),
          "%s: the local host first, before abx-local's config" % what)
    for fact in ("user ", "user namespaces", "cgroups ", "bubblewrap", "overlayfs"):
        check("\n  " + fact in host, "%s: the local host section tells %s" % (what, fact.strip()))
    check("abx-local started: http://127.0.0.1:" in host, "%s: abx-local started" % what)
    check(closing(out) == (0, 0), "%s: closing line 0 problems, 0 warnings (%r)"
          % (what, closing(out)))
    secrets = {"the key in the environment": ENV_KEY, "abx-local's key": LOCAL_KEY}
    check_not_printed(out + err, secrets, what)

    cfg = section(out, "config")
    check(re.search(r"ABX_SANDBOX_API_KEY +set \(%d characters, masked\)  \[abx-local "
                    r"\(profile %s\)\]" % (len(LOCAL_KEY), profile), cfg) is not None,
          "%s: the key as a length, from abx-local" % what)
    check(re.search(r"ABX_SANDBOX_BASE_URL +http://127\.0\.0\.1:\d+  \[abx-local \(profile "
                    r"%s\)\]" % profile, cfg) is not None, "%s: base URL from abx-local" % what)
    check(re.search(r"E2E_SANDBOX_TTL +123  \[\.env\]", cfg) is not None,
          "%s: a value's .env file named" % what)
    check(re.search(r"E2E_SERVER_TEMPLATE +python-hello  \[default\]", cfg) is not None,
          "%s: a default said so" % what)

    cp = section(out, "control plane")
    check("reachable, authenticated" in cp, "%s: control plane reachable" % what)
    tm = section(out, "templates")
    for name in ("base", "code-interpreter-v1", "python-hello (E2E_SERVER_TEMPLATE)"):
        check("%s: present" % name in tm, "%s: template %s present" % (what, name))

    sb = section(out, "sandbox")
    envd = "0.5.2" if fc else "0.6.4"
    check("envdVersion: %s" % envd in sb, "%s: envdVersion %s" % (what, envd))
    m = re.search(r"created (\S+) from base in [\d.]+ s \(timeout 60 s, tagged e2e=(\S+),", sb)
    check(m is not None, "%s: the create, its time and its tag" % what)
    check("envd /health: ok" in sb and "`echo ok` through envd: ok" in sb,
          "%s: data plane checked" % what)
    if m:
        check("sandbox %s killed" % m.group(1) in sb, "%s: its sandbox killed" % what)
    for line in ("default user user, home /home/user, cwd /home/user",
                 "the tools the suite runs in base: all present", "upload of 10 MiB: ok",
                 "server template python-hello: its server answers on port 8080",
                 "an env given at create reaches a command in python-hello",
                 "code-interpreter-v1: `6 * 7` gives 42 on port 49999"):
        check(line in sb, "%s: %s" % (what, line))
    check("sandboxes: 3 created, 3 deleted, 0 kept, 0 left" in out,
          "%s: the sweep confirms nothing left (base, server, code)" % what)
    runs = os.path.join(ctx.tmp, ".abx-e2e", "runs")
    left = [n for n in os.listdir(runs)] if os.path.isdir(runs) else []
    check(left == [], "%s: no ledger left (a clean run removes it): %r" % (what, left))
    check(re.search(r"sandbox clock (ahead of|behind) local clock by [\d.]+ s",
                    section(out, "clock skew")) is not None, "%s: clock skew measured" % what)

    caps = section(out, "capabilities")
    check(re.search(r"platform %s .*capability set: %s" % (profile, "none" if fc else "pause"),
                    caps) is not None, "%s: the platform and its set" % what)
    for name in ("pause", "signed-urls", "e2b-proxy", "e2b-messages"):
        state = "absent" if fc else "present"
        check(re.search(r"^  %s +%s " % (name, state), caps, re.M) is not None,
              "%s: %s %s" % (what, name, state))
    m = re.search(r"tests skipped by this set: (\d+) of (\d+) collected", caps)
    check(m is not None and int(m.group(2)) > 0, "%s: the suite collected" % what)
    if m and fc and ctx.suite_requires():
        check(int(m.group(1)) > 0 and re.search(r"^ +- tests-lua/\S+\.lua::", caps, re.M),
              "%s: the tests fc skips listed" % what)
    if m and not fc:
        check(int(m.group(1)) == 0, "%s: e2b skips nothing" % what)

    # --json: the same facts, one object on stdout.
    rc, out, err = ctx.run(["--local", "--profile", profile, "--json"], env)
    check(rc == 0, "%s --json: exit 0 (%d)" % (what, rc))
    try:
        js = json.loads(out)
    except ValueError:
        js = None
    check(isinstance(js, dict), "%s --json: stdout is one JSON object" % what)
    js = js if isinstance(js, dict) else {}
    check(js.get("exitCode") == 0 and js.get("problems") == [],
          "%s --json: exit code and no problems" % what)
    check(list(js)[:8] == ["version", "localHost", "config", "controlPlane", "templates",
                           "sandbox", "clockSkew", "capabilities"], "%s --json: sections" % what)
    lh = js.get("localHost", {})
    check(lh.get("started") is True and lh.get("check", {}).get("ok") is True and
          lh.get("check", {}).get("user", {}).get("root") is True,
          "%s --json: the local host's facts, abx-local started (%r)" % (what, lh))
    sbx = js.get("sandbox", {})
    check(sbx.get("envdVersion") == envd and sbx.get("killed") is True
          and sbx.get("sweptClean") is True, "%s --json: sandbox facts %r" % (what, sbx))
    jc = js.get("capabilities", {})
    check(jc.get("platform") == profile and
          (jc.get("set") == "none" if fc else "pause" in jc.get("set", "")),
          "%s --json: capabilities (%r)" % (what, jc.get("set")))
    check(js.get("config", {}).get("E2E_SANDBOX_TTL", {}).get("source") == ".env",
          "%s --json: config sources" % what)
    check(sbx.get("upload") is True and sbx.get("missingTools") == "" and
          sbx.get("defaultUser") == "user" and sbx.get("server", {}).get("answers") is True and
          sbx.get("server", {}).get("envReachesCommands") is True and
          sbx.get("codeInterpreter", {}).get("runsCode") is True,
          "%s --json: what the suite needs, checked (%r)" % (what, sbx))
    check("sandboxes: 3 created" in err, "%s --json: the sweep's line on stderr" % what)
    check_not_printed(out + err, secrets, what + " --json")


def bad_key(ctx):
    # fc: the profile the suite is for (its roots are built by local.roots.fc).
    s = Server(extra=["--profile", "fc"])
    try:
        env = {k: s.env[k] for k in ("ABX_SANDBOX_BASE_URL", "ABX_SANDBOX_URL",
                                     "ABX_SANDBOX_DOMAIN")}
        env["ABX_SANDBOX_API_KEY"] = WRONG_KEY
        rc, out, err = ctx.run([], env)
        check(rc == 1, "bad_key: exit 1 (%d)" % rc)
        check("authentication failed" in section(out, "control plane"),
              "bad_key: authentication failed")
        check(any("ABX_SANDBOX_API_KEY" in f for f in fix_lines(out)),
              "bad_key: a FIX line names ABX_SANDBOX_API_KEY (%r)" % fix_lines(out))
        check("skipped" in section(out, "sandbox"), "bad_key: no sandbox attempted")
        check(closing(out) == (1, 0), "bad_key: 1 problem (%r)" % (closing(out),))
        secrets = {"the wrong key": WRONG_KEY, "the server's key": s.key}
        check_not_printed(out + err, secrets, "bad_key")
        rc, out, err = ctx.run(["--json"], env)
        js = json.loads(out) if out.strip().startswith("{") else {}
        check(rc == 1 and js.get("exitCode") == 1 and
              "ABX_SANDBOX_API_KEY" in (js.get("problems") or [{}])[0].get("fix", ""),
              "bad_key --json: the problem and its fix")
        check_not_printed(out + err, secrets, "bad_key --json")
        st, lst, _, _ = s.request("GET", "/v2/sandboxes")
        check(st == 200 and lst == [], "bad_key: nothing created")
    finally:
        s.cleanup()


def unreachable(ctx):
    url = "http://127.0.0.1:1"
    rc, out, err = ctx.run([], {"ABX_SANDBOX_API_KEY": ENV_KEY, "ABX_SANDBOX_BASE_URL": url})
    check(rc == 1, "unreachable: exit 1 (%d)" % rc)
    cp = section(out, "control plane")
    check("cannot reach the control plane at %s" % url in cp, "unreachable: the URL named")
    check(len(fix_lines(out)) == 1 and "ABX_SANDBOX_BASE_URL" in fix_lines(out)[0],
          "unreachable: one FIX line (%r)" % fix_lines(out))
    sections_in_order(out, "unreachable")
    check(closing(out) == (1, 0), "unreachable: 1 problem (%r)" % (closing(out),))
    check_not_printed(out + err, {"the key": ENV_KEY}, "unreachable")


def no_credentials(ctx):
    rc, out, err = ctx.run([])
    check(rc == 1, "no_credentials: exit 1 (%d)" % rc)
    check("no API key" in section(out, "config"), "no_credentials: said in config")
    check(any("ABX_SANDBOX_API_KEY" in f for f in fix_lines(out)),
          "no_credentials: a FIX line names ABX_SANDBOX_API_KEY (%r)" % fix_lines(out))
    sections_in_order(out, "no_credentials")
    check("tests skipped by this set:" in section(out, "capabilities"),
          "no_credentials: capabilities still listed")
    check(closing(out) == (1, 0), "no_credentials: 1 problem (%r)" % (closing(out),))
    check(not os.path.isdir(os.path.join(ctx.tmp, ".abx-e2e")), "no_credentials: no ledger")
    for args in (["--bogus"], ["--profile", "fc"], ["--local", "--profile", "aws"]):
        rc, out, err = ctx.run(args)
        check(rc == 4 and "usage" in err, "doctor %s: usage error, exit 4 (%d)"
              % (" ".join(args), rc))
    rc, out, err = ctx.run(["--help"])
    check(rc == 0 and "usage: abx-e2e doctor" in out, "doctor --help")


def missing_server_template(ctx):
    env = {"ABX_LOCAL_BIN": ctx.local_wrapper(), "E2E_SERVER_TEMPLATE": "no-such-template"}
    rc, out, err = ctx.run(["--local", "--profile", "fc"], env)
    check(rc == 1, "missing_server_template: exit 1, a problem (%d)" % rc)
    check("no-such-template (E2E_SERVER_TEMPLATE): missing" in section(out, "templates"),
          "missing_server_template: said missing")
    check("server template no-such-template (E2E_SERVER_TEMPLATE) not found: the tests that "
          "need it will fail" in out and "docs/fc-server-template.md" in out,
          "missing_server_template: a problem naming it and the fix")
    m = re.search(r"tests that fail without the server template no-such-template \((\d+)\):",
                  out)
    check(m is not None and int(m.group(1)) > 0 and
          "tests-lua/test_06_server_sdk.lua::" in section(out, "capabilities"),
          "missing_server_template: test_06's tests listed")
    check(closing(out) == (1, 0), "missing_server_template: 1 problem, 0 warnings (%r)"
          % (closing(out),))
    check_not_printed(out + err, {"abx-local's key": LOCAL_KEY}, "missing_server_template")


def missing_base(ctx):
    tdir = os.path.join(ctx.tmp, "templates")
    os.makedirs(os.path.join(tdir, "other"))
    with open(os.path.join(tdir, "other", "template.json"), "w") as f:
        # Debian's essential set: the root local.roots* already cached.
        json.dump({"templateID": "other", "rootfs": {"debian": "bookworm",
                   "variant": "essential", "packages": []}}, f)
    s = Server(extra=["--profile", "fc", "--templates", tdir])
    try:
        env = {k: s.env[k] for k in ("ABX_SANDBOX_BASE_URL", "ABX_SANDBOX_URL",
                                     "ABX_SANDBOX_DOMAIN", "ABX_SANDBOX_API_KEY")}
        rc, out, err = ctx.run([], env)
        check(rc == 1, "missing_base: exit 1 (%d)" % rc)
        check("base: missing" in section(out, "templates"), "missing_base: not listed")
        check("PROBLEM: template base not found" in section(out, "sandbox"),
              "missing_base: the create decides")
        check(any("template named base" in f for f in fix_lines(out)),
              "missing_base: FIX names the template (%r)" % fix_lines(out))
        # base is missing (the problem); code-interpreter-v1 is not listed
        # (a warning); the server template is missing too (a problem now:
        # its tests would fail)
        check(closing(out) == (2, 1), "missing_base: 2 problems, 1 warning (%r)"
              % (closing(out),))
        check_not_printed(out + err, {"the server's key": s.key}, "missing_base")
        st, lst, _, _ = s.request("GET", "/v2/sandboxes")
        check(st == 200 and lst == [], "missing_base: nothing left")
    finally:
        s.cleanup()


# A set-up broken on purpose (abx-local's faults, or a setting): the one
# problem doctor must name, and a text of its FIX line.
BROKEN = {
    "broken_tags": (["--fault-metadata-punct-refused", "1"], {},
                    "a sandbox tagged e2e_test=tests-lua/test_doctor.lua::tags: ' : / [ ]",
                    "accept any text as a metadata value"),
    "broken_server_port": ([], {"E2E_SERVER_PORT": "8081"},
                           "did not answer GET / on port 8081 within 60 s",
                           "set E2E_SERVER_PORT to the port python-hello's server listens on"),
    "broken_upload": (["--fault-upload-max-bytes", str(1 << 20)], {},
                      "an upload of 10 MiB failed", "lift the body-size limit"),
    "broken_envs": (["--fault-create-envs-dropped", "1"], {},
                    "an env given at create does not reach a command in python-hello",
                    "give a create's envVars to the processes envd starts"),
}


def broken(ctx, name):
    """One broken set-up: exit 1, exactly one problem, the one named, with
    its fix; every other check still passes and nothing is left."""
    flags, extra, problem, fix = BROKEN[name]
    s = Server(extra=["--profile", "fc"] + flags)
    try:
        env = {k: s.env[k] for k in ("ABX_SANDBOX_BASE_URL", "ABX_SANDBOX_URL",
                                     "ABX_SANDBOX_DOMAIN", "ABX_SANDBOX_API_KEY")}
        env.update(extra)
        rc, out, err = ctx.run([], env)
        check(rc == 1, "%s: exit 1 (%d)" % (name, rc))
        check(problem in out, "%s: the problem named (%r)" % (name, problem))
        check(any(fix in f for f in fix_lines(out)),
              "%s: its FIX (%r in %r)" % (name, fix, fix_lines(out)))
        check(closing(out) == (1, 0), "%s: that one problem, no warning (%r)"
              % (name, closing(out)))
        check("sandboxes: 3 created, 3 deleted, 0 kept, 0 left" in out,
              "%s: every template started, nothing left" % name)
        check_not_printed(out + err, {"the server's key": s.key}, name)
        st, lst, _, _ = s.request("GET", "/v2/sandboxes")
        check(st == 200 and lst == [], "%s: nothing left on the platform" % name)
    finally:
        s.cleanup()


def local_host(ctx):
    real = os.environ.get("ABX_LOCAL_BIN", "")
    wrapper = os.path.join(ctx.tmp, "abx-local-no-bwrap")
    with open(wrapper, "w") as f:   # every command of it without bubblewrap
        f.write('#!/bin/sh\nexec "%s" "$@" --bwrap /nonexistent/bwrap\n' % real)
    os.chmod(wrapper, 0o755)
    for what, env, user, want in (
            ("no bwrap", {"ABX_LOCAL_BIN": wrapper}, None,
             ("bubblewrap not found (/nonexistent/bwrap)", "install bubblewrap")),
            ("not root", {"ABX_LOCAL_BIN": real}, 65534,
             ("abx-local serve needs root; uid 65534 is not root", "passwordless sudo"))):
        args = ["--local", "--profile", "fc"]
        if user is not None:   # the scratch folder is the run's: the user's too
            os.chmod(ctx.tmp, 0o777)
            for root, dirs, files in os.walk(ctx.tmp):
                for n in dirs + files:
                    os.chmod(os.path.join(root, n), 0o777)
        e = dict(ctx.env, **env)
        cmd = [ctx.bin, "doctor"] + args
        if user is not None:
            cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups"] + cmd
        p = run(cmd, cwd=ctx.tmp, env=e, timeout=240)
        out = p.stdout
        print("$ %s -> exit %d\n%s" % (" ".join(cmd), p.returncode, out[-4000:]))
        host = section(out, "local host (abx-local check)")
        check(p.returncode == 1, "%s: exit 1 (%d)" % (what, p.returncode))
        check(want[0] in host and any(want[1] in f for f in fix_lines(out)),
              "%s: the problem named, with its FIX (%r)" % (what, fix_lines(out)))
        check("abx-local not started" in host and "abx-local started" not in out,
              "%s: abx-local not started" % what)
        check("skipped" in section(out, "control plane") and
              "skipped" in section(out, "sandbox"), "%s: the platform's sections skipped" % what)
        check(closing(out) == (1, 0), "%s: the closing line counts it alone, no missing "
              "key besides (%r)" % (what, closing(out)))
        check(not os.path.isdir(os.path.join(ctx.tmp, ".abx-e2e", "runs")) or
              os.listdir(os.path.join(ctx.tmp, ".abx-e2e", "runs")) == [],
              "%s: no ledger (no sandbox)" % what)


SCENARIOS = {
    "local.fc": lambda c: local(c, "fc"),
    "local_host": local_host,
    "local.e2b": lambda c: local(c, "e2b"),
    "bad_key": bad_key,
    "unreachable": unreachable,
    "no_credentials": no_credentials,
    "missing_server_template": missing_server_template,
    "missing_base": missing_base,
}
SCENARIOS.update({n: (lambda c, n=n: broken(c, n)) for n in BROKEN})


def main():
    a = cli(SCENARIOS, src=True)
    tmp = scratch("abx-doctor-")
    try:
        SCENARIOS[a.scenario](Ctx(a.bin, a.src, tmp))
    finally:
        remove(tmp)
    done()


if __name__ == "__main__":
    main()
