"""abx-local: serve's life: --help/--version (and every command's help and
usage errors), refusal where sandboxes cannot
be real, state dir lock, SIGTERM kills every sandbox, envd dying inside a
sandbox ends that sandbox cleanly, restart after a crash (SIGKILL) cleans
up what the previous run left."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import LOCAL_BIN, ENVD_BIN, Server, sandbox_pids  # noqa: E402
from abxtest import all_pids, check, done, proc_gone, proc_stat  # noqa: E402


def run_cli(args, timeout=30, pre=None):
    p = subprocess.run((pre or []) + [LOCAL_BIN] + args, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def described(lines, i):
    """Whether the help entry on lines[i] has its words: after two spaces
    on its line, or on the indented line below (a group of options ending
    in "," shares the description of its last line)."""
    while lines[i].rstrip().endswith(",") and i + 1 < len(lines):
        i += 1
    return (re.search(r"^  -\S.*?\S {2,}\S", lines[i]) is not None or
            (i + 1 < len(lines) and re.match(r"^ {10,}\S", lines[i + 1]) is not None))


def cli_help():
    """Help of every command on stdout, exit 0; `serve --help` lists every
    option serve takes, each described; a usage error is one line naming
    the problem and a usage hint, on stderr, exit 2."""
    for args in (["--help"], ["-h"], ["serve", "--help"], ["serve", "-h"],
                 ["serve", "--listen", "127.0.0.1:0", "--help"], ["switches", "--help"],
                 ["template", "--help"], ["template", "build", "--help"]):
        rc, out, err = run_cli(args)
        check(rc == 0 and out.startswith("usage: abx-local") and err == "",
              "abx-local %s: help on stdout, exit 0 (rc %d)" % (" ".join(args), rc))
    rc, out, _ = run_cli(["serve", "--help"])
    lines = out.splitlines()
    opts = {}  # option -> line index of its entry
    for i, line in enumerate(lines):
        if line.startswith("  -"):
            for o in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line.split("  ", 2)[1]):
                opts[o] = i
    want = ["--listen", "--data-listen", "--state-dir", "--api-key", "--templates", "--cache-dir",
            "--envd", "--bwrap", "--runtime", "--runsc", "--max-sandboxes", "--max-memory", "--max-pids", "--profile", "--switch", "--vary", "--gateway", "--allow-pause",
            "--fault-latency-ms", "--fault-create-latency-ms", "--fault-delete-delay-ms",
            "--fault-error-rate", "--fault-data-error-rate", "--fault-error-status",
            "--fault-drop-stream-after", "--fault-drop-create-replies", "--fault-kill-ignored",
            "--fault-list-filter-empty", "--fault-error-body-code",
            "--fault-metadata-punct-refused", "--fault-upload-max-bytes",
            "--fault-create-envs-dropped", "-h", "--help"]
    check(sorted(opts) == sorted(want), "serve --help lists serve's options (%s)" % sorted(opts))
    undescribed = [o for o, i in opts.items() if not described(lines, i)]
    check(undescribed == [], "serve --help: each option described (not: %s)" % undescribed)
    # What the help lists, the parser knows: each value option alone wants
    # its value (an option it did not know would be "unknown"). --vary's
    # seed is optional (alone it draws one), so it is asked for a bad seed.
    rc, out, err = run_cli(["serve", "--vary", "x1"])
    check(rc == 2 and "--vary wants a seed" in err and "'x1'" in err,
          "serve --vary: known to the parser, a bad seed named (%r)" % err.strip())
    for o in sorted(opts):
        if o in ("-h", "--help", "--allow-pause", "--vary"):
            continue
        rc, out, err = run_cli(["serve", o])
        check(rc == 2 and "serve: %s needs a value" % o in err,
              "serve %s: known to the parser (%r)" % (o, err.strip()))
    for args, named in ((["serve", "--no-such-flag"], "serve: unknown option --no-such-flag"),
                        (["serve", "--bogus", "1"], "serve: unknown option --bogus"),
                        (["serve", "stray"], "serve: unexpected argument stray"),
                        (["serve", "--runtime", "runc"], "serve: --runtime (or ABX_LOCAL_RUNTIME) "
                         "is bwrap or gvisor, not 'runc'"),
                        (["--bogus"], "abx-local: unknown option --bogus"),
                        (["bogus"], "abx-local: unknown command bogus"),
                        ([], "abx-local: a command is needed"),
                        (["switches", "--bogus"], "switches: unknown option --bogus"),
                        (["template", "--bogus"], "template: unknown option --bogus"),
                        (["template", "bogus"], "template: unknown command bogus"),
                        (["template"], "template: a command is needed"),
                        (["template", "import", "x"], "template: import needs NAME IMAGE.tar")):
        rc, out, err = run_cli(args)
        err = err.splitlines()
        check(rc == 2 and out == "" and len(err) == 2 and named in err[0] and
              err[1].startswith("usage: abx-local") and "--help" in err[1],
              "abx-local %s: names the problem, a usage hint, exit 2 (rc %d, %r)"
              % (" ".join(args), rc, err))


def main():
    cli_help()
    rc, out, _ = run_cli(["--help"])
    check(rc == 0 and "serve" in out and "--listen" in out, "--help")
    rc, out, _ = run_cli(["--version"])
    check(rc == 0 and out.startswith("abx-local "), "--version")
    rc, _, err = run_cli(["bogus"])
    check(rc != 0 and "usage" in err, "unknown command -> usage, non-zero")
    rc, _, err = run_cli(["serve", "--no-such-flag", "1"])
    check(rc != 0 and "--no-such-flag" in err, "unknown flag named")

    tmp = tempfile.mkdtemp(prefix="abx-local-life-")
    try:
        refusals(tmp)
        max_sandboxes()
        lock_and_sigterm(tmp)
        envd_crash()
        crash_restart(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


def refusals(tmp):
    base = ["serve", "--listen", "127.0.0.1:0", "--state-dir", tmp + "/r"]
    if ENVD_BIN:
        base += ["--envd", ENVD_BIN]
    rc, out, err = run_cli(base + ["--bwrap", "/nonexistent/bwrap"])
    check(rc == 1 and "bubblewrap" in err and "/nonexistent/bwrap" in err and "ready" not in out,
          "missing bwrap: refuses, names it")
    rc, out, err = run_cli(base + ["--envd", "/nonexistent/abx-envd"])
    check(rc == 1 and "abx-envd" in err and "ready" not in out, "missing envd: refuses, names it")
    rc, out, err = run_cli(base + ["--templates", "/nonexistent/templates"])
    check(rc == 1 and "templates" in err, "missing templates dir: refuses")
    fake = os.path.join(tmp, "fake-bwrap")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\n"
                "exit 1\n")
    os.chmod(fake, 0o755)
    rc, out, err = run_cli(base + ["--bwrap", fake])
    check(rc == 1 and "namespaces refused" in err and "Operation not permitted" in err,
          "namespaces refused: refuses with bwrap's reason")
    setpriv = shutil.which("setpriv")
    if setpriv:
        rc, out, err = run_cli(base, pre=[setpriv, "--reuid=65534", "--regid=65534",
                                          "--clear-groups", "--"])
        check(rc == 1 and "must run as root" in err and "sudo" in err and "cloud platform" in err
              and "ready" not in out,
              "non-root: refuses, says root and the two ways out (sudo, a cloud platform)")
    else:
        print("skip non-root refusal: setpriv not installed")


def max_sandboxes():
    s = Server(extra=["--max-sandboxes", "2"])
    try:
        a = s.create("base", timeout=60)["sandboxID"]
        s.create("base", timeout=60)
        st, js, _, _ = s.request("POST", "/sandboxes", {"templateID": "base"})
        check(st == 429 and js.get("code") == 429, "--max-sandboxes 2: the third create -> 429")
        s.kill(a)
        st, _, _, _ = s.request("POST", "/sandboxes", {"templateID": "base"})
        check(st == 201, "after a kill, create works again")
        for sid in [x["sandboxID"] for x in s.request("GET", "/v2/sandboxes")[1]]:
            s.kill(sid)
        # Concurrent creates race for the 2 slots: exactly 2 may win.
        got = []
        ts = [threading.Thread(target=lambda: got.append(
            s.request("POST", "/sandboxes", {"templateID": "base", "timeout": 60})[0]))
            for _ in range(5)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        check(sorted(got) == [201, 201, 429, 429, 429],
              "--max-sandboxes 2, 5 concurrent creates: 2 x 201, 3 x 429 (got %s)" % sorted(got))
    finally:
        s.cleanup()
    rc, _, err = run_cli(["serve", "--max-sandboxes", "0"])
    check(rc == 2 and "--max-sandboxes" in err, "--max-sandboxes 0 refused")


def lock_and_sigterm(tmp):
    sd = os.path.join(tmp, "t")
    s = Server(state_dir=sd)
    try:
        rc, out, err = run_cli(["serve", "--listen", "127.0.0.1:0", "--state-dir", sd] +
                               (["--envd", ENVD_BIN] if ENVD_BIN else []))
        check(rc == 1 and "in use" in err, "a second server on the same state dir is refused")
        ids = [s.create("base", timeout=300)["sandboxID"] for _ in range(3)]
        s.request("POST", "/sandboxes/%s/pause" % ids[0])
        s.run(ids[1], "nohup sleep 777 >/dev/null 2>&1 &")
        pids = sandbox_pids(sd)
        check(len(pids) == 3 and all(not proc_gone(p) for p in pids), "3 sandboxes running")
        rc = s.stop(signal.SIGTERM)
        check(rc == 0, "SIGTERM: exit 0")
        check(all(proc_gone(p) for p in pids), "SIGTERM: every sandbox process is gone (paused too)")
        check(os.listdir(os.path.join(sd, "sandboxes")) == [], "SIGTERM: no sandbox folder left")
        check(os.popen("pgrep -f '^sleep 777$'").read().strip() == "", "no sandbox child left")
    finally:
        s.stop(signal.SIGKILL)


def zombie_children(ppid):
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1][0] == "Z" and int(st[1][1]) == ppid:
            out.append(pid)
    return out


def envd_crash():
    s = Server()
    try:
        sid = s.create("python-hello", timeout=300)["sandboxID"]
        other = s.create("base", timeout=300)["sandboxID"]
        with open(os.path.join(s.state_dir, "sandboxes", sid, "pid")) as f:
            init = int(f.read().split()[0])
        with open("/proc/%d/task/%d/children" % (init, init)) as f:
            envd = int(f.read().split()[0])   # bwrap's pid 1 runs envd only
        os.kill(envd, signal.SIGKILL)
        deadline = time.time() + 30
        while time.time() < deadline and s.request("GET", "/sandboxes/" + sid)[0] == 200:
            time.sleep(0.05)
        check(s.request("GET", "/sandboxes/" + sid)[0] == 404,
              "envd killed: the server notices, the sandbox is gone (GET -> 404)")
        st, _, _ = s.data_request(sid, 49983, "GET", "/health")
        check(st == 502, "envd killed: data plane -> 502")
        check(s.kill(sid) == 404, "envd killed: DELETE -> 404, already cleaned up")
        folder = os.path.join(s.state_dir, "sandboxes", sid)
        while time.time() < deadline and os.path.exists(folder):
            time.sleep(0.05)
        check(not os.path.exists(folder), "envd killed: folder removed")
        # bwrap leaves the sandbox's pid 1 unreaped; it comes to the server
        # (child subreaper), which must reap it.
        check(not os.path.exists("/proc/%d" % init) and zombie_children(s.proc.pid) == [],
              "envd killed: no process or zombie of the sandbox left")
        check(s.run(other, "echo ok")[:2] == (0, "ok\n"), "envd killed: other sandboxes unaffected")
    finally:
        s.cleanup()


def crash_restart(tmp):
    sd = os.path.join(tmp, "c")
    s = Server(state_dir=sd)
    ids = [s.create("base", timeout=300)["sandboxID"] for _ in range(2)]
    pids = sandbox_pids(sd)
    check(len(pids) == 2, "2 sandboxes before the crash")
    s.stop(signal.SIGKILL)
    check(s.proc.returncode == -signal.SIGKILL, "serve killed with SIGKILL")
    # Fake a leftover whose pid is alive but not ours: it must NOT be killed.
    decoy = subprocess.Popen(["sleep", "60"])
    os.makedirs(os.path.join(sd, "sandboxes", "decoy0000000000000000"))
    with open(os.path.join(sd, "sandboxes", "decoy0000000000000000", "pid"), "w") as f:
        f.write("%d 1\n" % decoy.pid)
    # A leftover whose pid and start time match: it must be killed.
    orphan = subprocess.Popen(["sleep", "60"])
    with open("/proc/%d/stat" % orphan.pid) as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    os.makedirs(os.path.join(sd, "sandboxes", "orphan000000000000000"))
    with open(os.path.join(sd, "sandboxes", "orphan000000000000000", "pid"), "w") as f:
        f.write("%d %s\n" % (orphan.pid, start))
    s2 = Server(state_dir=sd)
    try:
        time.sleep(0.2)
        check(orphan.poll() is not None, "restart: a leftover sandbox process (pid file) is killed")
        check(all(proc_gone(p) for p in pids), "restart: old sandbox processes are gone")
        check(os.listdir(os.path.join(sd, "sandboxes")) == [], "restart: old folders removed")
        check(decoy.poll() is None, "restart: a reused pid (start time differs) is not killed")
        st, lst, _, _ = s2.request("GET", "/v2/sandboxes")
        check(st == 200 and lst == [], "restart: no sandbox listed")
        check(s2.request("GET", "/sandboxes/" + ids[0])[0] == 404, "restart: old id -> 404")
        n = s2.create("base", timeout=60)
        check(len(n["sandboxID"]) == 20, "restart: new sandboxes work")
    finally:
        s2.stop()
        decoy.kill()
        decoy.wait()
        if orphan.poll() is None:
            orphan.kill()
        orphan.wait()


if __name__ == "__main__":
    main()
