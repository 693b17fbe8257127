"""Code-interpreter contexts: one long-lived worker process per context.

A context owns a worker (kernel_py.py for python, a bash loop for bash)
whose stdout/stderr are pipes read by two threads, plus a command pipe
(server -> worker) and a control pipe (worker -> server, JSON lines). One
execution at a time per context (a lock); events of the running execution go
through a queue the HTTP handler turns into NDJSON lines.
"""
import codecs
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone

APP_DIR = os.path.dirname(os.path.abspath(__file__))
LANGUAGES = ("python", "bash")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INTERRUPT_GRACE_S = 5.0


class LanguageError(ValueError):
    pass


def normalize_language(lang):
    """E2B's normalisation: None/"" -> python, trimmed, lowercase, aliases."""
    if lang is None:
        return "python"
    lang = str(lang).strip().lower()
    if lang == "":
        return "python"
    lang = {"js": "javascript", "ts": "typescript", "sh": "bash"}.get(lang, lang)
    if lang not in LANGUAGES:
        raise LanguageError("language '%s' is not supported by this template "
                            "(supported: %s)" % (lang, ", ".join(LANGUAGES)))
    return lang


def now_iso():
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Pipe(threading.Thread):
    """Forwards one output pipe of a worker to the current execution's queue,
    cutting it at the per-run sentinel."""

    def __init__(self, ctx, fd, kind):
        super().__init__(daemon=True)
        self.ctx, self.fd, self.kind = ctx, fd, kind
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def run(self):
        sent = self.ctx.sentinel
        pending = ""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            text = self.decoder.decode(chunk, final=not chunk)
            pending += text
            while True:
                idx = pending.find(sent)
                if idx < 0:
                    break
                self.ctx.output(self.kind, pending[:idx])
                self.ctx.output_done(self.kind)
                pending = pending[idx + len(sent):]
            # Keep back only a tail that could be the start of the sentinel.
            keep = 0
            for n in range(min(len(sent) - 1, len(pending)), 0, -1):
                if sent.startswith(pending[-n:]):
                    keep = n
                    break
            if len(pending) > keep:
                self.ctx.output(self.kind, pending[:len(pending) - keep])
                pending = pending[len(pending) - keep:]
            if not chunk:
                self.ctx.output(self.kind, pending)
                self.ctx.output_done(self.kind, eof=True)
                return


class Context:
    def __init__(self, language, cwd):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.lock = threading.Lock()  # one execution at a time
        self.q = None                 # queue of the running execution
        self.proc = None
        self.sentinel = ""
        self.tmp = None

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    # -- worker process --------------------------------------------------
    def start(self):
        if not os.path.isdir(self.cwd):
            raise FileNotFoundError("cwd '%s' does not exist" % self.cwd)
        nonce = secrets.token_hex(8)
        # NULs keep the marker apart from any text a cell prints; argv gets
        # only the nonce (argv cannot carry NUL).
        self.sentinel = "\x00ABX-END-%s\x00" % nonce
        cmd_r, cmd_w = os.pipe()
        ctrl_r, ctrl_w = os.pipe()
        if self.language == "python":
            argv = [sys.executable, "-B", "-u", os.path.join(APP_DIR, "kernel_py.py"),
                    str(cmd_r), str(ctrl_w), nonce]
        else:
            argv = ["/bin/bash", "--noprofile", "--norc", "-c", bash_loop(cmd_r, ctrl_w, nonce)]
        try:
            self.proc = subprocess.Popen(
                argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=(cmd_r, ctrl_w), start_new_session=True)
        finally:
            os.close(cmd_r)
            os.close(ctrl_w)
        self.cmd = os.fdopen(cmd_w, "w", encoding="utf-8")
        self.ctrl = os.fdopen(ctrl_r, "r", encoding="utf-8")
        self.tmp = tempfile.mkdtemp(prefix="abx-ci-") if self.language == "bash" else None
        self.done_kinds = set()
        self.cv = threading.Condition()
        Pipe(self, self.proc.stdout.fileno(), "stdout").start()
        Pipe(self, self.proc.stderr.fileno(), "stderr").start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        for f in (self.cmd, self.ctrl):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None

    def restart(self):
        with self.lock:
            self.stop()
            self.start()

    # -- output plumbing (called from Pipe threads) ------------------------
    def output(self, kind, text):
        q = self.q
        if text and q is not None:
            q.put({"type": kind, "text": text, "timestamp": now_iso()})

    def output_done(self, kind, eof=False):
        with self.cv:
            self.done_kinds.add(kind)
            self.cv.notify_all()

    # -- execution ---------------------------------------------------------
    def execute(self, code, env_vars, q, cancelled):
        """Runs one cell, putting events on q; returns when all its output
        is in. `cancelled` is a threading.Event set when the client left."""
        with self.lock:
            if not self.alive():
                self.stop()
                self.start()
            self.q = q
            with self.cv:
                self.done_kinds = set()
            try:
                self._send(code, env_vars)
                self._collect(q, cancelled)
            finally:
                self.q = None

    def _send(self, code, env_vars):
        if self.language == "python":
            line = json.dumps({"code": code, "env_vars": env_vars})
        else:
            path = os.path.join(self.tmp, "cell.sh")
            with open(path, "w", encoding="utf-8") as f:
                f.write(bash_wrap(code, env_vars))
            line = ". %s" % shlex.quote(path)
        self.cmd.write(line + "\n")
        self.cmd.flush()

    def _collect(self, q, cancelled):
        interrupted_at = None
        result = {}

        def read_ctrl():
            for line in self.ctrl:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                kind = ev.get("type")
                if kind == "done":
                    result["done"] = True
                    return
                if kind != "exit":  # bash's exit status: informational only
                    q.put(ev)
            result["eof"] = True

        reader = threading.Thread(target=read_ctrl, daemon=True)
        reader.start()
        while reader.is_alive():
            reader.join(0.2)
            if cancelled.is_set() and interrupted_at is None:
                interrupted_at = time.monotonic()
                self._signal(signal.SIGINT)
            elif interrupted_at is not None and time.monotonic() - interrupted_at > INTERRUPT_GRACE_S:
                # The worker ignored the interrupt: kill it (its state is
                # lost); the reader then sees EOF on the control pipe.
                self._signal(signal.SIGKILL)
                interrupted_at = float("inf")
        if result.get("done"):
            # The worker wrote its sentinels before "done": wait until both
            # pipe readers have passed them, so no output of this run is lost.
            with self.cv:
                self.cv.wait_for(lambda: {"stdout", "stderr"} <= self.done_kinds, timeout=10)
            return
        status = self.proc.wait() if self.proc is not None else None
        q.put({"type": "error", "name": "UnexpectedEndOfExecution",
               "value": "the %s worker exited (status %s); the context's state was lost"
                        % (self.language, status),
               "traceback": ""})

    def _signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, AttributeError):
            pass


