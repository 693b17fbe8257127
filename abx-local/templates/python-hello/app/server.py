"""agent-sandbox-server for the `python-hello` template.

A small JSON HTTP API that runs inside a sandbox: commands, files, background
processes, capabilities, system info, environment (secrets masked), listening
ports and a custom `/hello` route. The contract is CONTRACT.md next to this
template; keep the two in step. Standard library only (Debian 12 python3).

Usage: python3 -B server.py [--host 0.0.0.0] [--port 8080]
"""
import argparse
import json
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import routes  # noqa: E402
from routes import ApiError  # noqa: E402

MAX_BODY = 64 << 20


class Request:
    """What a route handler sees of one request."""

    def __init__(self, method, path, query, headers, body):
        self.method, self.path, self.query = method, path, query
        self.headers, self.body = headers, body

    def arg(self, name, default=None):
        values = self.query.get(name)
        return values[-1] if values else default

    def json(self):
        if not self.body:
            raise ApiError(400, "invalid_request", "a JSON object body is required")
        try:
            value = json.loads(self.body)
        except ValueError as exc:
            raise ApiError(400, "invalid_json", "request body is not valid JSON: %s" % exc)
        if not isinstance(value, dict):
            raise ApiError(400, "invalid_request", "request body must be a JSON object")
        return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agent-sandbox-server/%s" % routes.VERSION

    def log_message(self, fmt, *args):  # request line only, never headers
        if os.environ.get("ABX_HELLO_LOG"):
            sys.stderr.write("hello: %s\n" % (fmt % args))

    def handle_any(self):
        self.body_unread = False
        try:
            req = self.read_request()
            status, headers, body = routes.dispatch(req)
        except ApiError as exc:
            status, headers, body = exc.status, dict(exc.headers), routes.error_body(exc)
        except Exception as exc:  # never crash the server on one request
            err = ApiError(500, "internal", "%s: %s" % (type(exc).__name__, exc))
            status, headers, body = 500, {}, routes.error_body(err)
        self.respond(status, headers, body)
        if self.body_unread:
            self.linger()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    def read_request(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = self.body_unread = True
            raise ApiError(411, "length_required", "send the body with Content-Length, not chunked")
        length = self.headers.get("Content-Length", "0")
        try:
            n = int(length)
        except ValueError:
            self.close_connection = self.body_unread = True
            raise ApiError(400, "invalid_request", "invalid Content-Length '%s'" % length)
        if n < 0 or n > MAX_BODY:
            self.close_connection = self.body_unread = True
            raise ApiError(413, "payload_too_large", "request body larger than %d bytes" % MAX_BODY)
        body = self.rfile.read(n) if n else b""
        parts = urlsplit(self.path)
        return Request(self.command, unquote(parts.path), parse_qs(parts.query),
                       self.headers, body)

    def linger(self):
        """Close after answering an unread body (411, 413, bad length): stop
        writing, then discard what the client still sends, bounded, so that
        it reads our answer instead of a connection reset (a close with
        unread data sends RST, which can destroy the answer in flight)."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(2.0)
            budget = 2 * MAX_BODY
            while budget > 0:
                chunk = self.connection.recv(1 << 16)
                if not chunk:
                    break
                budget -= len(chunk)
        except OSError:
            pass

    def respond(self, status, headers, body):
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        elif body is None:
            data = b""
        else:
            data = body
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if status != 204:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD" and status != 204:
            self.wfile.write(data)


def main(argv=None):
    ap = argparse.ArgumentParser(description="agent-sandbox-server (python-hello template)")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=8080)
    args = ap.parse_args(argv)
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    routes.SERVER["port"] = httpd.server_address[1]

    def stop(signum, frame):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write("agent-sandbox-server listening on %s:%d\n" % (args.host, httpd.server_address[1]))
    sys.stderr.flush()
    try:
        httpd.serve_forever()
    finally:
        routes.PROCESSES.kill_all()
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
