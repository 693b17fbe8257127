"""Code-interpreter server (port 49999) speaking E2B's code-interpreter
protocol: POST /execute streams NDJSON events; /contexts manages stateful
contexts; GET /health. Errors are plain-text bodies, like E2B's server.
Standard library only (Debian 12 python3).

Usage: python3 -B server.py [--host 0.0.0.0] [--port 49999] [--cwd /home/user]
"""
import argparse
import json
import os
import queue
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contexts  # noqa: E402

MAX_BODY = 16 << 20
# E2B's server sends a keepalive line after 5 s of silence; tests shorten it.
KEEPALIVE_S = float(os.environ.get("ABX_CI_KEEPALIVE_S") or 5.0)


class HttpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def str_map(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise HttpError(400, "%s must be an object of string values" % what)
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "abx-code-interpreter/1.0"
    registry = None  # set by main()

    def log_message(self, fmt, *args):  # request lines only, never headers
        if os.environ.get("ABX_CI_LOG"):
            sys.stderr.write("ci: %s\n" % (fmt % args))

    # -- helpers -------------------------------------------------------------
    def send_body(self, status, body, ctype):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, value):
        self.send_body(status, json.dumps(value), "application/json")

    def send_text(self, status, text):
        self.send_body(status, text, "text/plain; charset=utf-8")

    def read_json(self):
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise HttpError(411, "chunked request bodies are not supported; send Content-Length")
        try:
            n = int(length) if length is not None else 0
        except ValueError:
            raise HttpError(400, "invalid Content-Length")
        if n < 0 or n > MAX_BODY:
            raise HttpError(413, "request body larger than %d bytes" % MAX_BODY)
        raw = self.rfile.read(n) if n else b""
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise HttpError(400, "request body is not valid JSON: %s" % exc)
        if not isinstance(value, dict):
            raise HttpError(400, "request body must be a JSON object")
        return value

    def dispatch(self, routes):
        path = self.path.split("?", 1)[0]
        try:
            for pattern, fn in routes:
                args = match(pattern, path)
                if args is not None:
                    return fn(*args)
            raise HttpError(404, "Not Found: %s %s" % (self.command, path))
        except HttpError as exc:
            self.send_text(exc.status, str(exc))
        except contexts.LanguageError as exc:
            self.send_text(400, str(exc))
        except Exception as exc:  # last resort: a clear 500, never a crash
            self.send_text(500, "internal error: %s: %s" % (type(exc).__name__, exc))

    # -- routes --------------------------------------------------------------
    def do_GET(self):
        self.dispatch([("/health", self.health), ("/contexts", self.list_contexts)])

    def do_POST(self):
        self.dispatch([("/execute", self.execute), ("/contexts", self.create_context),
                       ("/contexts/*/restart", self.restart_context)])

    def do_DELETE(self):
        self.dispatch([("/contexts/*", self.delete_context)])

    def health(self):
        self.send_json(200, "OK")

    def list_contexts(self):
        self.send_json(200, self.registry.list())

    def create_context(self):
        body = self.read_json()
        lang, cwd = body.get("language"), body.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise HttpError(400, "cwd must be a string")
        try:
            ctx = self.registry.create(lang, cwd)
        except FileNotFoundError as exc:
            raise HttpError(400, str(exc))
        self.send_json(200, ctx.describe())

    def restart_context(self, ctx_id):
        ctx = self.registry.get(ctx_id)
        if ctx is None:
            raise HttpError(404, "Context %s not found" % ctx_id)
        ctx.restart()
        self.send_json(200, None)

    def delete_context(self, ctx_id):
        if not self.registry.delete(ctx_id):
            raise HttpError(404, "Context %s not found" % ctx_id)
        self.send_json(200, None)

    def execute(self):
        body = self.read_json()
        code = body.get("code")
        if not isinstance(code, str):
            raise HttpError(400, "code is required and must be a string")
        ctx_id, lang = body.get("context_id"), body.get("language")
        if ctx_id is not None and lang is not None:
            raise HttpError(400, "Only one of context_id or language can be provided")
        env_vars = str_map(body.get("env_vars"), "env_vars")
        if ctx_id is not None:
            ctx = self.registry.get(str(ctx_id))
            if ctx is None:
                raise HttpError(404, "Context %s not found" % ctx_id)
        else:
            ctx = self.registry.default(lang)
        if ctx.language == "bash":
            bad = [k for k in env_vars if not contexts.ENV_NAME.match(k)]
            if bad:
                raise HttpError(400, "env var name '%s' is not a valid identifier" % bad[0])
        self.stream(ctx, code, env_vars)

    def stream(self, ctx, code, env_vars):
        q, cancelled = queue.Queue(), threading.Event()
        ctx.executions = getattr(ctx, "executions", 0) + 1
        q.put({"type": "number_of_executions", "execution_count": ctx.executions})

        def run():
            try:
                ctx.execute(code, env_vars, q, cancelled)
            except Exception as exc:
                q.put({"type": "error", "name": type(exc).__name__, "value": str(exc), "traceback": ""})
            finally:
                q.put(None)

        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        threading.Thread(target=run, daemon=True).start()
        try:
            while True:
                try:
                    ev = q.get(timeout=KEEPALIVE_S)
                except queue.Empty:
                    ev = {"type": "keepalive"}
                if ev is None:
                    self.chunk(json.dumps({"type": "end_of_execution"}) + "\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                self.chunk(json.dumps(ev) + "\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            cancelled.set()  # the client left: interrupt the cell
            self.close_connection = True

    def chunk(self, text):
        data = text.encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def match(pattern, path):
    """'/contexts/*/restart' against a path; returns the '*' parts or None."""
    pp, parts = pattern.strip("/").split("/"), path.strip("/").split("/")
    if len(pp) != len(parts):
        return None
    args = []
    for p, s in zip(pp, parts):
        if p == "*":
            if not s:
                return None
            args.append(s)
        elif p != s:
            return None
    return args


def main(argv=None):
    ap = argparse.ArgumentParser(description="abx code-interpreter server")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=49999)
    ap.add_argument("--cwd", default=os.environ.get("HOME") or "/home/user",
                    help="default working directory of new contexts")
    args = ap.parse_args(argv)
    Handler.registry = contexts.Registry(args.cwd)
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True

    def stop(signum, frame):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # The default python context exists from the start, like E2B's.
    Handler.registry.default("python")
    sys.stderr.write("code-interpreter listening on %s:%d\n" % (args.host, httpd.server_address[1]))
    sys.stderr.flush()
    try:
        httpd.serve_forever()
    finally:
        Handler.registry.close()
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
