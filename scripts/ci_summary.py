#!/usr/bin/env python3
"""Where a CI run's time went, and what it counted (.ci/run's closing).

usage: ci_summary.py --phases TSV [--reports DIR ...] CTEST-LOG ...

Prints a table of the phases (TSV lines NAME<TAB>SECONDS, in order), the
10 slowest ctest cases of all the logs, the counts (ctest cases per log,
and the suite tests each abx-e2e JSON report under the DIRs executed),
then, last, ctest's summary line of all the logs together. Standard
library only."""
import argparse
import glob
import json
import os
import re

CASE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(?:\*+)?(\S.*?)\s+([\d.]+) sec$")
SUMMARY = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)")


def minutes(s):
    return "%d:%02d" % (s // 60, s % 60)


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return None


def phases(path):
    print("ci: where the time went")
    for ln in read_lines(path) or []:
        name, _, secs = ln.partition("\t")
        if secs.strip().isdigit():
            s = int(secs)
            print("  %-22s %6d s  %6s" % (name, s, minutes(s)))


def ctest_logs(paths):
    """(cases, total, failed): every case's (seconds, name, outcome, log)."""
    cases, total, failed = [], 0, 0
    print("ci: ctest cases")
    for p in paths:
        lines = read_lines(p)
        if lines is None:
            print("  %-40s not run" % p)
            continue
        n = f = None
        for ln in lines:
            m = CASE.match(ln)
            if m:
                cases.append((float(m.group(3)), m.group(1), m.group(2), os.path.basename(p)))
            m = SUMMARY.match(ln)
            if m:
                f, n = int(m.group(1)), int(m.group(2))
        if n is None:
            print("  %-40s no summary" % p)
            continue
        total, failed = total + n, failed + f
        print("  %-40s %4d cases, %d failed" % (p, n, f))
    return cases, total, failed


def slowest(cases, k=10):
    print("ci: the %d slowest cases" % k)
    for secs, name, outcome, log in sorted(cases, reverse=True)[:k]:
        print("  %7.1f s  %-36s %-8s (%s)" % (secs, name, outcome, log))


def reports(dirs):
    """The suite tests each JSON report of abx-e2e under dirs executed."""
    print("ci: suite tests executed")
    n = 0
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "**", "*.json"), recursive=True)):
            try:
                with open(path) as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                continue
            s = doc.get("summary") if isinstance(doc, dict) else None
            if not isinstance(s, dict) or "collected" not in s:
                continue
            ran = sum(s.get(k, 0) for k in ("passed", "failed", "error", "xfailed", "xpassed"))
            n += ran
            print("  %-44s %4d executed (%d passed, %d failed, %d skipped)" % (
                path, ran, s.get("passed", 0), s.get("failed", 0) + s.get("error", 0),
                s.get("skipped", 0)))
    print("  %-44s %4d executed" % ("all", n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", required=True)
    ap.add_argument("--reports", nargs="*", default=[])
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    phases(a.phases)
    cases, total, failed = ctest_logs(a.logs)
    slowest(cases)
    reports(a.reports)
    if total:
        print("%d%% tests passed, %d tests failed out of %d" % (
            (total - failed) * 100 // total, failed, total))
    else:
        print("0 passed, 0 failed")


if __name__ == "__main__":
    main()
