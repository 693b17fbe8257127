#!/usr/bin/env python3
"""(g) The API key as tools print it by accident is masked in all seven
channels: cases/test_accidental.lua runs, inside a sandbox, each of
`env | base64`, base64 -w 20 and at the two other alignments, xxd, xxd -p,
hexdump -C, od -An -tx1, od -tx1, colon- and space-separated hex, fold -w
16, grep --color, \\xNN escapes and the part of the key after `e2b_`, prints
the output and fails with it. The run writes every channel: the terminal
(stdout, stderr), --junitxml, --json, --html, --evidence, and under GitHub
Actions its annotations and job summary.

Each channel is read back as its reader would (XML and JSON escapes
undone), cut into one stretch per test, and decoded: no stretch may give
away 8 bytes of the key as text (line breaks and ANSI sequences taken
out), in the bytes its hex digits spell, or in those its base64 characters
spell, at any alignment. A check per form and channel; and the unmasked
output of each tool does give the key away (the decoder can fail)."""
import base64
import html
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from glib import main, rc_is, Run  # noqa: E402
from abxtest import check, load_json  # noqa: E402

CASE = "cases/test_accidental.lua"   # its forms: cases/accidental_forms.tsv
IDS = ["f%02d" % i for i in range(1, 16)]
CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
JSON_ESC = re.compile(r"\\(u[0-9a-fA-F]{4}|[nrt\"/\\bf])")
B64 = re.compile(r"[^A-Za-z0-9+/]")
NONHEX = re.compile(r"[^0-9a-fA-F]")


def unjson(s):
    def one(m):
        e = m.group(1)
        if e[0] == "u":
            return chr(int(e[1:], 16))
        return {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}.get(e, e)
    return JSON_ESC.sub(one, s)


def views(text):
    """text, and text as a reader of an escaped channel sees it."""
    once = unjson(html.unescape(text))
    return [text, once, unjson(once)]


def gives_away(text, key):
    """What of key text still spells: a reason, or None."""
    frags = {key[i:i + 8] for i in range(len(key) - 7)}
    kb = key.encode()
    bfrags = {kb[i:i + 8] for i in range(len(kb) - 7)}
    for v in views(text):
        flat = CSI.sub("", v).replace("\r", "").replace("\n", "")
        if any(f in flat for f in frags):
            return "as text"
        hexd = NONHEX.sub("", v)
        for al in (0, 1):
            h = hexd[al:]
            raw = bytes.fromhex(h[:len(h) // 2 * 2])
            if any(f in raw for f in bfrags):
                return "as hex"
        b = B64.sub("", v)
        for al in range(4):
            s = b[al:]
            raw = base64.b64decode(s[:len(s) // 4 * 4])
            if any(f in raw for f in bfrags):
                return "as base64"
    return None


def stretches(text):
    """{id: the part of text from the id's first mention to the next
    mention of another id}; whole text under "*" too."""
    marks = sorted((m.start(), m.group(1)) for m in re.finditer(r"\b(f\d\d)\b", text))
    out = {"*": text}
    for n, (at, fid) in enumerate(marks):
        end = next((a for a, f in marks[n + 1:] if f != fid), len(text))
        out[fid] = out.get(fid, "") + text[at:end]
    return out


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return f.read()
    except OSError:
        return ""


def body(p):
    r = Run(p)
    summary = os.path.join(r.side, "summary.md")
    try:
        rc, out, err = r.run(CASE, "--junitxml", "r.xml", "--json", "r.json", "--html", "r.html",
                             "--evidence", "accidental", "--evidence-dir", "ev", "-rA",
                             env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary},
                             timeout=300)
        rc_is(rc, 1, "the run (every test fails)", out, err)
        doc = load_json(os.path.join(r.dir, "r.json")) or {"tests": []}
        got = {t["nodeid"].rsplit(" ", 1)[-1]: t for t in doc.get("tests", [])}
        for fid in IDS:
            t = got.get(fid, {})
            text = (t.get("message") or "") + (t.get("longrepr") or "")
            check(t.get("outcome") in ("failed", "error") and "[MASKED]" in text,
                  "%s: failed with its output, masked (%s: %.200r)" % (fid, t.get("outcome"), text))
        ev_dir = os.path.join(r.dir, "ev")
        evidence = "".join(read(os.path.join(ev_dir, n)) for n in sorted(os.listdir(ev_dir))) \
            if os.path.isdir(ev_dir) else ""
        lines = out.splitlines(keepends=True)
        channels = {
            "terminal": "".join(x for x in lines if not x.startswith("::")) + err,
            "annotations": "".join(x for x in lines if x.startswith("::")),
            "JUnit": read(os.path.join(r.dir, "r.xml")),
            "JSON": read(os.path.join(r.dir, "r.json")),
            "HTML": read(os.path.join(r.dir, "r.html")),
            "evidence": evidence,
            "job summary": read(summary),
        }
        key = p.key
        for name, text in channels.items():
            parts = stretches(text)
            for fid in IDS:
                part = parts.get(fid)
                if not check(part, "%s: %s carries the test" % (name, fid)):
                    continue
                why = gives_away(part, key)
                check(why is None, "%s: %s gives nothing of the key away (%s)"
                      % (name, fid, why or "-"))
            why = gives_away(text, key)
            check(why is None, "%s as a whole gives nothing of the key away (%s)"
                  % (name, why or "-"))
    finally:
        r.cleanup()
    tools_leak(p)


def forms():
    """(id, command) of each line of cases/accidental_forms.tsv."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases",
                           "accidental_forms.tsv")) as f:
        return [tuple(ln.rstrip("\n").split("\t")[::2]) for ln in f if ln.startswith("f")]


def tools_leak(p):
    """The decoder finds the key in what each tool prints, unmasked."""
    sid = p.create(timeout=120)["sandboxID"]
    cmds = forms()
    check([fid for fid, _ in cmds] == IDS, "every form's command is read (%d)" % len(cmds))
    for tool in ("xxd", "hexdump"):
        with open("/usr/bin/" + tool, "rb") as f:
            data = f.read()
        st, _, _ = p.data_request(sid, 49983, "POST", "/files?path=/home/user/bin/" + tool,
                                  data, {"Content-Type": "application/octet-stream",
                                         "Authorization": "Basic dXNlcjo="})[:3]
        check(st == 200, "%s copied into the sandbox (%s)" % (tool, st))
    p.run(sid, "chmod +x /home/user/bin/*")
    for fid, cmd in cmds:
        code, out, err = p.run(sid, "export K=%s PATH=/home/user/bin:/usr/bin:/bin; %s"
                               % (p.key, cmd))
        check(code == 0 and gives_away(out, p.key), "%s unmasked gives the key away (%s %s)"
              % (fid, code, err[-200:]))
    p.kill(sid)


main(body)
