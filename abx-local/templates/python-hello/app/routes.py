"""Route handlers of agent-sandbox-server (see CONTRACT.md).

Every handler takes a server.Request and returns (status, headers, body)
where body is a dict/list (sent as JSON), bytes, or None. Failures raise
ApiError, which the server turns into {"error": {"code", "message"}}.
"""
import os
import platform
import posixpath
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from datetime import datetime, timezone

VERSION = "1.0.0"
SERVER = {"port": None, "started": time.time()}
OUTPUT_CAP = 1 << 20
MAX_TIMEOUT_S = 600
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|"
    r"SIGNATURE|COOKIE|SESSION|CERT", re.IGNORECASE)
SECRET_VALUE = re.compile(r"^(e2b_[0-9a-f]{8,}|sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|AKIA[0-9A-Z]{12,})$")
MASK = "***"


class ApiError(Exception):
    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status, self.code, self.headers = status, code, headers or {}


def error_body(exc):
    return {"error": {"code": exc.code, "message": str(exc)}}


def iso(ts):
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


# -- request field checks ------------------------------------------------------
def field(body, name, kind, required=False, default=None):
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError(400, "invalid_request", "'%s' is required" % name)
        return default
    ok = isinstance(value, kind) and not (kind in (int, float, (int, float)) and isinstance(value, bool))
    if not ok:
        tname = {str: "a string", dict: "an object", bool: "a boolean"}.get(kind, "a number")
        raise ApiError(400, "invalid_request", "'%s' must be %s" % (name, tname))
    return value


def env_field(body):
    env = field(body, "env", dict, default={})
    for k, v in env.items():
        if not isinstance(v, str) or not k or "=" in k or "\0" in k or "\0" in v:
            raise ApiError(400, "invalid_request", "'env' must map names to string values (bad entry '%s')" % k)
    return env


def cwd_field(body):
    cwd = field(body, "cwd", str, default=os.environ.get("HOME") or "/")
    if not os.path.isdir(cwd):
        raise ApiError(400, "invalid_request", "cwd '%s' does not exist or is not a directory" % cwd)
    return cwd


def cmd_field(body):
    cmd = field(body, "cmd", str, required=True)
    if not cmd.strip() or "\0" in cmd:
        raise ApiError(400, "invalid_request", "'cmd' must be a non-empty command line")
    return cmd


def child_env(extra):
    env = dict(os.environ)
    env.update(extra)
    return env


def cap(data):
    text = data.decode("utf-8", "replace")
    if len(data) > OUTPUT_CAP:
        return data[:OUTPUT_CAP].decode("utf-8", "replace"), True
    return text, False


# -- /hello, /health, /capabilities, /system/info --------------------------------
def hello(req):
    name = req.arg("name", "world")
    if len(name) > 100 or any(ord(c) < 32 for c in name):
        raise ApiError(400, "invalid_request", "'name' must be at most 100 printable characters")
    return 200, {}, {"message": "Hello, %s!" % name, "server": "agent-sandbox-server"}


def health(req):
    return 200, {}, {"status": "ok"}


def capabilities(req):
    return 200, {}, {
        "name": "agent-sandbox-server", "version": VERSION,
        "features": ["commands", "files", "process", "env", "ports", "system", "hello"],
        "routes": [{"method": m, "path": p} for m, p, _ in ROUTES],
    }


def system_info(req):
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    u = os.uname()
    return 200, {}, {
        "hostname": socket.gethostname(), "os": u.sysname, "kernel": u.release,
        "arch": u.machine, "python": platform.python_version(), "pid": os.getpid(),
        "uid": uid, "gid": os.getgid(), "user": user, "home": os.environ.get("HOME", ""),
        "cwd": os.getcwd(), "cpuCount": os.cpu_count() or 1, "memoryTotalBytes": mem,
        "uptimeSeconds": round(time.time() - SERVER["started"], 3),
        "port": SERVER["port"], "sandboxId": os.environ.get("E2B_SANDBOX_ID"),
        "templateId": os.environ.get("E2B_TEMPLATE_ID"),
    }


