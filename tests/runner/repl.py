#!/usr/bin/env python3
"""abx-e2e repl: the Lua prompt, through a pipe (plain line reads) and on a
pseudo-terminal (libedit: prompts, line editing, history, Ctrl-C).

usage: repl.py --bin PATH/abx-e2e prompt|sandboxes

prompt     no platform: values printed, statements, continuation lines,
           errors (the prompt goes on), .help from what is registered,
           masking, exit codes, options, Ctrl-C (cancel, interrupt, twice
           exits), the history file (written, masked, capped, reloaded).
sandboxes  needs root + bubblewrap and ABX_LOCAL_BIN (ABX_ENVD_BIN,
           ABX_TEMPLATES_DIR): a sandbox created at the prompt is gone
           (abx-local's API: 404, nothing tagged with the run id) once the
           REPL has ended by Ctrl-D, os.exit(3) or Ctrl-C twice; and with
           `repl --local`, no process of the run is left.

Every wait is for output the REPL prints (a prompt, a marker); the time
limits only turn a hang into a failure. Standard library only."""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import abxlocal  # noqa: E402
from abxtest import (ALL_ABX, Fail, cli, must, pids_where, read_text, remove,  # noqa: E402
                     run, run_scenarios, sanitizer_report, scratch, scrubbed_env, until,
                     write_file)

SECRET = "e2b_" + "5a1f0c3e9b7d2468" * 2  # planted API key (fake)
HINT = "(To exit, press Ctrl-C again or Ctrl-D)"
HISTORY = os.path.join(".abx-e2e", "repl_history")
BIN = None


def env_of(d, extra=None):
    """No platform, no developer settings (HOME: no ~/.editrc of theirs)."""
    env = scrubbed_env(ALL_ABX, NO_COLOR="1", CI="true", TERM="xterm",
                       LANG="C.UTF-8", HOME=d)
    env.update(extra or {})
    return env


def piped(d, text, *args, env=None):
    """`abx-e2e repl ARGS` with text as its stdin (not a terminal)."""
    p = run([BIN, "repl", *args], cwd=d, env=env or env_of(d), input=text, timeout=120)
    must(not sanitizer_report(p.stdout + p.stderr), "a sanitizer report:\n" + p.stderr)
    return p


def _ctty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty becomes its terminal


class Pty:
    """`abx-e2e repl ARGS` on a pseudo-terminal of its own session: the
    pty's Ctrl-C (\\x03) is a SIGINT to it, as from a real terminal."""

    def __init__(self, d, *args, env=None):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        self.p = subprocess.Popen([BIN, "repl", *args], cwd=d, env=env or env_of(d),
                                  stdin=slave, stdout=slave, stderr=slave,
                                  start_new_session=True, preexec_fn=_ctty)
        os.close(slave)
        self.out, self.pos = "", 0

    def _read(self, until):
        r, _, _ = select.select([self.master], [], [], max(0, min(0.5, until - time.time())))
        if r:
            try:
                self.out += os.read(self.master, 65536).decode("utf-8", "replace").replace("\r", "")
            except OSError:  # EIO: every end of the slave is closed
                return False
        return True

    def expect(self, pattern, secs=120):
        """Reads until pattern (a regex) shows up after what was matched so
        far; the match. Fail with the transcript when it never does."""
        until = time.time() + secs
        while True:
            m = re.compile(pattern).search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.time() > until or not self._read(until):
                raise Fail("no %r in the REPL's output:\n%s" % (pattern, self.out[-3000:]))

    def prompt(self, cont=False):
        """Waits for the prompt, then for libedit to read keys (the pty's
        line discipline out of canonical mode: tcgetattr on the master
        reads the slave's settings); typed earlier, the keys would be
        echoed twice."""
        m = self.expect(r"(?<![^\n])%s $" % (">>" if cont else ">"))
        must(until(lambda: not termios.tcgetattr(self.master)[3] & termios.ICANON, 30, 0.01),
             "libedit never took the terminal:\n" + self.out[-2000:])
        return m

    def send(self, data):
        os.write(self.master, data.encode())

    def line(self, text, cont=False):
        """Types text and Enter at a prompt (waited for first)."""
        self.prompt(cont)
        self.send(text + "\r")

    def wait(self, secs=120):
        """The exit code; what it printed is read to the end."""
        until = time.time() + secs
        while self.p.poll() is None and time.time() < until:
            self._read(until)
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            raise Fail("the REPL did not end:\n" + self.out[-3000:])
        while self._read(time.time() + 0.2) and select.select([self.master], [], [], 0)[0]:
            pass
        os.close(self.master)
        must(not sanitizer_report(self.out), "a sanitizer report:\n" + self.out[-6000:])
        return self.p.returncode