def bash_loop(cmd_fd, ctrl_fd, nonce):
    """A bash that evals one line per request from cmd_fd in the same shell
    (so variables, functions and cd persist) and reports on ctrl_fd."""
    s = shlex.quote("ABX-END-" + nonce)
    return (
        "exec {c}<&%d; exec {o}>&%d; exec %d<&- %d>&-\n"
        "while IFS= read -r __abx_line <&$c; do\n"
        "  eval \"$__abx_line\"; __abx_s=$?\n"
        "  printf '\\0%%s\\0' %s; printf '\\0%%s\\0' %s >&2\n"
        "  printf '{\"type\":\"exit\",\"status\":%%d}\\n{\"type\":\"done\"}\\n' \"$__abx_s\" >&$o\n"
        "done\n" % (cmd_fd, ctrl_fd, cmd_fd, ctrl_fd, s, s))


def bash_wrap(code, env_vars):
    """The cell file: code, with env_vars exported only while it runs."""
    pre, post = [], []
    for i, (k, v) in enumerate(sorted(env_vars.items())):
        if not ENV_NAME.match(k):
            raise ValueError("env var name '%s' is not a valid identifier" % k)
        pre.append('if [ -n "${%s+x}" ]; then __abx_o%d=$%s; __abx_h%d=1; else __abx_h%d=0; fi; export %s=%s'
                   % (k, i, k, i, i, k, shlex.quote(v)))
        post.append('if [ "$__abx_h%d" = 1 ]; then export %s="$__abx_o%d"; else unset %s; fi'
                    % (i, k, i, k))
    body = "\n".join(pre + [code, "__abx_rc=$?"] + post + ["(exit $__abx_rc)"])
    return body + "\n"


class Registry:
    """All contexts; the default context per language is created on demand."""

    def __init__(self, default_cwd):
        self.default_cwd = default_cwd
        self.lock = threading.Lock()
        self.contexts = {}
        self.defaults = {}

    def create(self, language, cwd):
        ctx = Context(normalize_language(language), cwd or self.default_cwd)
        ctx.start()
        with self.lock:
            self.contexts[ctx.id] = ctx
        return ctx

    def default(self, language):
        language = normalize_language(language)
        with self.lock:
            ctx = self.defaults.get(language)
            if ctx is not None and ctx.id in self.contexts:
                return ctx
        ctx = self.create(language, None)
        with self.lock:
            self.defaults[language] = ctx
        return ctx

    def get(self, ctx_id):
        with self.lock:
            return self.contexts.get(ctx_id)

    def list(self):
        with self.lock:
            return [c.describe() for c in self.contexts.values()]

    def delete(self, ctx_id):
        with self.lock:
            ctx = self.contexts.pop(ctx_id, None)
        if ctx is not None:
            with ctx.lock:
                ctx.stop()
        return ctx is not None

    def close(self):
        with self.lock:
            ctxs = list(self.contexts.values())
            self.contexts.clear()
        for ctx in ctxs:
            ctx.stop()
