"""The helpers every Python test script under tests/ shares (python3 stdlib
only): checks and their closing line, the command line, clean environments
and scratch directories, running abx-e2e and reading its reports, the
sanitizer and masking checks, /proc, fake HTTP servers and Connect
envelopes and streams. abx-local itself is abxlocal.py, beside this file.

A script puts this folder on sys.path itself, first thing, so that it runs
from any directory without installing and without ctest's help:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "lib"))

Two styles of checks, one closing line ("N passed, N failed"):
  - check()/eq() record a check and go on; done() lists the failed
    ones and exits 1 if any failed;
  - must() raises Fail, ending a scenario; run_scenarios() runs them one by
    one and counts the scenarios."""
import argparse
import base64
import glob
import http.server
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

# ---- checks ----------------------------------------------------------------

PASSED = []
FAILURES = []


def check(cond, what):
    """Records an expectation (the test goes on to report them all)."""
    if cond:
        print("ok   " + what)
        PASSED.append(what)
    else:
        print("FAIL " + what)
        FAILURES.append(what)
    return bool(cond)


def eq(got, want, what):
    return check(got == want, "%s (got %r, want %r)" % (what, got, want))


def closing_line(passed, failed):
    print("%d passed, %d failed" % (passed, failed), flush=True)


def done():
    """Exits 1 listing the failed checks, or when none ran (a test that
    checked nothing proved nothing), else 0."""
    if not PASSED and not FAILURES:
        print("FAIL no check ran: a test that checks nothing cannot pass")
        closing_line(0, 1)
        sys.exit(1)
    if FAILURES:
        print("%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  - " + f)
    closing_line(len(PASSED), len(FAILURES))
    sys.exit(1 if FAILURES else 0)


class Fail(Exception):
    """A failed must(): the scenario ends here."""


def must(cond, msg):
    if not cond:
        raise Fail(msg)


def run_scenarios(names, one, errors=(Fail,)):
    """one(name) for every name: a scenario fails when it raises one of
    errors. Prints "ok   NAME (T s)" or "FAIL NAME: ...", then the closing
    line; returns the exit status."""
    passed = failed = 0
    for name in names:
        t0 = time.time()
        try:
            one(name)
        except errors as e:
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
            continue
        passed += 1
        print("ok   %s (%.1fs)" % (name, time.time() - t0), flush=True)
    if not passed and not failed:
        print("FAIL no scenario ran: a test that checks nothing cannot pass", flush=True)
        failed = 1
    closing_line(passed, failed)
    return 1 if failed else 0


def teller(prefix):
    """print() with the script's prefix, flushed (its lines stay in order
    with the output of the programs it runs)."""
    return lambda msg: print("%s: %s" % (prefix, msg), flush=True)


def tail(text, n=3000):
    return text[-n:]


def until(fn, secs=10, step=0.05):
    """fn() until truthy or secs passed (polled every step s); its last value."""
    deadline = time.time() + secs
    v = fn()
    while not v and time.time() < deadline:
        time.sleep(step)
        v = fn()
    return v


# ---- command line, environment, files --------------------------------------

def cli(scenarios=None, src=False, extra_names=()):
    """The usual command line: --bin ABX_E2E (made absolute), --src DIR if
    src, and a SCENARIO (one of scenarios, or of extra_names) if scenarios."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    if src:
        ap.add_argument("--src", required=True)
    if scenarios is not None:
        ap.add_argument("scenario", choices=sorted(scenarios) + list(extra_names))
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    return a


# Variable names to drop (a name ending in "_" is a prefix).
PLATFORM = ("ABX_SANDBOX_", "E2B_")          # credentials and URLs
KNOBS = ("E2E_",)                            # the suite's settings
CAPS = ("E2E_PLATFORM", "E2E_CAPS", "ABX_LOCAL_PROFILE", "ABX_LOCAL_VARY")  # platform choice
ALL_ABX = ("ABX_", "E2B_", "E2E_")           # everything of the project


def scrubbed_env(drop, **add):
    """This process's environment without the variables drop names, plus
    add (a None value removes the variable)."""
    pre = tuple(d for d in drop if d.endswith("_"))
    # Under GitHub Actions abx-e2e annotates and appends to the job's
    # summary: never from a test's own runs, unless it asks (add).
    exact = {d for d in drop if not d.endswith("_")} | {
        "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(pre) and k not in exact}
    for k, v in add.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def scratch(prefix, cases=None, link=False):
    """A new temporary directory; with cases (a folder), a copy of it (or a
    symlink to it) named cases/ inside."""
    d = tempfile.mkdtemp(prefix=prefix)
    if cases:
        if link:
            os.symlink(cases, os.path.join(d, "cases"))
        else:
            shutil.copytree(cases, os.path.join(d, "cases"))
    return d


def remove(path):
    shutil.rmtree(path, ignore_errors=True)


def copy_suite(src, dest):
    """The suite's test files, SRC/tests-lua/*.lua, copied to
    DEST/tests-lua: a run there sees no .env of the developer's."""
    os.makedirs(os.path.join(dest, "tests-lua"))
    for f in glob.glob(os.path.join(src, "tests-lua", "*.lua")):
        shutil.copy(f, os.path.join(dest, "tests-lua"))


