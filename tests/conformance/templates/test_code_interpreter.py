"""templates.code-interpreter-v1: the server on port 49999, run on the host
on a free loopback port, checked against docs/protocol.md "Code
interpreter"."""
import json
import os
import shutil
import socket
import tempfile
import time
import unittest

from helpers import Server
from template_checks import TemplateJsonMixin


def events(data):
    lines = data.decode().split("\n")
    assert lines[-1] == "", "stream must end with a newline"
    return [json.loads(line) for line in lines[:-1]]


class CodeInterpreter(TemplateJsonMixin, unittest.TestCase):
    TEMPLATE = "code-interpreter-v1"

    @classmethod
    def setUpClass(cls):
        cls.home = tempfile.mkdtemp(prefix="abx-ci-test-")
        env = dict(os.environ, ABX_CI_KEEPALIVE_S="0.5")
        cls.srv = Server("code-interpreter-v1", ["--cwd", cls.home], env=env)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.home, ignore_errors=True)

    def run_code(self, code, **fields):
        body = {"code": code}
        body.update(fields)
        status, headers, data = self.srv.request("POST", "/execute", body)
        self.assertEqual(status, 200, data)
        evs = events(data)
        self.assertEqual(data.decode().split("\n")[-2], '{"type": "end_of_execution"}')
        self.assertEqual(sum(1 for e in evs if e["type"] == "end_of_execution"), 1)
        return evs

    @staticmethod
    def pick(evs, kind):
        return [e for e in evs if e["type"] == kind]

    def stdout(self, evs):
        return "".join(e["text"] for e in self.pick(evs, "stdout"))

    def test_health(self):
        status, headers, data = self.srv.request("GET", "/health")
        self.assertEqual((status, json.loads(data)), (200, "OK"))

    def test_stdout_and_result_are_separate(self):
        evs = self.run_code("print('hello')\n1 + 1")
        self.assertEqual(self.stdout(evs), "hello\n")
        results = self.pick(evs, "result")
        self.assertEqual(len(results), 1)
        self.assertEqual(results[0]["text"], "2")
        self.assertTrue(results[0]["is_main_result"])
        self.assertEqual(self.pick(evs, "error"), [])
        for e in self.pick(evs, "stdout"):
            self.assertRegex(e["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        self.assertIsInstance(self.pick(evs, "number_of_executions")[0]["execution_count"], int)

    def test_result_is_repr_and_none_gives_no_result(self):
        self.assertEqual(self.pick(self.run_code("'a' + 'b'"), "result")[0]["text"], "'ab'")
        self.assertEqual(self.pick(self.run_code("None"), "result"), [])
        self.assertEqual(self.pick(self.run_code("x_assign = 3"), "result"), [])

    def test_state_persists_in_default_context(self):
        self.run_code("counter = 41")
        evs = self.run_code("counter += 1\ncounter")
        self.assertEqual(self.pick(evs, "result")[0]["text"], "42")

    def test_error_has_name_value_traceback(self):
        evs = self.run_code("def f():\n    raise ValueError('boom')\nf()")
        errs = self.pick(evs, "error")
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0]["name"], "ValueError")
        self.assertEqual(errs[0]["value"], "boom")
        self.assertIn("raise ValueError('boom')", errs[0]["traceback"])
        self.assertNotIn("kernel_py.py", errs[0]["traceback"])
        syntax = self.pick(self.run_code("1 +"), "error")
        self.assertEqual(syntax[0]["name"], "SyntaxError")

    def test_stderr(self):
        evs = self.run_code("import sys\nsys.stderr.write('warn\\n')\nprint('out')")
        self.assertEqual("".join(e["text"] for e in self.pick(evs, "stderr")), "warn\n")
        self.assertEqual(self.stdout(evs), "out\n")

    def test_output_without_newline_and_subprocess_output(self):
        evs = self.run_code("import os\nprint('a', end='')\nos.system('echo from-child')")
        self.assertIn("a", self.stdout(evs))
        self.assertIn("from-child\n", self.stdout(evs))

    def test_env_vars_apply_to_one_execution(self):
        evs = self.run_code("import os\nos.environ.get('ABX_T')", env_vars={"ABX_T": "v1"})
        self.assertEqual(self.pick(evs, "result")[0]["text"], "'v1'")
        evs = self.run_code("import os\nos.environ.get('ABX_T')")
        self.assertEqual(self.pick(evs, "result"), [])

    def test_display_and_rich_repr(self):
        code = ("class H:\n    def _repr_html_(self): return '<b>x</b>'\n"
                "    def __repr__(self): return 'H()'\ndisplay(5)\nH()")
        results = self.pick(self.run_code(code), "result")
        self.assertEqual([r["is_main_result"] for r in results], [False, True])
        self.assertEqual(results[1]["html"], "<b>x</b>")
        self.assertEqual(results[1]["text"], "H()")

    def test_contexts_lifecycle(self):
        sub = os.path.join(self.home, "sub")
        os.makedirs(sub, exist_ok=True)
        status, ctx = self.srv.json("POST", "/contexts", {"language": "python", "cwd": sub})
        self.assertEqual(status, 200)
        self.assertEqual((ctx["language"], ctx["cwd"]), ("python", sub))
        cid = ctx["id"]
        status, listed = self.srv.json("GET", "/contexts")
        self.assertIn(cid, [c["id"] for c in listed])
        evs = self.run_code("import os\nv = 7\nos.getcwd()", context_id=cid)
        self.assertEqual(self.pick(evs, "result")[0]["text"], repr(sub))
        # isolated from the default context
        self.assertEqual(self.pick(self.run_code("'v' in globals()"), "result")[0]["text"], "False")
        self.assertEqual(self.pick(self.run_code("v", context_id=cid), "result")[0]["text"], "7")
        status, _ = self.srv.json("POST", "/contexts/%s/restart" % cid)
        self.assertEqual(status, 200)
        evs = self.run_code("v", context_id=cid)
        self.assertEqual(self.pick(evs, "error")[0]["name"], "NameError")
        status, _ = self.srv.json("DELETE", "/contexts/%s" % cid)
        self.assertEqual(status, 200)
        status, _, data = self.srv.request("DELETE", "/contexts/%s" % cid)
        self.assertEqual(status, 404)
        self.assertIn("not found", data.decode())

    def test_bad_requests(self):
        status, _, data = self.srv.request("POST", "/execute", {"code": "1", "context_id": "x", "language": "python"})
        self.assertEqual(status, 400)
        status, _, data = self.srv.request("POST", "/execute", {"code": "1", "context_id": "nope"})
        self.assertEqual(status, 404)
        self.assertEqual(data.decode(), "Context nope not found")
        status, _, data = self.srv.request("POST", "/execute", {"code": "1", "language": "r"})
        self.assertEqual(status, 400)
        self.assertIn("not supported", data.decode())
        status, _, _ = self.srv.request("POST", "/execute", {"nocode": 1})
        self.assertEqual(status, 400)
        status, _, _ = self.srv.request("POST", "/execute", "{not json")
        self.assertEqual(status, 400)
        status, _, _ = self.srv.request("POST", "/contexts", {"cwd": "/does/not/exist"})
        self.assertEqual(status, 400)
        status, _, _ = self.srv.request("GET", "/nowhere")
        self.assertEqual(status, 404)

    def test_keepalive_during_silence(self):
        evs = self.run_code("import time\ntime.sleep(1.6)\n'done'")
        self.assertGreaterEqual(len(self.pick(evs, "keepalive")), 1)
        self.assertEqual(self.pick(evs, "result")[0]["text"], "'done'")

    def test_bash_context_is_stateful(self):
        status, ctx = self.srv.json("POST", "/contexts", {"language": "bash"})
        self.assertEqual(status, 200)
        cid = ctx["id"]
        try:
            self.run_code("X=abc; cd /", context_id=cid)
            evs = self.run_code("echo $X; pwd; echo $ABX_B", context_id=cid, env_vars={"ABX_B": "b"})
            self.assertEqual(self.stdout(evs), "abc\n/\nb\n")
            evs = self.run_code("echo \"[$ABX_B]\"", context_id=cid)
            self.assertEqual(self.stdout(evs), "[]\n")
        finally:
            self.srv.request("DELETE", "/contexts/%s" % cid)

    def test_worker_death_is_reported_and_context_recovers(self):
        status, ctx = self.srv.json("POST", "/contexts", {})
        cid = ctx["id"]
        try:
            evs = self.run_code("import os\nos._exit(3)", context_id=cid)
            self.assertEqual(self.pick(evs, "error")[0]["name"], "UnexpectedEndOfExecution")
            evs = self.run_code("1 + 2", context_id=cid)
            self.assertEqual(self.pick(evs, "result")[0]["text"], "3")
        finally:
            self.srv.request("DELETE", "/contexts/%s" % cid)

    def test_client_disconnect_interrupts_the_cell(self):
        status, ctx = self.srv.json("POST", "/contexts", {})
        cid = ctx["id"]
        try:
            body = json.dumps({"code": "import time\nfor i in range(600):\n    time.sleep(0.1)",
                               "context_id": cid}).encode()
            s = socket.create_connection(("127.0.0.1", self.srv.port))
            s.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            time.sleep(0.3)
            s.close()
            t0 = time.monotonic()
            evs = self.run_code("'alive'", context_id=cid)
            self.assertLess(time.monotonic() - t0, 30)
            self.assertEqual(self.pick(evs, "result")[0]["text"], "'alive'")
        finally:
            self.srv.request("DELETE", "/contexts/%s" % cid)


if __name__ == "__main__":
    unittest.main()
