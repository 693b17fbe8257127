#!/usr/bin/env python3
"""(g) No secret in any output: cases/test_secrets.lua prints the API key,
a secure sandbox's access token and signed URLs (raw, base64,
percent-encoded; in stdout, stderr, a command's output, errors). Runs with
and without -s, with -n 2, --junitxml, --json, --evidence and --trace-http;
none of the values (nor their base64 / URL-encoded forms) may appear in
stdout, stderr, the reports or any file the run wrote.

The values are learned for real: the test writes them to a side file
outside the scanned tree, and the driver confirms the token against the
platform's GET /sandboxes/{id} (envdAccessToken) while the test waits."""
import os
import re
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import by_id, check, eq, secret_forms  # noqa: E402
from glib import main, rc_is, Run  # noqa: E402

S = "cases/test_secrets.lua::"
VARIANTS = [["--evidence", "secrets"], ["-s"], ["-n", "2"], ["-s", "--trace-http"],
            ["-n", "2", "--trace-http", "-rA", "-v"]]


class TokenWatch(threading.Thread):
    """Reads envdAccessToken of every sandbox of the run through the REST
    API while the run goes on."""

    def __init__(self, p, run_id):
        super().__init__(daemon=True)
        self.p, self.run_id, self.tokens, self.stop = p, run_id, {}, False

    def run(self):
        while not self.stop:
            try:
                for sid in self.p.ids({"e2e": self.run_id}):
                    if sid not in self.tokens:
                        st, js, _, _ = self.p.get(sid)
                        if st == 200 and js.get("envdAccessToken"):
                            self.tokens[sid] = js["envdAccessToken"]
            except Exception:  # noqa: BLE001  (server busy: try again)
                pass
            time.sleep(0.2)


def signatures(url):
    q = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    return q.get("signature", [])


def one_run(p, i, extra, texts, secrets):
    r = Run(p)
    try:
        w = TokenWatch(p, r.run_id)
        w.start()
        args = ["cases/test_secrets.lua", *extra, "--junitxml", "r%d.xml" % i,
                "--json", "r%d.json" % i]
        rc, out, err = r.run(*args)
        w.stop = True
        w.join()
        what = " ".join(extra) or "(default)"
        rc_is(rc, 1, what, out, err)
        got = by_id(r.report("r%d.json" % i))
        # Each test ran to its end: its own error, not an earlier one.
        main_t = got.get(S + "prints every secret it can reach", {})
        check(main_t.get("outcome") in ("failed", "error")
              and "failing with" in (main_t.get("message") or ""),
              what + ": main test ran to its last line (%s: %.200s)"
              % (main_t.get("outcome"), main_t.get("message")))
        cmd_t = got.get(S + "CommandExit carries the token", {})
        check(cmd_t.get("outcome") in ("failed", "error")
              and "exited with code 3" in (cmd_t.get("message") or ""),
              what + ": CommandExit test ended in CommandExit (%s: %.200s)"
              % (cmd_t.get("outcome"), cmd_t.get("message")))
        eq(got.get(S + "assertion carries the key", {}).get("outcome"), "failed",
           what + ": assertion test")
        check("[MASKED]" in out + err, what + ": something was masked")
        vals = (r.side_file("values") or "").splitlines()
        vals2 = (r.side_file("values2") or "").splitlines()
        if not check(len(vals) == 4 and len(vals2) == 2, what + ": the test reported its values"):
            return
        sid, url, url_exp, token = vals
        check(token != "no-token" and len(token) >= 16, what + ": token read in the sandbox")
        # (values never printed: they are secrets too)
        check(w.tokens.get(sid) == token, what + ": token = envdAccessToken of GET /sandboxes/{id}")
        check(w.tokens.get(vals2[0]) == vals2[1], what + ": second token matches the platform")
        sigs = signatures(url) + signatures(url_exp)
        eq(len(sigs), 2, what + ": both URLs are signed")
        secrets[p.key] = "API key"
        secrets[token] = "access token"
        secrets[vals2[1]] = "access token"
        for s in sigs:
            secrets[s] = "URL signature"
        # A signed URL as a whole: its encodings carry the signature in
        # forms derived from the URL-encoded signature.
        secrets[url] = secrets[url_exp] = "signed URL"
        texts.append((what, "stdout", out))
        texts.append((what, "stderr", err))
        for root, dirs, names in os.walk(r.dir):
            dirs[:] = [d for d in dirs if os.path.join(root, d) != os.path.join(r.dir, "cases")]
            for n in names:
                path = os.path.join(root, n)
                with open(path, errors="replace") as f:
                    texts.append((what, os.path.relpath(path, r.dir), f.read()))
    finally:
        r.cleanup()


def body(p):
    texts, secrets = [], {}
    for i, extra in enumerate(VARIANTS):
        one_run(p, i, extra, texts, secrets)
    names = sorted({n for _, n, _ in texts})
    print("scanned %d outputs of %d runs (%s) for %d secret values"
          % (len(texts), len(VARIANTS), ", ".join(names), len(secrets)))
    check(any(n.endswith(".xml") for _, n, _ in texts), "JUnit reports were scanned")
    check(any(n.endswith(".json") for _, n, _ in texts), "JSON reports were scanned")
    check(any(n.endswith(".md") for _, n, _ in texts), "the evidence file was scanned")
    # Sandbox ids are not secret: a signed URL's host carries one.
    public = {m for s in secrets for m in re.findall(r"//\d+-([A-Za-z0-9]+)\.", s)}
    leaks = {}
    for s, kind in sorted(secrets.items()):
        for form, how in secret_forms(s, public).items():
            for what, name, text in texts:
                if form in text:
                    leaks.setdefault((kind, how, what), set()).add(name)
    for (kind, how, what), names in sorted(leaks.items()):
        check(False, "%s leaked (%s) in run %s: %s" % (kind, how, what, ", ".join(sorted(names))))
    eq(len(leaks), 0, "no secret form in any output")
    eq(p.ids(), [], "no sandbox left")


main(body)
