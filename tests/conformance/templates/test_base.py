"""templates.base: the bare template (envd only, no start command)."""
import os
import unittest

from helpers import TEMPLATES, template_json
from template_checks import TemplateJsonMixin


class BaseTemplate(TemplateJsonMixin, unittest.TestCase):
    TEMPLATE = "base"

    def test_no_start_command(self):
        t = template_json("base")
        self.assertNotIn("start", t)
        self.assertNotIn("ready", t)

    def test_every_template_has_a_json(self):
        names = sorted(os.listdir(TEMPLATES))
        for name in ("base", "code-interpreter-v1", "python-hello"):
            self.assertIn(name, names)
        for name in names:
            path = os.path.join(TEMPLATES, name)
            if os.path.isdir(path) and name != "tests":
                self.assertEqual(template_json(name)["templateID"], name)


if __name__ == "__main__":
    unittest.main()
