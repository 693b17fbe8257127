"""process.Process: Start streaming, exit status, env, cwd, users,
deadlines, background processes with Connect/SendInput/CloseStdin/
SendSignal/List, keepalives, concurrency, the template start command."""
import base64
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd  # noqa: E402
from abxtest import check, done, eq, outputs, until  # noqa: E402

B64 = lambda s: base64.b64encode(s).decode()  # noqa: E731


def bash(cmd):
    return {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}


def listed(e):
    st, body = e.unary("process.Process/List", {})
    return {p["pid"]: p for p in body.get("processes", [])}


def wait_gone(e, pid, bound=15):
    return until(lambda: pid not in listed(e), bound, step=0.1)


START = {"cmd": "echo started-$(id -un) > /tmp/started; exec sleep 1000", "user": "user"}

with Envd(sys.argv[1], env_vars={"FOO": "global", "BAR": "b"}, start=START) as e:
    # Output is streamed as produced: the process waits for a file the test
    # creates only after it has received the first line.
    s = e.stream("process.Process/Start", {"process": bash(
        "echo first; for i in $(seq 300); do [ -f /tmp/go ] && break; sleep 0.1; done;"
        " [ -f /tmp/go ] && echo saw-go")})
    eq(s.status, 200, "Start 200")
    f, m, _ = s.next()
    check("start" in m["event"] and m["event"]["start"]["pid"] > 0, "first event is start")
    f, m, _ = s.next()
    eq(base64.b64decode(m["event"]["data"]["stdout"]), b"first\n", "first line before exit")
    open(os.path.join(e.tmp, "go"), "w").close()
    rest, end = s.all()
    out, _, endev = outputs(rest)
    eq(out, b"saw-go\n", "process continued after the client saw line one")
    eq(end, {}, "OK end-of-stream")
    eq(endev, {"exited": True, "status": "exit status 0"}, "exit 0 end event omits exitCode")

    out, err, endev = outputs(e.run("echo out; echo err >&2; exit 7")[0])
    eq((out, err), (b"out\n", b"err\n"), "stdout and stderr")
    eq(endev, {"exitCode": 7, "exited": True, "status": "exit status 7",
               "error": "exit status 7"}, "exit 7 end event")

    out, _, _ = outputs(e.run(
        "echo $E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID $FOO $BAR $MINE $HOME $USER $LOGNAME;"
        " [ -n \"$PATH\" ] && echo path-set",
        envs={"FOO": "request", "MINE": "m"})[0])
    eq(out, b"true sbxtest base request b m /home/user user user\npath-set\n",
       "environment layering")
    out, _, _ = outputs(e.run("pwd", cwd="/tmp")[0])
    eq(out, b"/tmp\n", "cwd")
    out, _, _ = outputs(e.run("pwd", cwd="~/")[0])
    eq(out, b"/home/user\n", "cwd ~ expansion")
    ev, end = e.run("pwd", cwd="/nope")
    eq(end.get("error"), {"code": "invalid_argument",
                          "message": "cwd '/nope' does not exist"}, "missing cwd")
    eq(ev, [], "no events before a start failure")
    ev, end = e.stream("process.Process/Start", {"process": {"cmd": "no-such-binary"}}).all()
    eq(end.get("error", {}).get("code"), "invalid_argument", "exec failure")
    check("executable file not found" in end["error"].get("message", ""), "exec failure message")

    # PTY: interactive bash, resize, input via input.pty, output as data.pty.
    s = e.stream("process.Process/Start", {
        "process": {"cmd": "/bin/bash", "args": ["-i", "-l"],
                    "envs": {"TERM": "xterm-256color"}},
        "pty": {"size": {"rows": 24, "cols": 80}}})
    pid = s.next()[1]["event"]["start"]["pid"]
    eq(e.unary("process.Process/Update", {"process": {"pid": pid},
                                          "pty": {"size": {"rows": 30, "cols": 100}}}),
       (200, {}), "Update resizes the pty")
    st, body = e.unary("process.Process/SendInput",
                       {"process": {"pid": pid}, "input": {"stdin": B64(b"x")}})
    eq((st, body.get("code")), (500, "internal"), "stdin on a PTY process")
    e.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {
        "pty": B64(b"stty size; tty; echo $TERM; exit 5\n")}})
    ev, end = s.all()
    pty = b"".join(base64.b64decode(m["event"]["data"]["pty"])
                   for m in ev if "data" in m["event"])
    check(b"30 100" in pty, "pty size seen by the process")
    check(b"/dev/pts/" in pty, "process has a terminal")
    check(b"xterm-256color" in pty, "pty envs")
    check(not any("stdout" in m["event"].get("data", {}) for m in ev), "pty output only as data.pty")
    eq(outputs(ev)[2].get("exitCode"), 5, "pty process exit code")
    s = e.stream("process.Process/Start", {"process": bash("sleep 100")})
    pid = s.next()[1]["event"]["start"]["pid"]
    st, body = e.unary("process.Process/Update", {"process": {"pid": pid},
                                                  "pty": {"size": {"rows": 1, "cols": 1}}})
    eq((st, body.get("code")), (500, "internal"), "Update pty of a non-PTY process")
    st, body = e.unary("process.Process/SendInput",
                       {"process": {"pid": pid}, "input": {"pty": B64(b"x")}})
    eq((st, body.get("code")), (500, "internal"), "pty input to a non-PTY process")
    e.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.close()

    # Binary output and chunking.
    out, _, endev = outputs(e.run("head -c 1000000 /dev/zero | tr '\\0' a")[0])
    eq(len(out), 1000000, "1 MB of output")
    check(out == b"a" * 1000000, "output content")
    # More output than any buffer cap, produced faster than it is read.
    ev, end = e.run("head -c 40000000 /dev/zero")
    eq((sum(len(base64.b64decode(m["event"]["data"]["stdout"]))
            for m in ev if "data" in m["event"]), end), (40000000, {}),
       "40 MB streamed without loss")
    ev, _ = e.run("head -c 200000 /dev/urandom")
    sizes = [len(base64.b64decode(m["event"]["data"]["stdout"]))
             for m in ev if "data" in m["event"]]
    check(sizes and max(sizes) <= 32768, "data chunks at most 32 KiB")

    # Deadline: Connect-Timeout-Ms kills the process.
    ev, end = e.stream("process.Process/Start", {"process": bash("sleep 30")},
                       extra={"Connect-Timeout-Ms": "800"}).all()
    eq(end.get("error", {}).get("code"), "deadline_exceeded", "deadline error")
    pid = ev[0]["event"]["start"]["pid"]
    check(wait_gone(e, pid), "timed-out process is gone")
    # ... even when the client has gone away.
    s = e.stream("process.Process/Start", {"process": bash("sleep 30")},
                 extra={"Connect-Timeout-Ms": "1500"})
    pid = s.next()[1]["event"]["start"]["pid"]
    s.close()
    check(pid in listed(e), "background process runs after disconnect")
    check(wait_gone(e, pid), "disconnected process killed at its deadline")

    # Background process: disconnect, List, Connect, SendInput, signal.
    s = e.stream("process.Process/Start", {"process": bash(
        "while read line; do echo got:$line; done"), "tag": "bg", "stdin": True})
    pid = s.next()[1]["event"]["start"]["pid"]
    s.close()
    p = listed(e).get(pid)
    check(p is not None, "List shows the background process")
    eq(p and p.get("tag"), "bg", "List tag")
    eq(p and p["config"], bash("while read line; do echo got:$line; done"), "List config")
    check(START["cmd"] not in str(listed(e)), "start command is not listed")
    st, _ = e.unary("process.Process/SendInput",
                    {"process": {"pid": pid}, "input": {"stdin": B64(b"early\n")}})
    eq(st, 200, "SendInput while nobody listens")
    c = e.stream("process.Process/Connect", {"process": {"tag": "bg"}})
    eq(c.next()[1]["event"]["start"]["pid"], pid, "Connect by tag starts with start{pid}")
    eq(base64.b64decode(c.next()[1]["event"]["data"]["stdout"]), b"got:early\n",
       "output produced while detached is delivered on Connect")
    e.unary("process.Process/SendInput",
            {"process": {"pid": pid}, "input": {"stdin": B64(b"hello\n")}})
    eq(base64.b64decode(c.next()[1]["event"]["data"]["stdout"]), b"got:hello\n",
       "Connect sees new output")
    st, body = e.unary("process.Process/SendSignal",
                       {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    eq((st, body), (200, {}), "SendSignal SIGKILL")
    rest, end = c.all()
    eq(outputs(rest)[2], {"exitCode": -1, "status": "signal: killed",
                          "error": "signal: killed"}, "killed end event")
    eq(end, {}, "Connect stream ends OK")
    check(wait_gone(e, pid), "killed process leaves List")
    ev, end = e.stream("process.Process/Connect", {"process": {"pid": pid}}).all()
    eq(outputs(ev)[2], {"exitCode": -1, "status": "signal: killed",
                        "error": "signal: killed"}, "late Connect gets the end event")

    # SIGTERM as an integer enum, CloseStdin.
    s = e.stream("process.Process/Start", {"process": bash("sleep 100")})
    pid = s.next()[1]["event"]["start"]["pid"]
    e.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": 15})
    eq(outputs(s.all()[0])[2].get("status"), "signal: terminated", "SIGTERM")
    s = e.stream("process.Process/Start", {"process": bash("cat; echo closed"), "stdin": True})
    pid = s.next()[1]["event"]["start"]["pid"]
    e.unary("process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": B64(b"abc")}})
    eq(e.unary("process.Process/CloseStdin", {"process": {"pid": pid}}), (200, {}), "CloseStdin")
    out, _, endev = outputs(s.all()[0])
    eq((out, endev.get("status")), (b"abcclosed\n", "exit status 0"), "stdin closed -> EOF")

    # Errors.
    s = e.stream("process.Process/Start", {"process": bash("sleep 100"), "stdin": False})
    pid = s.next()[1]["event"]["start"]["pid"]
    st, body = e.unary("process.Process/SendInput",
                       {"process": {"pid": pid}, "input": {"stdin": B64(b"x")}})
    eq((st, body.get("code")), (500, "internal"), "SendInput without stdin")
    e.unary("process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
    s.close()
    for meth, extra in (("SendInput", {"input": {"stdin": ""}}),
                        ("SendSignal", {"signal": "SIGNAL_SIGKILL"}),
                        ("CloseStdin", {}), ("Update", {})):
        req = {"process": {"pid": 999999}}
        req.update(extra)
        st, body = e.unary("process.Process/" + meth, req)
        eq((st, body.get("code"), body.get("message")),
           (404, "not_found", "process with pid 999999 not found"), meth + " unknown pid")
    st, body = e.unary("process.Process/SendSignal",
                       {"process": {"pid": 1}, "signal": "SIGNAL_SIGHUP"})
    eq(st, 400, "unknown signal name rejected")
    ev, end = e.stream("process.Process/Connect", {"process": {"pid": 999999}}).all()
    eq(end.get("error", {}).get("code"), "not_found", "Connect unknown pid")

    # Keepalives on a quiet stream.
    ev, end = e.stream("process.Process/Start", {"process": bash("sleep 2.5")},
                       extra={"Keepalive-Ping-Interval": "1"}).all()
    check(any("keepalive" in m["event"] for m in ev), "keepalive events sent")
    eq(ev[-1]["event"].get("end", {}).get("status"), "exit status 0", "end after keepalives")

    # Several concurrent streams (plus one quiet stream open throughout).
    quiet = e.stream("process.Process/Start", {"process": bash("sleep 100")})
    qpid = quiet.next()[1]["event"]["start"]["pid"]
    results = {}

    def worker(i):
        results[i] = outputs(e.run("for j in $(seq 200); do echo %d-$j; done" % i)[0])[0]

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    [t.start() for t in ts]
    [t.join(60) for t in ts]
    for i in range(6):
        eq(results.get(i), "".join("%d-%d\n" % (i, j) for j in range(1, 201)).encode(),
           "concurrent stream %d" % i)
    e.unary("process.Process/SendSignal", {"process": {"pid": qpid}, "signal": "SIGNAL_SIGKILL"})
    eq(outputs(quiet.all()[0])[2].get("status"), "signal: killed", "quiet stream ends")

    # The template start command ran as its user.
    with open(os.path.join(e.tmp, "started")) as f:
        eq(f.read(), "started-user\n", "start command ran as user")
done()
