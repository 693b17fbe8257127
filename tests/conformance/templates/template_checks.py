"""Checks of a template folder against abx-local/DESIGN.md ("Templates")."""
import os
import re

from helpers import TEMPLATES, template_json

KEYS = {"templateID", "aliases", "envVars", "rootfs", "start", "ready", "cpuCount", "memoryMB",
        "diskSizeMB", "pidsLimit"}


class TemplateJsonMixin:
    """Mix into a unittest.TestCase that sets TEMPLATE."""

    TEMPLATE = None

    def test_template_json_shape(self):
        t = template_json(self.TEMPLATE)
        self.assertLessEqual(set(t), KEYS, "unknown keys in template.json")
        self.assertEqual(t["templateID"], self.TEMPLATE)
        # Every shipped template is a root filesystem of its own, built
        # from Debian packages: nothing of the host.
        self.assertEqual(set(t["rootfs"]) - {"debian", "variant", "packages", "profilePackages"},
                         set())
        self.assertRegex(t["rootfs"]["debian"], r"^[a-z]+$")
        extra = t["rootfs"].get("profilePackages", {})
        self.assertLessEqual(set(extra), {"e2b", "fc"}, "profilePackages names a profile")
        for pkg in t["rootfs"].get("packages", []) + sum(extra.values(), []):
            self.assertRegex(pkg, r"^[a-z0-9][a-z0-9+.-]*$")
        self.assertRegex(t["templateID"], r"^[a-z0-9][a-z0-9-]*$")
        for alias in t.get("aliases", []):
            self.assertRegex(alias, r"^[a-z0-9][a-z0-9-]*$")
        for k, v in t.get("envVars", {}).items():
            self.assertRegex(k, r"^[A-Za-z_][A-Za-z0-9_]*$")
            self.assertIsInstance(v, str)
        for key in ("cpuCount", "memoryMB", "diskSizeMB"):
            self.assertIsInstance(t[key], int)
            self.assertGreater(t[key], 0)

    def test_start_and_ready(self):
        t = template_json(self.TEMPLATE)
        start, ready = t.get("start"), t.get("ready")
        if start is None:
            self.assertIsNone(ready, "a ready check without a start command can never pass")
            return
        self.assertIsInstance(start["cmd"], str)
        self.assertIn(start.get("user", "user"), ("user", "root"))
        self.assertTrue(start.get("cwd", "/home/user").startswith("/"))
        # Every app file the command names must exist in app/.
        for rel in re.findall(r"/opt/abx/app/([\w./-]+)", start["cmd"]):
            self.assertTrue(os.path.isfile(os.path.join(TEMPLATES, self.TEMPLATE, "app", rel)), rel)
        if ready is not None:
            self.assertIsInstance(ready["port"], int)
            self.assertTrue(0 < ready["port"] < 65536)
            self.assertNotEqual(ready["port"], 49983, "49983 belongs to envd")
            self.assertTrue(ready["path"].startswith("/"))
            self.assertGreater(ready.get("timeoutMs", 20000), 0)
            self.assertIn("--port %d" % ready["port"], start["cmd"])