# -- /commands ---------------------------------------------------------------------
def run_command(req):
    body = req.json()
    cmd, cwd, env = cmd_field(body), cwd_field(body), env_field(body)
    timeout = field(body, "timeout", (int, float), default=30)
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise ApiError(400, "invalid_request", "'timeout' must be in (0, %d] seconds" % MAX_TIMEOUT_S)
    stdin = field(body, "stdin", str, default="")
    t0 = time.monotonic()
    proc = subprocess.Popen(["/bin/bash", "-c", cmd], cwd=cwd, env=child_env(env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(stdin.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    stdout, t1 = cap(out)
    stderr, t2 = cap(err)
    return 200, {}, {
        "exitCode": None if timed_out else proc.returncode, "stdout": stdout, "stderr": stderr,
        "timedOut": timed_out, "truncated": t1 or t2,
        "durationMs": int((time.monotonic() - t0) * 1000),
    }


# -- /files/ -------------------------------------------------------------------------
def fs_path(req):
    rest = req.path[len("/files"):]
    if "\0" in rest:
        raise ApiError(400, "invalid_request", "path contains a NUL byte")
    return posixpath.normpath("/" + rest.lstrip("/")) if rest.strip("/") else "/"


def kind_of(st):
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "other"


def describe(path, st):
    return {"name": posixpath.basename(path) or "/", "path": path, "type": kind_of(st),
            "size": st.st_size, "mode": "%04o" % stat.S_IMODE(st.st_mode),
            "modifiedAt": iso(st.st_mtime)}


def os_error(exc, path):
    if isinstance(exc, FileNotFoundError):
        return ApiError(404, "not_found", "path '%s' does not exist" % path)
    if isinstance(exc, PermissionError):
        return ApiError(403, "forbidden", "permission denied: '%s'" % path)
    if isinstance(exc, (IsADirectoryError, NotADirectoryError)):
        return ApiError(400, "invalid_request", "%s: '%s'" % (exc.strerror, path))
    return ApiError(500, "io_error", "%s: '%s'" % (exc.strerror or exc, path))


def files_get(req):
    path = fs_path(req)
    try:
        st = os.lstat(path)
        if req.arg("stat") in ("1", "true"):
            return 200, {}, describe(path, st)
        if stat.S_ISDIR(os.stat(path).st_mode):
            entries = []
            for name in sorted(os.listdir(path)):
                full = posixpath.join(path, name)
                try:
                    entries.append(describe(full, os.lstat(full)))
                except OSError:
                    continue  # vanished while listing
            return 200, {}, {"path": path, "type": "directory", "entries": entries}
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise os_error(exc, path)
    return 200, {"Content-Type": "application/octet-stream"}, data


def files_put(req):
    path = fs_path(req)
    if path == "/" or os.path.isdir(path):
        raise ApiError(400, "invalid_request", "path '%s' is a directory" % path)
    existed = os.path.exists(path)
    try:
        os.makedirs(posixpath.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(req.body)
    except OSError as exc:
        raise os_error(exc, path)
    return (200 if existed else 201), {}, {"path": path, "size": len(req.body), "created": not existed}


def files_delete(req):
    path = fs_path(req)
    if path == "/":
        raise ApiError(400, "invalid_request", "refusing to delete '/'")
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            if req.arg("recursive") in ("1", "true"):
                shutil.rmtree(path)
            elif os.listdir(path):
                raise ApiError(409, "not_empty", "directory '%s' is not empty (use ?recursive=1)" % path)
            else:
                os.rmdir(path)
        else:
            os.unlink(path)
    except OSError as exc:
        raise os_error(exc, path)
    return 204, {}, None


# -- /process/ ------------------------------------------------------------------------
class Proc:
    def __init__(self, pid_id, cmd, popen):
        self.id, self.cmd, self.popen = pid_id, cmd, popen
        self.started = time.time()
        self.out, self.err = bytearray(), bytearray()
        self.lock = threading.Lock()
        self.pumps = []
        for stream, buf in ((popen.stdout, self.out), (popen.stderr, self.err)):
            t = threading.Thread(target=self.pump, args=(stream, buf), daemon=True)
            t.start()
            self.pumps.append(t)

    def pump(self, stream, buf):
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self.lock:
                room = OUTPUT_CAP - len(buf)
                if room > 0:
                    buf += chunk[:room]

    def summary(self, output=False):
        # "exited" only once its output is drained, or a reader could see
        # the exit without the last bytes; a child still holding the pipes
        # keeps it running, as envd does.
        code = self.popen.poll()
        if code is not None and any(t.is_alive() for t in self.pumps):
            code = None
        d = {"id": self.id, "pid": self.popen.pid, "cmd": self.cmd,
             "status": "running" if code is None else "exited",
             "exitCode": code, "startedAt": iso(self.started)}
        if output:
            with self.lock:
                d["stdout"] = self.out.decode("utf-8", "replace")
                d["stderr"] = self.err.decode("utf-8", "replace")
        return d

    def kill(self):
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(2)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        # Its group is dead, so its pipes close: let the readers drain them
        # before the answer reports it exited (bounded, for a child that
        # left the group holding them).
        for t in self.pumps:
            t.join(2)


class Processes:
    def __init__(self):
        self.lock = threading.Lock()
        self.items, self.next = {}, 1

    def start(self, cmd, cwd, env):
        popen = subprocess.Popen(["/bin/bash", "-c", cmd], cwd=cwd, env=child_env(env),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)
        with self.lock:
            pid_id = "p%d" % self.next
            self.next += 1
            self.items[pid_id] = p = Proc(pid_id, cmd, popen)
        return p

    def get(self, pid_id):
        with self.lock:
            p = self.items.get(pid_id)
        if p is None:
            raise ApiError(404, "not_found", "process '%s' not found" % pid_id)
        return p

    def remove(self, pid_id):
        with self.lock:
            return self.items.pop(pid_id, None)

    def all(self):
        with self.lock:
            return list(self.items.values())

    def kill_all(self):
        for p in self.all():
            p.kill()


PROCESSES = Processes()


def proc_id(req):
    parts = req.path.strip("/").split("/")
    if len(parts) < 2 or not parts[1]:
        raise ApiError(404, "not_found", "no process id in path")
    return parts[1]


def process_list(req):
    return 200, {}, {"processes": [p.summary() for p in PROCESSES.all()]}


def process_start(req):
    body = req.json()
    p = PROCESSES.start(cmd_field(body), cwd_field(body), env_field(body))
    return 201, {}, p.summary()


def process_get(req):
    return 200, {}, PROCESSES.get(proc_id(req)).summary(output=True)


def process_delete(req):
    p = PROCESSES.get(proc_id(req))
    p.kill()
    PROCESSES.remove(p.id)
    return 200, {}, p.summary(output=True)


def process_stdin(req):
    p = PROCESSES.get(proc_id(req))
    body = req.json()
    data = field(body, "data", str, default="")
    close = field(body, "close", bool, default=False)
    if p.popen.poll() is not None or p.popen.stdin.closed:
        raise ApiError(409, "conflict", "process '%s' has exited or its stdin is closed" % p.id)
    try:
        p.popen.stdin.write(data.encode("utf-8"))
        p.popen.stdin.flush()
        if close:
            p.popen.stdin.close()
    except (BrokenPipeError, ValueError):
        raise ApiError(409, "conflict", "process '%s' stdin is closed" % p.id)
    return 200, {}, {"id": p.id, "written": len(data.encode("utf-8")), "closed": close}


# -- /env, /ports ----------------------------------------------------------------------
def is_secret(name, value):
    return bool(SECRET_NAME.search(name) or SECRET_VALUE.match(value))


def env(req):
    name = req.arg("name")
    if name is not None:
        if name not in os.environ:
            raise ApiError(404, "not_found", "environment variable '%s' is not set" % name)
        secret = is_secret(name, os.environ[name])
        return 200, {}, {"name": name, "value": MASK if secret else os.environ[name], "masked": secret}
    out, masked = {}, []
    for k in sorted(os.environ):
        if is_secret(k, os.environ[k]):
            out[k] = MASK
            masked.append(k)
        else:
            out[k] = os.environ[k]
    return 200, {}, {"env": out, "masked": masked}


def decode_addr(hexaddr, v6):
    raw = bytes.fromhex(hexaddr)
    # /proc/net/tcp prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET, words)


def ports(req):
    found = {}
    for proto, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open("/proc/net/" + proto) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 4 or cols[3] != "0A":  # 0A = LISTEN
                continue
            addr, port = cols[1].split(":")
            item = {"port": int(port, 16), "address": decode_addr(addr, v6), "protocol": proto}
            found[(item["port"], item["address"], proto)] = item
    items = [found[k] for k in sorted(found)]
    return 200, {}, {"ports": items}


# -- routing ------------------------------------------------------------------------------
ROUTES = [
    ("GET", "/health", health),
    ("GET", "/hello", hello),
    ("GET", "/capabilities", capabilities),
    ("GET", "/system/info", system_info),
    ("POST", "/commands", run_command),
    ("GET", "/files/*", files_get),
    ("PUT", "/files/*", files_put),
    ("DELETE", "/files/*", files_delete),
    ("GET", "/process/", process_list),
    ("POST", "/process/", process_start),
    ("GET", "/process/{id}", process_get),
    ("DELETE", "/process/{id}", process_delete),
    ("POST", "/process/{id}/stdin", process_stdin),
    ("GET", "/env", env),
    ("GET", "/ports", ports),
]


def matches(pattern, path):
    if pattern.endswith("/*"):
        base = pattern[:-2]
        return path == base or path.startswith(base + "/")
    pp = pattern.strip("/").split("/")
    parts = path.strip("/").split("/")
    if pattern.endswith("/") and len(pp) == 1:  # "/process/" also answers "/process"
        return parts == pp
    return len(pp) == len(parts) and all(
        p == s or (p.startswith("{") and s) for p, s in zip(pp, parts))


def dispatch(req):
    allowed = []
    for method, pattern, fn in ROUTES:
        if matches(pattern, req.path):
            if method == req.method or (method == "GET" and req.method == "HEAD"):
                return fn(req)
            allowed.append(method)
    if allowed:
        raise ApiError(405, "method_not_allowed", "%s is not allowed on %s (allowed: %s)"
                       % (req.method, req.path, ", ".join(allowed)),
                       headers={"Allow": ", ".join(allowed)})
    raise ApiError(404, "not_found", "no route for %s %s" % (req.method, req.path))