def write_file(path, text, mode=None):
    """Writes text (str or bytes), making the folders; path."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
    if mode is not None:
        os.chmod(path, mode)
    return path


def read_text(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def load_json(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


# ---- running abx-e2e and reading what it reports ---------------------------

def run(cmd, cwd=None, env=None, timeout=120, **kw):
    """subprocess.run with text output captured."""
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


def run_tee(cmd, cwd, env, log):
    """Runs cmd with its output shown as it comes and kept in the file log;
    (exit code, the output as text)."""
    chunks = []
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        for chunk in iter(lambda: p.stdout.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            f.write(chunk)
            chunks.append(chunk)
        rc = p.wait()
    return rc, b"".join(chunks).decode("utf-8", "replace")


def run_reported(binary, args, cwd, env, timeout=200, report="report.json"):
    """abx-e2e --json REPORT -rA ARGS in cwd: (process, report), the report
    {"tests": []} when the run wrote none; a sanitizer report in the output
    fails a check."""
    p = run([binary, "--json", report, "-rA", *args], cwd=cwd, env=env,
            timeout=timeout)
    doc = load_json(os.path.join(cwd, report))
    check_no_sanitizer(p.stdout + p.stderr, "abx-e2e " + " ".join(args))
    return p, doc if isinstance(doc, dict) else {"tests": []}


def outcomes(doc):
    """{node id: outcome} of a --json report (a node id's first record)."""
    out = {}
    for t in doc.get("tests", []):
        out.setdefault(t["nodeid"], t["outcome"])
    return out


def by_id(doc):
    """{node id: record} of a --json report."""
    return {t["nodeid"]: t for t in doc.get("tests", [])}


def summary_line(stdout):
    """pytest's closing line ("1 failed, 2 passed in 0.12s") without its
    '=' padding; Fail when there is none."""
    lines = [l for l in stdout.splitlines() if l.startswith("==") and " in " in l]
    must(lines, "no closing summary line in:\n" + stdout)
    return lines[-1].strip("= ")


def summary_counts(line):
    """{"passed": 2, "failed": 1, ...} of a closing line."""
    return {k: int(n) for n, k in re.findall(r"(\d+) (\w+)", line.split(" in ")[0])}


SANDBOX_LINE = re.compile(
    r"^sandboxes: (\d+) created, (\d+) deleted, (\d+) kept, (\d+) left$", re.M)


def sandbox_counts(text):
    """(created, deleted, kept, left) of the last `sandboxes: ...` line of a
    run's output, or None."""
    lines = SANDBOX_LINE.findall(text)
    return tuple(int(x) for x in lines[-1]) if lines else None


# ---- sanitizers, secrets ---------------------------------------------------

SANITIZER_MARKS = ("Sanitizer", "runtime error:")


def sanitizer_report(text):
    """Whether text holds a report of a sanitizer build (ABX_SANITIZE)."""
    return any(m in text for m in SANITIZER_MARKS)


def check_no_sanitizer(text, what):
    """A check: no sanitizer report in text (shown when there is one)."""
    ok = check(not sanitizer_report(text), "%s: no sanitizer report" % what)
    if not ok:
        print(tail(text, 6000))
    return ok


def secret_forms(secret, public=()):
    """The encodings under which a leaked secret would show up, as
    {form: what it is}: "raw"; "base64" (standard / URL-safe, with and
    without padding); "URL-encoded" (once, twice: a signed URL inside another
    URL), "form-encoded"; and every run of 16+ letters and digits in it,
    which survives any encoding that leaves alphanumerics alone (JSON, double
    percent-encoding...), but those in public (a sandbox id in a signed
    URL's host is printed legitimately). Forms under 8 characters are left
    out."""
    raw = secret.encode()
    once = urllib.parse.quote(secret, safe="")
    out = {}
    for f in re.findall(r"[A-Za-z0-9]{16,}", secret):
        if f not in public:
            out[f] = "a 16+ alphanumeric run of it"
    for b in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        out[b] = out[b.rstrip("=")] = "base64"
    out[urllib.parse.quote_plus(secret)] = "form-encoded"
    out[urllib.parse.quote(once, safe="")] = "double URL-encoded"
    out[once] = "URL-encoded"
    out[secret] = "raw"
    return {f: k for f, k in out.items() if len(f) >= 8}


def check_not_printed(text, secrets, what):
    """secrets: {label: secret}; a check each that the secret is not in
    text (the label, never the secret, is reported)."""
    for label, s in secrets.items():
        check(s not in text, "%s: %s never printed" % (what, label))


# ---- /proc -----------------------------------------------------------------

def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def pids_where(name, test):
    """Pids whose /proc/PID/<name> (bytes) passes test."""
    out = []
    for pid in all_pids():
        try:
            with open("/proc/%d/%s" % (pid, name), "rb") as f:
                if test(f.read()):
                    out.append(pid)
        except OSError:
            continue
    return out


def proc_stat(pid):
    """(comm, the fields after it) of /proc/PID/stat: fields[0] is the
    state, [1] the parent, [19] the start time; None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return None
    return st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()


def proc_state(pid):
    """The state letter of pid ("Z" a zombie), or "gone"."""
    st = proc_stat(pid)
    return st[1][0] if st else "gone"


def proc_gone(pid):
    """Exited (a zombie included)."""
    return proc_state(pid) in ("gone", "Z")


def boot_ticks():
    """Now, in the unit of /proc/N/stat's start time (clock ticks since boot)."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def pid_ns(pid):
    return os.readlink("/proc/%d/ns/pid" % pid)


def pidns_procs(ns, started_by=None):
    """{host pid: (comm, start time)} of the processes in PID namespace ns
    (a pid_ns()), those started at the latest at started_by (boot ticks)
    when given: a namespace number freed by a killed sandbox may be reused
    by a newer one (ctest -j)."""
    out = {}
    for pid in all_pids():
        try:
            if pid_ns(pid) != ns:
                continue
            comm, fields = proc_stat(pid)
            start = int(fields[19])
        except (OSError, TypeError, ValueError, IndexError):
            continue
        if started_by is None or start <= started_by:
            out[pid] = (comm, start)
    return out


# ---- fake HTTP servers -----------------------------------------------------

class FakeHandler(http.server.BaseHTTPRequestHandler):
    """Base of the fake servers: HTTP/1.1, quiet, reply() and read_body()."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", ctype="application/json", extra=None):
        """One whole response; body: bytes, str, or a dict or list (JSON)."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        """The request body (Content-Length or chunked), b"" when none."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        data = b""
        while len(data) < n:
            chunk = self.rfile.read(min(1 << 20, n - len(data)))
            if not chunk:
                break
            data += chunk
        return data


def serve_in_thread(handler):
    """A threading HTTP server of handler on a free 127.0.0.1 port, served
    from a daemon thread; (server, its base URL). server.shutdown() ends it."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, "http://127.0.0.1:%d" % srv.server_address[1]


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def err_shape(st, js, want):
    """A REST error: status want and a {"code": want, "message": "..."} body."""
    return (st == want and isinstance(js, dict) and js.get("code") == want
            and isinstance(js.get("message"), str) and js["message"] != "")


# ---- Connect ---------------------------------------------------------------

def envelope(obj, flags=0):
    """One Connect envelope: flags byte, big-endian length, JSON (or bytes)."""
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return struct.pack(">BI", flags, len(data)) + data


class Stream:
    """An open Connect server stream; next() returns (flags, message,
    t_arrival), or None at the end of the body."""

    def __init__(self, conn, resp):
        self.conn, self.resp, self.buf = conn, resp, b""
        self.status = resp.status

    def next(self):
        while True:
            if len(self.buf) >= 5:
                flags, n = struct.unpack(">BI", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    payload = self.buf[5:5 + n]
                    self.buf = self.buf[5 + n:]
                    return flags, json.loads(payload), time.time()
            chunk = self.resp.read1(65536)
            if not chunk:
                return None
            self.buf += chunk

    def all(self):
        """(messages, end-of-stream message or None); closes the stream."""
        msgs, end = [], None
        while True:
            m = self.next()
            if m is None:
                break
            if m[0] & 2:
                end = m[1]
                break
            msgs.append(m[1])
        self.close()
        return msgs, end

    def close(self):
        self.conn.close()


def outputs(events):
    """Concatenated stdout, stderr and the end event of a process stream."""
    out, err, end = b"", b"", None
    for m in events:
        ev = m.get("event", {})
        d = ev.get("data")
        if d:
            out += base64.b64decode(d.get("stdout", ""))
            err += base64.b64decode(d.get("stderr", ""))
        if "end" in ev:
            end = ev["end"]
    return out, err, end


def raw_http(addr, data, wait=3.0):
    """Sends data on a fresh connection; (everything answered, closed by the
    server within wait)."""
    host, port = addr.rsplit(":", 1)
    c = socket.create_connection((host, int(port)), 5)
    c.sendall(data)
    c.settimeout(wait)
    got, closed = b"", False
    try:
        while True:
            x = c.recv(65536)
            if not x:
                closed = True
                break
            got += x
    except socket.timeout:
        pass
    c.close()
    return got, closed
