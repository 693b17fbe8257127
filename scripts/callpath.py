#!/usr/bin/env python3
"""Follows a Lua binding's C calls, file by file (docs/ARCHITECTURE.md
"Layers").

Each C file of bindings/ and runtime/ is compiled again with GCC's
-fcallgraph-info (the flags of the build's compile_commands.json), which
gives every function's direct calls. From an entry point (a function that
Lua calls: one of bindings/sdk that no C code calls, or one named) the
script walks
the calls and counts, edge by edge:
  stays    a call into the same file,
  moves    a call into another file (a room it had not been in on that
           path),
  returns  a call into another file from which the caller's file is
           reached again: a reader following the path goes back into a
           room it left.
A return is a problem (the file order of docs/ARCHITECTURE.md promises
none); calls through a function pointer are counted apart (the HTTP
engine's cancel hook, Lua's own calls), they are not followed.

Usage: scripts/callpath.py [-v] BUILD_DIR [FUNCTION...]
  no FUNCTION: every function of bindings/sdk no C code calls (what Lua
  calls: the modules' functions, methods, metamethods); -v: each one's
  rooms.
Exit 0 when no path returns, 1 when one does, 2 on bad input.
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ABX_CALLPATH_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("bindings/", "runtime/")
NODE = re.compile(r'node: \{ title: "([^"]+)" label: "[^"]*"( shape : ellipse)?')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')


def commands(build):
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("callpath: cannot read %s: %s (configure with cmake first)" % (path, e))
    out = []
    for e in entries:
        rel = os.path.relpath(e["file"], ROOT)
        if rel.startswith(FOLDERS) and rel.endswith(".c"):
            out.append((rel, e))
    return out


def callgraph(rel, entry, tmp):
    """The .ci text of one file, compiled again into tmp."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    if "-o" in args:
        i = args.index("-o")
        del args[i:i + 2]
    obj = os.path.join(tmp, rel.replace("/", "__") + ".o")
    args += ["-fcallgraph-info", "-o", obj]
    p = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("callpath: cannot compile %s: %s" % (rel, p.stderr.strip()[:500]))
    with open(obj[:-2] + ".ci") as f:
        return rel, f.read()


def parse(cis):
    """defs: title -> file (functions defined in our files);
    calls: title -> [titles]; externs name -> title of its definition."""
    defs, calls, local = {}, {}, {}
    for rel, text in cis:
        for title, declared in NODE.findall(text):
            if not declared:   # an ellipse: declared here, defined elsewhere
                defs[title] = rel
        for a, b in EDGE.findall(text):
            calls.setdefault(a, []).append(b)
        local[rel] = text
    return defs, calls


def reach_files(defs, calls):
    """fn -> the files reachable from fn (its own included): a fixpoint,
    so recursion and cycles inside a file count right."""
    reach = {f: {defs[f]} for f in defs}
    changed = True
    while changed:
        changed = False
        for f in defs:
            for g in calls.get(f, []):
                if g in defs and not reach[g] <= reach[f]:
                    reach[f] |= reach[g]
                    changed = True
    return reach


def follow(entry, defs, calls, reach):
    """Walks from entry; returns (stays, moves, returns, indirect, rooms,
    problems)."""
    stays = moves = returns = indirect = 0
    rooms, problems, done, todo = [], [], set(), [entry]
    while todo:
        f = todo.pop()
        if f in done:
            continue
        done.add(f)
        if defs[f] not in rooms:
            rooms.append(defs[f])
        for g in calls.get(f, []):
            if g == "__indirect_call":
                indirect += 1
                continue
            if g not in defs:
                continue   # Lua's API, libc, curl, cJSON: not ours
            if defs[g] == defs[f]:
                stays += 1
            elif defs[f] in reach[g]:
                returns += 1
                problems.append("%s (%s) -> %s (%s) leads back into %s" % (
                    f.split(":")[-1], defs[f], g.split(":")[-1], defs[g], defs[f]))
            else:
                moves += 1
            todo.append(g)
    return stays, moves, returns, indirect, rooms, problems


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build, names = args[0], args[1:]
    cmds = commands(build)
    with tempfile.TemporaryDirectory(prefix="abx-callpath-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            cis = list(ex.map(lambda c: callgraph(c[0], c[1], tmp), cmds))
    defs, calls = parse(cis)
    if names:
        entries = []
        for n in names:
            found = [t for t in defs if t == n or t.endswith(":" + n)]
            if not found:
                print("callpath: no function %s in bindings/ or runtime/" % n, file=sys.stderr)
                return 2
            entries += found
    else:   # what Lua calls: the functions of bindings/sdk no C calls
        called = {g for gs in calls.values() for g in gs}
        entries = sorted(t for t in defs if defs[t].startswith("bindings/sdk/")
                         and t not in called)
    bad, reach = 0, reach_files(defs, calls)
    for e in entries:
        stays, moves, returns, indirect, rooms, problems = follow(e, defs, calls, reach)
        if verbose or problems or names:
            print("%s (%s): %d stays, %d moves, %d returns, %d indirect calls not followed"
                  % (e.split(":")[-1], defs[e], stays, moves, returns, indirect))
            if verbose or names:
                print("  rooms, in the order first entered: " + " -> ".join(rooms))
        for p in problems:
            print("  problem: " + p)
        bad += bool(problems)
    print("callpath: %d entry points, %d return to a room they left" % (len(entries), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