# ---- prompt: no platform ---------------------------------------------------

def sc_values(d):
    """An expression prints its values, a statement nothing; continuation."""
    p = piped(d, "1+1\nx = 40\nx + 2\nprint('hi')\nreturn 1, 'two', nil\n"
                 "for i = 1, 3 do\n  print(i * 10)\nend\n"
                 "{1,\n 2, k = 'v'}\n"
                 "setmetatable({}, {__tostring = function() return 'T!' end})\n")
    must(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
    want = ["2", "42", "hi", "1\ttwo\tnil", "10", "20", "30", '{1, 2, k = "v"}', "T!"]
    must(p.stdout.splitlines() == want, "stdout %r, want %r" % (p.stdout, want))
    must(p.stderr == "", "stderr: %r" % p.stderr)


def sc_errors(d):
    """An error is printed as `error: <text>` and the next line runs."""
    p = piped(d, 'error("boom")\n"after boom"\nx = = 1\n"after syntax"\n'
                 'error(setmetatable({class = "NotFound", message = "no such sandbox"},'
                 ' debug.getregistry()["e2e.Error"]))\n'
                 'setmetatable({}, {__tostring = function() error("bad tostring") end})\n'
                 '.nope\n"still here"\n')
    must(p.returncode == 0, "exit %d" % p.returncode)
    must(p.stdout.splitlines() == ["after boom", "after syntax", "still here"],
         "stdout: %r" % p.stdout)
    errs = p.stderr.splitlines()
    for want in ["error: stdin:1: boom", "error: stdin:1: unexpected symbol near '='",
                 "error: NotFound: no such sandbox", "error: unknown command '.nope'"]:
        must(any(e.startswith(want) for e in errs), "stderr lacks %r: %r" % (want, p.stderr))
    must(any("bad tostring" in e for e in errs), "a failing __tostring: %r" % p.stderr)


def sc_help(d):
    """.help lists the modules registered (one added at the prompt too)."""
    p = piped(d, 'package.preload["my.probe"] = function() return {} end\n.help\n')
    mods = re.search(r"^modules \(require \"NAME\"\): (.*)$", p.stdout, re.M)
    must(mods, "no module line: %r" % p.stdout)
    names = mods.group(1).split(", ")
    for m in ["e2e", "e2e.json", "e2e.http", "e2e.remote", "e2e.sandbox", "my.probe"]:
        must(m in names, "%s not listed: %r" % (m, names))
    must("string" not in names and re.search(r"^Lua's libraries.*\bstring\b", p.stdout, re.M),
         "Lua's libraries apart: %r" % p.stdout)
    must(".help" in p.stdout and ".exit" in p.stdout, "commands listed: %r" % p.stdout)


def sc_masking(d):
    """A secret the masker knows never reaches the output."""
    p = piped(d, 'print(os.getenv("ABX_SANDBOX_API_KEY"))\nos.getenv("ABX_SANDBOX_API_KEY")\n'
                 '{key = os.getenv("ABX_SANDBOX_API_KEY")}\n'
                 'error("leak " .. os.getenv("ABX_SANDBOX_API_KEY"))\n',
              env=env_of(d, {"ABX_SANDBOX_API_KEY": SECRET}))
    must(SECRET not in p.stdout + p.stderr, "the secret was printed")
    must(p.stdout.splitlines() == ["[MASKED]", "[MASKED]", '{key = "[MASKED]"}'],
         "stdout: %r" % p.stdout)
    must("error: stdin:1: leak [MASKED]" in p.stderr, "stderr: %r" % p.stderr)


def sc_exits(d):
    """os.exit(n) ends with n (nothing after it runs); end of input 0."""
    for text, code in [("os.exit(3)\nprint('after')\n", 3), ("os.exit()\n", 0),
                       ("os.exit(false)\n", 1), ("print('x')\n", 0), ("", 0),
                       (".exit\nprint('after')\n", 0)]:
        p = piped(d, text)
        must(p.returncode == code, "%r: exit %d, want %d" % (text, p.returncode, code))
        must("after" not in p.stdout, "%r: ran past the end" % text)


def sc_options(d):
    p = run([BIN, "repl", "--help"], cwd=d, env=env_of(d))
    must(p.returncode == 0, "--help: exit %d" % p.returncode)
    for opt in ["--local", "--profile", "--trace-http", ".abx-e2e/repl_history", "Ctrl-C"]:
        must(opt in p.stdout, "repl --help lacks %s" % opt)
    p = run([BIN, "--help"], cwd=d, env=env_of(d))
    must("abx-e2e repl [--local" in p.stdout, "abx-e2e --help names repl")
    for args, want in [(["--bogus"], "'--bogus'"), (["script.lua"], "'script.lua'"),
                       (["--profile", "fc"], "needs --local"),
                       (["--local", "--profile", "aws"], "e2b or fc, got 'aws'")]:
        p = run([BIN, "repl", *args], cwd=d, env=env_of(d))
        must(p.returncode == 4 and want in p.stderr and "usage:" in p.stderr,
             "repl %s: exit %d, %r" % (args, p.returncode, p.stderr))


def sc_terminal(d):
    """On a terminal: prompts, continuation, Ctrl-C cancels a line and
    interrupts a statement, twice in a row exits 0; history written,
    masked, without the cancelled line."""
    t = Pty(d, env=env_of(d, {"ABX_SANDBOX_API_KEY": SECRET}))
    t.expect(r"abx-e2e repl \(Lua")
    t.line("1+1")
    t.expect(r"\n2\n")
    t.line("for i = 1, 2 do")
    t.line("print('n' .. i) end", cont=True)
    t.expect(r"n1\nn2\n")
    t.prompt()
    t.send("cancelled_line()")
    t.send("\x03")
    t.expect(re.escape(HINT))
    t.line("6*7")
    t.expect(r"\n42\n")
    t.line("print('spin') while true do end")  # a marker: it runs
    t.expect(r"\nspin\n")
    t.send("\x03")
    t.expect(r"interrupted \(Ctrl-C\)")
    t.line("'alive'")  # the Ctrl-C that interrupted is not a first of two
    t.expect(r"\nalive\n")
    t.line('"%s"' % SECRET)
    t.expect(r"\[MASKED\]")
    t.prompt()
    t.send("\x03")
    t.expect(re.escape(HINT))
    t.prompt()
    t.send("\x03")
    code = t.wait()
    must(code == 0, "two Ctrl-C: exit %d\n%s" % (code, t.out[-2000:]))
    must("cancelled_line" not in t.out.split(HINT, 1)[1], "the cancelled line ran")
    hist = read_text(os.path.join(d, HISTORY))
    must(hist is not None, "no %s written" % HISTORY)
    must(SECRET not in hist and '"[MASKED]"' in hist, "history masked: %r" % hist)
    lines = hist.splitlines()
    must(lines[:3] == ["1+1", "for i = 1, 2 do\\nprint('n' .. i) end", "6*7"],
         "history entries: %r" % lines)
    must("cancelled_line()" not in hist, "a cancelled line is not history")


def sc_history(d):
    """The history is loaded (Up recalls the last entry), capped at 500
    entries, and saved on Ctrl-D (exit 0)."""
    write_file(os.path.join(d, HISTORY),
               "".join("old_%d = %d\n" % (i, i) for i in range(600)) + "print('re' .. 'called')\n")
    t = Pty(d)
    t.prompt()
    t.send("\x1b[A")  # Up: the last entry of the file
    t.expect(r"print\('re' \.\. 'called'\)")
    t.send("\r")
    t.expect(r"\nrecalled\n")
    t.line("new_entry = 1")
    t.prompt()
    t.send("\x04")
    code = t.wait()
    must(code == 0, "Ctrl-D: exit %d" % code)
    lines = read_text(os.path.join(d, HISTORY), "").splitlines()
    must(len(lines) == 500, "history holds %d entries, want 500" % len(lines))
    must(lines[-1] == "new_entry = 1" and lines[-2] == "print('re' .. 'called')",
         "newest entries last: %r" % lines[-3:])


def sc_pipe_no_history(d):
    """Piped input is a script, not a session: no prompt, no history."""
    p = piped(d, "1+1\n")
    must(p.stdout == "2\n" and "> " not in p.stdout, "stdout: %r" % p.stdout)
    must(not os.path.exists(os.path.join(d, HISTORY)), "piped lines written to the history")


PROMPT = {"values": sc_values, "errors": sc_errors, "help": sc_help, "masking": sc_masking,
          "exits": sc_exits, "options": sc_options, "terminal": sc_terminal,
          "history": sc_history, "pipe_no_history": sc_pipe_no_history}


# ---- sandboxes: abx-local ---------------------------------------------------

CREATE = ['sandbox = require "e2e.sandbox"', 'sbx = sandbox.create{template = "base"}',
          'print("ID=" .. sbx.sandbox_id)']


def run_processes(run_id):
    want = ("E2E_RUN_ID=" + run_id).encode()
    return pids_where("environ", lambda env: want in env.split(b"\0"))


def end_by(t, how):
    """Ends the REPL t as how says; the exit code it should give."""
    if how == "eof":
        t.prompt()
        t.send("\x04")
        return 0
    if how == "os_exit":
        t.line("os.exit(3)")
        return 3
    t.prompt()
    t.send("\x03")
    t.expect(re.escape(HINT))
    t.prompt()
    t.send("\x03")
    return 0


def with_server(server, how, d, serial):
    run_id = "repl%d-%d-%s" % (os.getpid(), serial, how.replace("_", ""))
    t = Pty(d, env=abxlocal.e2e_env(server, run_id, drop=ALL_ABX, TERM="xterm",
                                    LANG="C.UTF-8", HOME=d, NO_COLOR="1"))
    for line in CREATE:
        t.line(line)
    sid = t.expect(r"\nID=(\S+)\n").group(1)
    must(server.ids({"e2e": run_id}) == [sid], "%s: the sandbox is tagged with the run id" % how)
    want = end_by(t, how)
    code = t.wait()
    must(code == want, "%s: exit %d, want %d\n%s" % (how, code, want, t.out[-2000:]))
    # Right after the REPL ended, not eventually: it kills before exiting.
    must(server.get(sid)[0] == 404, "%s: sandbox %s still there" % (how, sid))
    must(server.ids({"e2e": run_id}) == [], "%s: sandboxes tagged %s left" % (how, run_id))
    must("repl: killed 1 sandbox at exit" in t.out, "%s: kill not reported:\n%s"
         % (how, t.out[-2000:]))
    ledger = os.path.join(d, ".abx-e2e", "runs", run_id + ".ledger")
    must(not os.path.exists(ledger), "%s: a ledger is left for the janitor" % how)
    hist = read_text(os.path.join(d, HISTORY), "")
    must(CREATE[1] in hist.splitlines(), "%s: the history is saved: %r" % (how, hist))


def with_local(d):
    """`repl --local`: its own abx-local; when the REPL ends, no process of
    the run (abx-local, the sandbox, the guardian) is left."""
    run_id = "repl%d-local" % os.getpid()
    env = env_of(d, {"E2E_RUN_ID": run_id, "ABX_LOCAL_BIN": abxlocal.LOCAL_BIN})
    t = Pty(d, "--local", env=env)
    for line in CREATE:
        t.line(line)
    t.expect(r"\nID=(\S+)\n")
    must(len(run_processes(run_id)) > 2, "the run's abx-local and sandbox are running")
    t.prompt()
    t.send("\x04")
    code = t.wait()
    must(code == 0, "--local, Ctrl-D: exit %d\n%s" % (code, t.out[-2000:]))
    must("repl: killed 1 sandbox at exit" in t.out, "kill not reported:\n" + t.out[-2000:])
    must(re.search(r"^sandboxes: 1 created, 1 deleted, 0 kept, 0 left$", t.out, re.M),
         "the run's account:\n" + t.out[-2000:])
    # abx-local was stopped and waited for; its sandboxes' last processes
    # may still be on their way out (bounded).
    left = [] if until(lambda: not run_processes(run_id), 10) else run_processes(run_id)
    for pid in left:  # ours: started with this run's id
        os.kill(pid, signal.SIGKILL)
    must(left == [], "processes of the run left: %r" % left)


def sandboxes():
    extra = ["--data-listen", "127.0.0.1:0"]
    if os.environ.get("ABX_TEMPLATES_DIR"):
        extra += ["--templates", os.environ["ABX_TEMPLATES_DIR"]]
    server = abxlocal.Server(extra=extra, prefix="abx-repl-state-")
    serial = [0]

    def one(how):
        if how == "server_log":  # last: the server stops
            server.stop()
            must(not sanitizer_report(server.stderr()), "abx-local's log: a sanitizer "
                 "report:\n" + server.stderr()[-3000:])
            return
        d = scratch("abx-repl-")
        serial[0] += 1
        try:
            if how == "local":
                with_local(d)
            else:
                with_server(server, how, d, serial[0])
        except BaseException:
            print("     (kept %s)" % d)
            raise
        remove(d)
    try:
        return run_scenarios(["eof", "os_exit", "ctrl_c", "local", "server_log"], one,
                             (Fail, OSError, subprocess.TimeoutExpired))
    finally:
        server.stop()
        remove(server.state_dir)


def main():
    global BIN
    a = cli(["prompt", "sandboxes"])
    BIN = a.bin
    if a.scenario == "sandboxes":
        return sandboxes()

    def one(name):
        d = scratch("abx-repl-")
        try:
            PROMPT[name](d)
        except BaseException:
            print("     (kept %s)" % d)
            raise
        remove(d)
    return run_scenarios(list(PROMPT), one, (Fail, OSError, subprocess.TimeoutExpired))


if __name__ == "__main__":
    sys.exit(main())
