#!/usr/bin/env python3
"""Runs every command of the FC first-run runbook on abx-local's fc profile.

usage: run_runbook.py --bin PATH/abx-e2e [--keep] [--list]

Reads docs/fc-first-run.md and docs/fc-first-run.zh-CN.md (from the source
tree this script lives in). A runnable block is a ```sh fence right after
a marker line:

  <!-- runbook: NAME -->            exits 0
  <!-- runbook: NAME (exit N) -->   exits N on abx-local (the text says why)

NAME is lower case letters, digits and '-', unique in the file; marker and
fence may be indented alike (a block inside a list item). A line that
starts like a marker but does not parse, a marker not followed by a ```sh
fence, and a ```sh/bash/shell/console fence without a marker are errors:
an unrun command must not pass for a checked one. Other fences (text,
dotenv, ...) are illustrations and are not run.

Checks, in order:
  - both files hold the same runnable blocks, name for name, in the same
    order, byte for byte (the first difference is named, with both
    lines), and the same `<!-- skips:fc -->` list, which must equal
    docs/capabilities.md's;
  - every path under build/ the blocks name, but build/host/abx-e2e, is
    build/e2e or under it, and ignored by git in the source tree (an
    operator runs the commands there: reports must not litter it);
  - each block, in order, run as `bash -e -o pipefail -c BLOCK` with its
    output shown, within 600 s, exits 0 or its declared N;
  - each JSON report a block wrote (`--json FILE`) has no failed, error,
    xfailed or xpassed test, and skips exactly the runbook's skips:fc
    list, each with its reason: the outcome the runbook promises;
  - no sanitizer report in any output, and no sandbox left on the server.
Where the blocks run: one abx-local (--profile fc) is started; the
environment is this one without the platform variables and the suite's
knobs but the TTLs (ctest shortens them, as CI does), plus the server's
ABX_SANDBOX_* variables, E2E_RUN_ID, CI=true and NO_COLOR=1. The current
directory is a scratch copy of what the commands see of the source tree
root: tests-lua/*.lua, KNOWN-ISSUES.md, and build/host/abx-e2e, a symlink
to --bin, so the blocks run verbatim. Not the source tree itself: there
`abx-e2e cleanup --yes` would close other runs' ledger entries
(.abx-e2e/runs) as gone from this server, the run would replace the
developer's --lf cache and read their .env, and the reports would
overwrite an operator's real ones in build/e2e/. --keep leaves the
scratch directory (its path is printed); --list prints the blocks and
runs nothing. Standard library only."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from abxlocal import Server, e2e_env  # noqa: E402
from mdfence import fences  # noqa: E402
from abxtest import (CAPS, KNOBS, PLATFORM, Fail, check, copy_suite, done,  # noqa: E402
                     remove, sanitizer_report, scratch, tail, teller)

SRC = os.path.dirname(os.path.dirname(HERE))
DOCS = ["docs/fc-first-run.md", "docs/fc-first-run.zh-CN.md"]
CAPS_DOC = "docs/capabilities.md"
BLOCK_TIMEOUT = 600
# Knobs kept from the caller: ctest shortens the TTLs as CI does.
KEEP_KNOBS = ("E2E_SANDBOX_TTL", "E2E_SHORT_TTL")

MARKER = re.compile(
    r"^<!-- runbook: ([a-z0-9]+(?:-[a-z0-9]+)*)(?: \(exit ([0-9]{1,3})\))? -->$")
LOOSE = re.compile(r"^\s*<!--\s*runbook\b", re.I)
SHELL_LANGS = ("sh", "bash", "shell", "console", "zsh")
SKIPS_MARKER = "<!-- skips:fc -->"
# A path under build/ in a block (a word starting build/).
BUILD_PATH = re.compile(r"(?<![\w./-])build/[\w./-]*")
say = teller("docs.runbook")


class Block:
    def __init__(self, doc, line, name, want, code):
        self.doc, self.line, self.name, self.want, self.code = doc, line, name, want, code

    def where(self):
        return "%s:%d" % (self.doc, self.line)


def extract(rel):
    """(runnable blocks in order, the skips:fc list's lines) of one file."""
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    # Every marker must sit right before a shell fence: first find them all.
    markers = {}
    for n, line in enumerate(lines):
        if not LOOSE.match(line):
            continue
        m = MARKER.match(line.strip())
        if not m:
            raise Fail("%s:%d: malformed runbook marker %r (want `<!-- runbook: "
                       "NAME -->` or `<!-- runbook: NAME (exit N) -->`)" % (
                           rel, n + 1, line.strip()))
        markers[n] = m
    blocks, seen, used, skips = [], {}, set(), None
    for start, indent, lang, body in fences(lines, rel):
        m = markers.get(start - 1)
        if m and lines[start - 1].startswith(indent) and lang == "sh":
            used.add(start - 1)
            name = m.group(1)
            if name in seen:
                raise Fail("%s:%d: block %s defined twice (first at line %d)" % (
                    rel, start, name, seen[name]))
            seen[name] = start
            blocks.append(Block(rel, start + 2, name, int(m.group(2) or 0),
                                "\n".join(body) + "\n"))
        elif lang in SHELL_LANGS:
            raise Fail("%s:%d: a ```%s block without a runbook marker: mark it "
                       "`<!-- runbook: NAME -->` (and ```sh), or make it ```text "
                       "if it is not meant to be run" % (rel, start + 1, lang))
        if start > 0 and lines[start - 1].strip() == SKIPS_MARKER:
            if skips is not None:
                raise Fail("%s:%d: a second %s" % (rel, start, SKIPS_MARKER))
            skips = body
    for n in sorted(set(markers) - used):
        raise Fail("%s:%d: runbook marker not followed by a ```sh block at the "
                   "same indent" % (rel, n + 1))
    if not blocks:
        raise Fail("%s: no runnable block" % rel)
    return blocks, skips


def compare(a, b):
    """Raises Fail naming the first difference of two block lists."""
    names_a, names_b = [e.name for e in a], [e.name for e in b]
    for ea in a:
        if ea.name not in names_b:
            raise Fail("block %s (%s) is missing from %s" % (ea.name, ea.where(), DOCS[1]))
    for eb in b:
        if eb.name not in names_a:
            raise Fail("block %s (%s) is missing from %s" % (eb.name, eb.where(), DOCS[0]))
    for ea, eb in zip(a, b):
        if ea.name != eb.name:
            raise Fail("blocks in a different order: %s has %s where %s has %s" % (
                ea.where(), ea.name, eb.where(), eb.name))
        if ea.want != eb.want:
            raise Fail("block %s: %s expects exit %d, %s exit %d" % (
                ea.name, ea.where(), ea.want, eb.where(), eb.want))
        if ea.code != eb.code:
            la, lb = ea.code.split("\n"), eb.code.split("\n")
            n = next(k for k in range(max(len(la), len(lb)))
                     if k >= len(la) or k >= len(lb) or la[k] != lb[k])
            raise Fail("block %s differs: %s:%d: %r\n  vs %s:%d: %r" % (
                ea.name, ea.doc, ea.line + n, la[n] if n < len(la) else "<end of block>",
                eb.doc, eb.line + n, lb[n] if n < len(lb) else "<end of block>"))


def capabilities_skips():
    """The lines of docs/capabilities.md's skips:fc block."""
    with open(os.path.join(SRC, CAPS_DOC), encoding="utf-8") as f:
        lines = f.read().split("\n")
    for start, _, _, body in fences(lines, CAPS_DOC):
        if start > 0 and lines[start - 1].strip() == SKIPS_MARKER:
            return body
    raise Fail("%s: no %s block" % (CAPS_DOC, SKIPS_MARKER))


def expected_skips(lines):
    """{node id: reason} of a skips list (NODE-ID, two spaces, REASON)."""
    out = {}
    for line in lines:
        if line.strip():
            nodeid, _, reason = line.strip().partition("  ")
            out[nodeid] = reason.strip()
    return out


def check_paths(blocks):
    """Paths under build/ the blocks write: under build/e2e/, git-ignored."""
    paths = sorted({p.rstrip(".") for b in blocks for p in BUILD_PATH.findall(b.code)}
                   - {"build/host/abx-e2e"})
    bad = [p for p in paths if p != "build/e2e" and not p.startswith("build/e2e/")]
    check(not bad, "every build/ path the blocks name is under build/e2e/%s"
          % "".join("\n  not: " + p for p in bad))
    if shutil.which("git") is None or not os.path.isdir(os.path.join(SRC, ".git")):
        say("note: no git work tree at %s: ignore rules not checked" % SRC)
        return
    p = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=SRC,
                       input="".join(x + "\n" for x in paths), capture_output=True,
                       text=True)
    ignored = set(p.stdout.split())
    check(set(paths) <= ignored, "git ignores every path the blocks write (%d)%s" % (
        len(paths), "".join("\n  not ignored: " + p for p in sorted(set(paths) - ignored))))


