"""Stateful Python worker for one code-interpreter context.

Started by contexts.py as `python3 -B kernel_py.py CMD_FD CTRL_FD NONCE`.
It reads one JSON request per line from CMD_FD ({"code": str, "env_vars":
{str: str}}), runs the code in one long-lived namespace (the context's
state), and writes JSON events, one per line, to CTRL_FD: "result" (value of
the last expression, like Jupyter's Out[n]), "error" (name, value,
traceback) and finally "done". The code's own stdout/stderr stay on fds 1/2
(pipes read by the server); after each run the worker writes the sentinel
"\0ABX-END-<NONCE>\0" on
both so the server knows every byte of this run's output has arrived.
"""
import ast
import json
import linecache
import os
import sys
import traceback

MIME_METHODS = (
    ("html", "_repr_html_"), ("markdown", "_repr_markdown_"),
    ("svg", "_repr_svg_"), ("png", "_repr_png_"), ("jpeg", "_repr_jpeg_"),
    ("pdf", "_repr_pdf_"), ("latex", "_repr_latex_"),
    ("json", "_repr_json_"), ("javascript", "_repr_javascript_"),
)


def represent(value):
    """Result fields for a value: text/plain repr plus rich reprs it offers."""
    out = {"text": repr(value)}
    for key, meth in MIME_METHODS:
        fn = getattr(value, meth, None)
        if callable(fn):
            try:
                data = fn()
            except Exception:  # a broken _repr_ must not fail the cell
                continue
            if data is None:
                continue
            if isinstance(data, bytes):
                import base64
                data = base64.b64encode(data).decode("ascii")
            out[key] = data
    return out


class Worker:
    def __init__(self, ctrl, sentinel):
        self.ctrl = ctrl
        self.sentinel = sentinel
        self.count = 0
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.ns["display"] = self.display

    def emit(self, event):
        self.ctrl.write(json.dumps(event) + "\n")
        self.ctrl.flush()

    def display(self, *values):
        """Jupyter's display(): a non-main result per value."""
        for value in values:
            ev = {"type": "result", "is_main_result": False}
            ev.update(represent(value))
            self.emit(ev)

    def compile_cell(self, code):
        name = "<cell-%d>" % self.count
        # Register the source so tracebacks can show the failing line.
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        tree = ast.parse(code, filename=name, mode="exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, name, "exec")
        tail = compile(last, name, "eval") if last is not None else None
        return body, tail

    def error_event(self, exc):
        tb = exc.__traceback__
        # Drop this worker's own frames: the user cares about the cell's.
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
            tb = tb.tb_next
        lines = traceback.format_exception(type(exc), exc, tb)
        return {"type": "error", "name": type(exc).__name__,
                "value": str(exc), "traceback": "".join(lines)}

    def run(self, code, env_vars):
        self.count += 1
        saved = {}
        for k, v in env_vars.items():
            saved[k] = os.environ.get(k)
            os.environ[k] = v
        try:
            body, tail = self.compile_cell(code)
            exec(body, self.ns)
            if tail is not None:
                value = eval(tail, self.ns)
                if value is not None:
                    self.ns["_"] = value
                    ev = {"type": "result", "is_main_result": True}
                    ev.update(represent(value))
                    self.emit(ev)
        except BaseException as exc:  # SystemExit/KeyboardInterrupt too, like Jupyter
            self.emit(self.error_event(exc))
        finally:
            for k, old in saved.items():
                if old is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = old
            for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
                try:
                    stream.flush()
                except Exception:
                    pass
                os.write(fd, self.sentinel.encode())
            self.emit({"type": "done"})


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: kernel_py.py CMD_FD CTRL_FD NONCE\n")
        return 2
    cmd = os.fdopen(int(sys.argv[1]), "r", encoding="utf-8")
    ctrl = os.fdopen(int(sys.argv[2]), "w", encoding="utf-8")
    worker = Worker(ctrl, "\x00ABX-END-%s\x00" % sys.argv[3])
    while True:
        try:
            line = cmd.readline()
        except KeyboardInterrupt:  # an interrupt that arrived between cells
            continue
        if not line:
            return 0
        try:
            req = json.loads(line)
            code, env_vars = req["code"], req.get("env_vars") or {}
        except (ValueError, KeyError, TypeError) as exc:
            worker.emit({"type": "error", "name": "ProtocolError", "value": str(exc), "traceback": ""})
            worker.emit({"type": "done"})
            continue
        try:
            worker.run(code, env_vars)
        except KeyboardInterrupt:  # interrupt landed between cells
            pass


if __name__ == "__main__":
    sys.exit(main())
