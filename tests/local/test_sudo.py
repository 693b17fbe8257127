"""abx-local: sudo in a sandbox (docs/security.md, "sudo").

  test_sudo.py [--runtime bwrap|gvisor]

E2B's base image lets its default user sudo without a password, and E2B's
own SDK tests use it (`sudo echo "$FOO"`). Every sandbox process runs with
no_new_privs, so a setuid sudo cannot work; /usr/bin/sudo is abx-local's
client, and envd, the sandbox's root, runs the command. What it must do,
as the default user of a sandbox on the e2b profile:

- run as root (-u: as another user), with the caller's stdin, stdout,
  stderr and working folder, in sudo's reset environment (-E keeps it);
- end as the command ended: its exit code, or its signal;
- refuse any other user (only root and the default user may);
- end everything the command started when the client goes: killed, or
  its own command's deadline passed.

On the fc profile (FC's documentation names no sudo) it says there is no
sudo service and exits 1. On 899205f `sudo` was not found (127)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import Server, runtime_cli  # noqa: E402
from abxtest import check, done, until  # noqa: E402

# The base template has no procps: root's sleeps are looked for in /proc.
ROOT_SLEEPS = ("for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = sleep ] && "
               "stat -c %u $p; done | grep -cx 0")


def run(s, sid, cmd, user="user", **kw):
    code, out, err = s.run_end(sid, cmd, user=user, errors=False, **kw)[:3]
    return code, out, err


def e2b(s):
    sid = s.create("base", timeout=300)["sandboxID"]
    cases = [
        ("sudo id -u", 0, "0\n", "runs as root"),
        ("sudo -u user id -u", 0, "1000\n", "-u runs as that user"),
        ("echo hi | sudo cat", 0, "hi\n", "the caller's stdin and stdout"),
        ("sudo sh -c 'echo oops >&2' 2>&1", 0, "oops\n", "the caller's stderr"),
        ("cd /tmp && sudo pwd", 0, "/tmp\n", "the caller's working folder"),
        ("sudo -i pwd", 0, "/root\n", "-i: the target's home"),
        ("sudo sh -c 'exit 7'; echo $?", 0, "7\n", "the command's exit code"),
        ("sudo sh -c 'kill -KILL $$'; echo $?", 0, "137\n", "the command's signal"),
        ("FOO=bar sudo sh -c 'echo \"[$FOO] $USER $HOME $SUDO_USER\"'", 0,
         "[] root /root user\n", "sudo's reset environment"),
        ("FOO=bar sudo -E sh -c 'echo \"[$FOO] $USER\"'", 0, "[bar] root\n", "-E keeps it"),
        ("sudo nosuch-cmd; echo $?", 0, "1\n", "a missing command: exit 1"),
        ("sudo -Z; echo $?", 0, "1\n", "an unknown option: exit 1"),
    ]
    for cmd, want_code, want_out, what in cases:
        code, out, err = run(s, sid, cmd)
        check(code == want_code and out == want_out, "%s: %r -> %s %r (stderr %r)"
              % (what, cmd, code, out, err[-200:]))
    # E2B's own SDK test: a variable given to one command is not seen by
    # a later sudo (bash expands "$FOO" before sudo runs).
    code, out, _ = run(s, sid, "sudo echo \"$FOO\"", envs={"FOO": "bar"})
    check(code == 0 and out == "bar\n", "sudo echo \"$FOO\" with FOO given: %r" % out)
    code, out, _ = run(s, sid, "sudo echo \"$FOO\"")
    check(code == 0 and out == "\n", "a later sudo echo \"$FOO\" prints nothing: %r" % out)
    # Anyone else is refused, root is served.
    code, out, err = run(s, sid, "setpriv --reuid=65534 --regid=65534 --clear-groups sudo id; "
                         "echo $?", user="root")
    check(out == "1\n" and "not in the sudoers file" in err,
          "nobody is refused: %r %r" % (out, err[-200:]))
    code, out, _ = run(s, sid, "sudo id -u", user="root")
    check(code == 0 and out == "0\n", "root may sudo: %r" % out)
    # The client killed: the root command ends with it. (Its output goes
    # elsewhere: a sleep left holding it would hold this command open.)
    code, out, err = run(s, sid, "sudo sleep 300 >/dev/null 2>&1 & sleep 1; " + ROOT_SLEEPS
                         + "; kill -KILL $!; sleep 0.5; " + ROOT_SLEEPS)
    check(out.split() == ["1", "0"], "a killed client takes its root command with it "
          "(root sleeps before and after: %r, %r)" % (out, err[-200:]))
    # The caller's deadline: everything it ran as root ends with it too.
    code, out, err = run(s, sid, "sudo sh -c 'sleep 300 & sleep 300' >/dev/null 2>&1",
                         deadline_ms=1500)
    left = until(lambda: run(s, sid, ROOT_SLEEPS)[1].strip() == "0", 10, step=0.2)
    check(left, "the deadline of a command running sudo ends what sudo started (%s)"
          % run(s, sid, ROOT_SLEEPS)[1].strip())
    # What a sudo command leaves running does not hold one of the 32
    # places of the commands running: 40 leave a sleep, then one more runs.
    code, out, err = run(s, sid, "for i in $(seq 1 40); do sudo sh -c 'sleep 300 "
                         ">/dev/null 2>&1 &' || echo refused; done; sudo echo ran; "
                         + ROOT_SLEEPS)
    check(out.split() == ["ran", "40"], "sudo commands that left 40 sleeps behind free "
          "their places (%r %r)" % (out, err[-200:]))
    # (the base has no kill(1): sh's builtin)
    code, out, _ = run(s, sid, "sudo sh -c 'for p in /proc/[0-9]*; do "
                       "[ \"$(cat $p/comm 2>/dev/null)\" = sleep ] && kill ${p#/proc/}; done'; "
                       "sleep 0.5; " + ROOT_SLEEPS)
    check(out.strip() == "0", "sudo sh -c kill ends them (%r)" % out)
    # At most 32 run at once; the 33rd and later are told why. The 32
    # sleep (no polling loop: under gVisor fork churn costs host tasks)
    # until the refusals are in; then their clients are killed, which
    # ends them.
    code, out, err = run(s, sid, "rm -f /tmp/refused; p=; for i in $(seq 1 36); do "
                         "sudo sleep 120 2>>/tmp/refused & p=\"$p $!\"; done; "
                         "for t in $(seq 1 300); do "
                         "[ \"$(grep -c . /tmp/refused 2>/dev/null)\" -ge 4 ] && break; "
                         "sleep 0.1; done; kill $p 2>/dev/null; wait; cat /tmp/refused; "
                         "sleep 0.5; " + ROOT_SLEEPS)
    check(out == "sudo: too many sudo commands at once (32)\n" * 4 + "0\n",
          "36 at once: 32 run, 4 are told why, the 32 end with their clients (%r %r)"
          % (out, err[-200:]))
    # Many at once, each gets its own answer.
    code, out, _ = run(s, sid, "p=; for i in $(seq 1 20); do sudo sh -c \"exit $i\" & "
                       "p=\"$p $!\"; done; r=0; for j in $p; do wait $j; r=$((r + $?)); done; "
                       "echo $r")
    check(out == "%d\n" % sum(range(1, 21)), "20 sudos at once end as theirs did: %r" % out)
    s.kill(sid)


def fc(runtime):
    with Server(extra=["--profile", "fc"] + runtime) as s:
        sid = s.create("base", timeout=300)["sandboxID"]
        code, out, err = run(s, sid, "sudo id; echo $?")
        check(out == "1\n" and "no sudo service" in err,
              "fc: sudo says there is no sudo service (%r %r)" % (out, err[-200:]))
        s.kill(sid)


def main():
    rt, runtime = runtime_cli()
    with Server(extra=["--profile", "e2b"] + runtime) as s:
        e2b(s)
    fc(runtime)
    done()


if __name__ == "__main__":
    main()