def prepare(work, binary):
    """The scratch root: what the commands see of the source tree."""
    copy_suite(SRC, work)
    shutil.copy(os.path.join(SRC, "KNOWN-ISSUES.md"), work)
    os.makedirs(os.path.join(work, "build", "host"))
    os.symlink(binary, os.path.join(work, "build", "host", "abx-e2e"))


def run_block(block, work, env):
    """Runs one block in its own process group (a timeout ends every
    process it started); (exit status or None on timeout, its output)."""
    say("---- %s (%s), want exit %d ----" % (block.name, block.where(), block.want))
    sys.stdout.write("".join("$ " + l + "\n" for l in block.code.rstrip("\n").split("\n")))
    sys.stdout.flush()
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=work,
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = []

    def expire():
        timed_out.append(True)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    timer = threading.Timer(BLOCK_TIMEOUT, expire)
    timer.start()
    chunks, start = [], time.time()
    try:
        for chunk in iter(lambda: p.stdout.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            chunks.append(chunk)
        rc = p.wait()
    finally:
        timer.cancel()
    say("%s: exit %d in %.1f s" % (block.name, rc, time.time() - start))
    return (None if timed_out else rc), b"".join(chunks).decode("utf-8", "replace")


def check_report(path, rel, want):
    """A --json report the blocks wrote: the outcome the runbook promises."""
    try:
        with open(path, encoding="utf-8") as f:
            tests = json.load(f)["tests"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        check(False, "%s: readable JSON report (%s)" % (rel, e))
        return
    bad = ["%s: %s" % (t.get("nodeid"), t.get("outcome")) for t in tests
           if t.get("outcome") in ("failed", "error", "xfailed", "xpassed")]
    check(tests and not bad, "%s: %d tests, none failed, error, xfailed or xpassed%s" % (
        rel, len(tests), "".join("\n  " + b for b in bad)))
    got = {t["nodeid"]: t.get("reason") or t.get("message") or ""
           for t in tests if t.get("outcome") == "skipped"}
    diff = (["unexpectedly skipped: %s (%s)" % (k, got[k]) for k in sorted(set(got) - set(want))]
            + ["not skipped: %s" % k for k in sorted(set(want) - set(got))]
            + ["%s: skipped with %r, want %r" % (k, got[k], want[k])
               for k in sorted(set(got) & set(want)) if not got[k].startswith(want[k])])
    check(not diff, "%s: skips exactly the runbook's %d, with their reasons%s" % (
        rel, len(want), "".join("\n  " + d for d in diff)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="abx-e2e the blocks run as build/host/abx-e2e")
    ap.add_argument("--keep", action="store_true", help="leave the scratch directory")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    a = ap.parse_args()
    try:
        (en, en_skips), (zh, zh_skips) = extract(DOCS[0]), extract(DOCS[1])
        compare(en, zh)
        caps = capabilities_skips()
        for rel, skips in ((DOCS[0], en_skips), (DOCS[1], zh_skips)):
            if skips != caps:
                raise Fail("%s: its %s list differs from %s's" % (rel, SKIPS_MARKER, CAPS_DOC))
    except (Fail, OSError, UnicodeDecodeError) as e:
        say("FAIL: %s" % e)
        return 1
    say("%d runnable blocks, identical in %s and %s; the skips:fc list is %s's" % (
        len(en), DOCS[0], DOCS[1], CAPS_DOC))
    if a.list:
        for b in en:
            print("%-20s exit %-3d %s" % (b.name, b.want, b.where()))
        return 0
    if not a.bin:
        ap.error("--bin is required to run the blocks")
    check_paths(en)
    work = scratch("abx-runbook-")
    server = None
    try:
        prepare(work, os.path.abspath(a.bin))
        server = Server(extra=["--profile", "fc"])
        run_id = "runbook-%d" % os.getpid()
        keep = {k: os.environ[k] for k in KEEP_KNOBS if os.environ.get(k)}
        env = e2e_env(server, run_id, drop=PLATFORM + KNOBS + CAPS, NO_COLOR="1", **keep)
        for b in en:
            rc, output = run_block(b, work, env)
            check(rc == b.want, "%s (%s): exit %s, want %d" % (
                b.name, b.where(), "timeout after %d s" % BLOCK_TIMEOUT if rc is None
                else rc, b.want))
            if not check(not sanitizer_report(output), "%s: no sanitizer report" % b.name):
                print(tail(output, 6000))
        want = expected_skips(en_skips)
        # `--json FILE` of a run; not doctor's `--json > FILE` (its facts).
        reports = sorted({m for b in en
                          for m in re.findall(r"--json\s+([^\s<>|&;-]\S*)", b.code)})
        for rel in reports:
            check_report(os.path.join(work, rel), rel, want)
        left = server.ids()
        check(left == [], "no sandbox left on the server: %r" % left)
    except (OSError, RuntimeError) as e:
        check(False, "the blocks ran: %s" % e)
    finally:
        if server is not None:
            server.cleanup()
        if a.keep:
            say("kept " + work)
        else:
            remove(work)
    done()


if __name__ == "__main__":
    sys.exit(main())
