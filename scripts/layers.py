#!/usr/bin/env python3
"""Checks the layering of the C code from the objects the build made.

For each library and program (a *unit group*) it reads `nm` of its object
files and checks two rules (docs/ARCHITECTURE.md):
  1. reach: every symbol a group uses that the project defines comes from
     the group itself or from a group it reaches by its links;
  2. no cycles: inside a group, the graph "file A uses a symbol file B
     defines" has no cycle, so each file can be read after the ones it uses.
The layers and their links are cmake/layers.txt, which CMake links from;
--docs checks that docs/ARCHITECTURE.md's table names the same links,
and that each folder's README lists every file of it.
Usage: scripts/layers.py [--runner-only] [BUILD_DIR]   (ctest lint.layers)
       scripts/layers.py --docs
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "cmake", "layers.txt")


def read_table(path=TABLE):
    """cmake/layers.txt: [(layer, target, folder, [links])], in its order."""
    rows = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            layer, target, folder, *links = line.split()
            rows.append((layer, target, folder, [x for x in links if x != "-"]))
    return rows


def build_layers(rows):
    """group -> (object folder under the build dir, groups it may use: the
    layers it links, and theirs)."""
    links = {r[0]: r[3] for r in rows}

    def reach(layer, seen):
        for x in links[layer]:
            if x not in seen:
                seen.add(x)
                reach(x, seen)
        return seen
    out = {}
    for layer, target, folder, _ in rows:
        # a folder with its own CMakeLists.txt builds there; a layer
        # library of runtime/, host/ or abx-local/server/ in its parent
        home = folder if os.path.exists(os.path.join(ROOT, folder, "CMakeLists.txt")) \
            else os.path.dirname(folder)
        out[layer] = (f"{home}/CMakeFiles/{target}.dir", sorted(reach(layer, set())))
    return out


LAYERS = build_layers(read_table())

DEFINED = set("TDBRCGSVWu")
# A library's own names: runtime/client/curl_lazy.c defines libcurl's
# functions only to forward them to the library it loads on first use, so
# abx-local, linked to libcurl itself, does not use the client by them.
EXTERNAL = ("curl_",)


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
            if len(ln.split()) == 3 and ln.split()[1] in DEFINED
            and not ln.split()[-1].startswith(EXTERNAL)}
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


def check_docs(rows, path=os.path.join(ROOT, "docs", "ARCHITECTURE.md")):
    """The "Layers" table of docs/ARCHITECTURE.md names each layer of the
    table, with its target, folder and links, and no other. Problems, as
    lines."""
    with open(path) as f:
        text = f.read().split("\n## Layers", 1)[-1].split("\n## ", 1)[0]
    seen, problems = {}, []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        name, _, target = cells[1].partition(" (")
        links = [] if cells[3] == "—" else [x.strip() for x in cells[3].split(",")]
        seen[name] = (target.strip("`)"), cells[0].strip("`").rstrip("/"), links)
    for layer, target, folder, links in rows:
        if layer not in seen:
            problems.append(f"layers: docs/ARCHITECTURE.md lacks the layer {layer}")
        elif seen[layer] != (target, folder, links):
            problems.append(f"layers: docs/ARCHITECTURE.md has {layer} as {seen[layer]}, "
                            f"cmake/layers.txt as {(target, folder, links)}")
    for name in sorted(set(seen) - {r[0] for r in rows}):
        problems.append(f"layers: docs/ARCHITECTURE.md names {name}, not in cmake/layers.txt")
    return problems


SOURCES = (".c", ".h", ".lua", ".html", ".py")


def check_readmes(rows):
    """Each layer folder of host/, bindings/ and abx-local/server/ names
    every source file of it in a README: its own, or (abx-local/server's
    folders) its parent's, as `folder/file`. Problems, as lines."""
    problems = []
    for _, _, folder, _ in rows:
        if not folder.startswith(("host", "bindings", "abx-local/server")):
            continue
        own = os.path.join(ROOT, folder, "README.md")
        parent = os.path.join(ROOT, os.path.dirname(folder), "README.md")
        readme, prefix = (own, "") if os.path.exists(own) else \
            (parent, os.path.basename(folder) + "/")
        try:
            with open(readme) as f:
                text = f.read()
        except OSError:
            problems.append(f"layers: {folder} has no README.md")
            continue
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(SOURCES) and f"`{prefix}{name}`" not in text:
                problems.append(f"layers: {os.path.relpath(readme, ROOT)} does not list "
                                f"{prefix}{name}")
    return problems


def main():
    args = sys.argv[1:]
    if "--docs" in args:
        problems = check_docs(read_table()) + check_readmes(read_table())
        for p in problems:
            print(p)
        print(f"layers: docs: {len(read_table())} layers, {len(problems)} problems")
        return 1 if problems else 0
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
