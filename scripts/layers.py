#!/usr/bin/env python3
"""Checks the layering of the C code from the objects the build made.

For each library and program (a *unit group*) it reads `nm` of its object
files and checks two rules (docs/ARCHITECTURE.md):
  1. reach: every symbol a group uses that the project defines comes from
     the group itself or from a group it may use (LAYERS below, the same
     one-way order the CMake files link in);
  2. no cycles: inside a group, the graph "file A uses a symbol file B
     defines" has no cycle, so each file can be read after the ones it uses.
Usage: scripts/layers.py [--runner-only] [BUILD_DIR]   (ctest lint.layers)
"""
import os
import subprocess
import sys

# What every folder of host/ may use.
BELOW_HOST = ["bindings", "safety", "client", "runner", "output", "codec"]

# group -> (object folder under the build dir, groups it may use)
LAYERS = {
    "codec":    ("runtime/CMakeFiles/abx_codec.dir/codec", []),
    "output":   ("runtime/CMakeFiles/abx_output.dir/output", ["codec"]),
    "client":   ("runtime/CMakeFiles/abx_client.dir/client",
                 ["output", "codec"]),
    "safety":   ("runtime/CMakeFiles/abx_safety.dir/safety",
                 ["client", "output", "codec"]),
    "runner":   ("runtime/CMakeFiles/abx_runner.dir/runner",
                 ["output", "codec"]),
    "bindings": ("bindings/CMakeFiles/abx_bindings.dir",
                 ["safety", "client", "runner", "output", "codec"]),
    # host/: one library per folder (host/CMakeLists.txt), then abx-e2e
    "host/base":    ("host/CMakeFiles/abx_host_base.dir", BELOW_HOST),
    "host/config":  ("host/CMakeFiles/abx_host_config.dir", ["host/base"] + BELOW_HOST),
    "host/lua":     ("host/CMakeFiles/abx_host_lua.dir",
                     ["host/config", "host/base"] + BELOW_HOST),
    "host/sandbox": ("host/CMakeFiles/abx_host_sandbox.dir",
                     ["host/config", "host/base"] + BELOW_HOST),
    "host/report":  ("host/CMakeFiles/abx_host_report.dir",
                     ["host/sandbox", "host/config", "host/base"] + BELOW_HOST),
    "host/run":     ("host/CMakeFiles/abx_host_run.dir",
                     ["host/report", "host/sandbox", "host/lua", "host/config",
                      "host/base"] + BELOW_HOST),
    "host/doctor":  ("host/CMakeFiles/abx_host_doctor.dir",
                     ["host/run", "host/report", "host/sandbox", "host/lua",
                      "host/config", "host/base"] + BELOW_HOST),
    "host/repl":    ("host/CMakeFiles/abx_host_repl.dir",
                     ["host/sandbox", "host/lua", "host/config", "host/base"] + BELOW_HOST),
    "host/main":    ("host/CMakeFiles/abx-e2e.dir",
                     ["host/doctor", "host/repl", "host/run", "host/report", "host/sandbox",
                      "host/lua", "host/config", "host/base"] + BELOW_HOST),
    "abx-local": ("abx-local/server/CMakeFiles/abx-local.dir", ["codec"]),
    "abx-envd": ("abx-local/envd/CMakeFiles/abx-envd.dir", ["codec"]),
}

DEFINED = set("TDBRCGSVWu")


def source_gone(obj):
    """An object whose source was deleted or renamed (left behind in a
    build dir that was not cleaned) must not count: its depfile names it."""
    try:
        with open(obj + ".d") as f:
            head = f.read(8192).split(":", 1)[1].split()
    except (OSError, IndexError):
        return False
    src = next((w for w in head if w != "\\"), None)
    return src is not None and not os.path.exists(src)


def objects(build, folder):
    root = os.path.join(build, folder)
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files if f.endswith(".o")]
    return sorted(o for o in found if not source_gone(o))


def symbols(obj):
    out = subprocess.run(["nm", "-g", "--defined-only", obj], check=True,
                         capture_output=True, text=True).stdout
    defs = {ln.split()[-1] for ln in out.splitlines()
            if len(ln.split()) == 3 and ln.split()[1] in DEFINED}
    out = subprocess.run(["nm", "-u", obj], check=True,
                         capture_output=True, text=True).stdout
    uses = {ln.split()[-1] for ln in out.splitlines() if ln.strip()}
    return defs, uses


def name_of(obj):
    # CMake names objects <source>.c.o; embedded chunks live under a build path
    base = os.path.basename(obj)
    return base[:-4] if base.endswith(".c.o") else base


def cycles(graph):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    # A runner-only build (CMake's ABX_LOCAL) has no abx-local objects.
    runner_only = "--runner-only" in args
    args = [a for a in args if a != "--runner-only"]
    build = args[0] if args else "build"
    groups, owner = {}, {}
    for group, (folder, _) in LAYERS.items():
        if runner_only and group.startswith("abx-"):
            continue
        objs = objects(build, folder)
        if not objs:
            print(f"layers: no objects for {group} under {build}/{folder} "
                  "(build first)")
            return 2
        groups[group] = {name_of(o): symbols(o) for o in objs}
    # A symbol may be defined by more than one program (each links its own
    # copy); libraries first so that a use resolves to the lowest layer.
    for group, files in groups.items():
        for fname, (defs, _) in files.items():
            for s in defs:
                owner.setdefault(s, set()).add((group, fname))
    problems = 0
    for group, files in groups.items():
        allowed = set(LAYERS[group][1]) | {group}
        graph = {f: set() for f in files}
        for fname, (_, uses) in files.items():
            for s in sorted(uses):
                places = owner.get(s, set())
                local = {f for g, f in places if g == group}
                if local:
                    graph[fname] |= local - {fname}
                    continue
                reach = {g for g, _ in places}
                if reach and not reach & allowed:
                    print(f"layers: {group}/{fname} uses {s} from "
                          f"{', '.join(sorted(reach))}, which {group} may not use")
                    problems += 1
        for comp in cycles(graph):
            print(f"layers: cycle in {group}: {' <-> '.join(comp)}")
            problems += 1
    total = sum(len(f) for f in groups.values())
    print(f"layers: {len(groups)} groups, {total} files, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
