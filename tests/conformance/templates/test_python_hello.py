"""templates.python-hello: agent-sandbox-server run on the host on a free
loopback port, checked against abx-local/templates/python-hello/CONTRACT.md."""
import os
import shutil
import tempfile
import time
import unittest

from helpers import Server
from template_checks import TemplateJsonMixin


class PythonHello(TemplateJsonMixin, unittest.TestCase):
    TEMPLATE = "python-hello"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="abx-hello-test-")
        env = dict(os.environ, HOME=cls.dir, ABX_TEST_API_KEY="e2b_0123456789abcdef",
                   ABX_TEST_PLAIN="visible", ABX_TEST_OPAQUE="e2b_00112233445566778899")
        cls.srv = Server("python-hello", env=env, cwd=cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def assertError(self, status, body, want_status, want_code=None):
        self.assertEqual(status, want_status, body)
        self.assertIsInstance(body["error"]["message"], str)
        self.assertTrue(body["error"]["message"])
        if want_code:
            self.assertEqual(body["error"]["code"], want_code)

    def test_health_and_hello(self):
        self.assertEqual(self.srv.json("GET", "/health"), (200, {"status": "ok"}))
        status, body = self.srv.json("GET", "/hello?name=Ada%20L")
        self.assertEqual(status, 200)
        self.assertEqual(body["message"], "Hello, Ada L!")
        self.assertEqual(self.srv.json("GET", "/hello")[1]["message"], "Hello, world!")
        self.assertError(*self.srv.json("GET", "/hello?name=" + "x" * 101), 400, "invalid_request")

    def test_capabilities_lists_every_route(self):
        status, body = self.srv.json("GET", "/capabilities")
        self.assertEqual(status, 200)
        paths = {r["path"] for r in body["routes"]}
        for p in ("/commands", "/files/*", "/process/", "/capabilities", "/system/info",
                  "/env", "/ports", "/hello"):
            self.assertIn(p, paths)
        self.assertEqual(body["name"], "agent-sandbox-server")

    def test_system_info(self):
        status, body = self.srv.json("GET", "/system/info")
        self.assertEqual(status, 200)
        self.assertEqual(body["port"], self.srv.port)
        self.assertEqual(body["os"], "Linux")
        self.assertEqual(body["pid"], self.srv.proc.pid)
        self.assertGreater(body["cpuCount"], 0)

    def test_commands(self):
        status, body = self.srv.json("POST", "/commands", {"cmd": "echo out; echo err >&2; pwd; echo $V; exit 3",
                                                            "cwd": "/", "env": {"V": "vv"}})
        self.assertEqual(status, 200)
        self.assertEqual((body["exitCode"], body["stdout"], body["stderr"]), (3, "out\n/\nvv\n", "err\n"))
        self.assertFalse(body["timedOut"])
        status, body = self.srv.json("POST", "/commands", {"cmd": "cat", "stdin": "in"})
        self.assertEqual(body["stdout"], "in")
        status, body = self.srv.json("POST", "/commands", {"cmd": "sleep 5", "timeout": 0.3})
        self.assertEqual((status, body["timedOut"], body["exitCode"]), (200, True, None))
        self.assertError(*self.srv.json("POST", "/commands", {"cmd": 1}), 400, "invalid_request")
        self.assertError(*self.srv.json("POST", "/commands", {}), 400)
        self.assertError(*self.srv.json("POST", "/commands", {"cmd": "true", "cwd": "/nope"}), 400)
        self.assertError(*self.srv.json("POST", "/commands", {"cmd": "true", "timeout": 0}), 400)
        self.assertError(*self.srv.json("POST", "/commands", "not json"), 400, "invalid_json")
        self.assertError(*self.srv.json("GET", "/commands"), 405, "method_not_allowed")

    def test_files_roundtrip(self):
        base = "/files" + self.dir
        status, body = self.srv.json("PUT", base + "/d/e/a.bin", b"\x00\x01\xffdata")
        self.assertEqual((status, body["size"], body["created"]), (201, 7, True))
        status, _, data = self.srv.request("GET", base + "/d/e/a.bin")
        self.assertEqual((status, data), (200, b"\x00\x01\xffdata"))
        status, body = self.srv.json("PUT", base + "/d/e/a.bin", b"x")
        self.assertEqual((status, body["created"]), (200, False))
        status, body = self.srv.json("GET", base + "/d/e")
        self.assertEqual([e["name"] for e in body["entries"]], ["a.bin"])
        self.assertEqual(body["entries"][0]["type"], "file")
        status, body = self.srv.json("GET", base + "/d?stat=1")
        self.assertEqual((body["type"], body["path"]), ("directory", self.dir + "/d"))
        self.assertError(*self.srv.json("DELETE", base + "/d"), 409, "not_empty")
        self.assertEqual(self.srv.request("DELETE", base + "/d?recursive=1")[0], 204)
        self.assertError(*self.srv.json("GET", base + "/d/e/a.bin"), 404, "not_found")
        self.assertError(*self.srv.json("DELETE", base + "/d"), 404)
        self.assertError(*self.srv.json("PUT", base, b"x"), 400)
        self.assertError(*self.srv.json("POST", base + "/x", b"x"), 405)

    def test_process_lifecycle(self):
        status, p = self.srv.json("POST", "/process/", {"cmd": "read line; echo got:$line; sleep 60"})
        self.assertEqual(status, 201)
        self.assertEqual(p["status"], "running")
        pid_id = p["id"]
        status, body = self.srv.json("GET", "/process")
        self.assertIn(pid_id, [x["id"] for x in body["processes"]])
        status, body = self.srv.json("POST", "/process/%s/stdin" % pid_id, {"data": "hi\n"})
        self.assertEqual((status, body["written"]), (200, 3))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            status, body = self.srv.json("GET", "/process/%s" % pid_id)
            if "got:hi" in body["stdout"]:
                break
            time.sleep(0.1)
        self.assertEqual(body["stdout"], "got:hi\n")
        status, body = self.srv.json("DELETE", "/process/%s" % pid_id)
        self.assertEqual((status, body["status"]), (200, "exited"))
        self.assertError(*self.srv.json("GET", "/process/%s" % pid_id), 404, "not_found")
        self.assertError(*self.srv.json("POST", "/process/", {"cwd": "/"}), 400)

    def test_env_masks_secrets(self):
        status, body = self.srv.json("GET", "/env")
        self.assertEqual(status, 200)
        env = body["env"]
        self.assertEqual(env["ABX_TEST_PLAIN"], "visible")
        self.assertEqual(env["ABX_TEST_API_KEY"], "***")
        self.assertEqual(env["ABX_TEST_OPAQUE"], "***")
        self.assertIn("ABX_TEST_API_KEY", body["masked"])
        status, _, raw = self.srv.request("GET", "/env")
        self.assertNotIn(b"0123456789abcdef", raw)
        self.assertNotIn(b"00112233445566778899", raw)
        status, body = self.srv.json("GET", "/env?name=ABX_TEST_API_KEY")
        self.assertEqual((body["value"], body["masked"]), ("***", True))
        self.assertError(*self.srv.json("GET", "/env?name=ABX_NOT_SET_X"), 404)

    def test_ports_lists_own_port(self):
        status, body = self.srv.json("GET", "/ports")
        self.assertEqual(status, 200)
        own = [p for p in body["ports"] if p["port"] == self.srv.port]
        self.assertEqual(own[0]["address"], "127.0.0.1")
        self.assertEqual(own[0]["protocol"], "tcp")

    def test_unknown_route_and_chunked_body(self):
        self.assertError(*self.srv.json("GET", "/nope"), 404, "not_found")
        status, _, _ = self.srv.request("POST", "/commands", b"{}",
                                        headers={"Transfer-Encoding": "chunked"})
        self.assertEqual(status, 411)


if __name__ == "__main__":
    unittest.main()
