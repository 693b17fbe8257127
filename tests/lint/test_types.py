#!/usr/bin/env python3
"""ctest lint.types: types/*.lua (the LuaLS definitions editors read) list
exactly the Lua API of the built abx-e2e, nothing more, nothing less.

  test_types.py --bin ABX_E2E --src SOURCE_DIR      (python3 stdlib only)

The API side comes from the binary where it can be enumerated: the module
tables, the method tables of the metatables, the Lua-side classes, the
built-in fixtures and the capability names (tests/lint/types_api.lua, run
by `abx-e2e exec` against a fake control plane served here on 127.0.0.1,
so that a sandbox handle exists). What no table lists is read from the
bindings' source: the fields a userdata's __index function answers, the
fields of a remote call, every error class, and the option names each
function accepts (its `known[]` array in C; its checks in Lua).

The types side is parsed from types/*.lua: `---@class NAME` (with its
`---@field` lines and the `function VAR.f`/`VAR:f` that follow a
`local VAR` of that class) and `---@alias NAME` with its `---| "value"`
lines. Every name on one side only is a problem, and so is a checked
function or field without a one-line description."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import (ALL_ABX, FakeHandler, check, cli, done, load_json, remove,  # noqa: E402
                     run, scratch, scrubbed_env, serve_in_thread)

SANDBOX_ID = "types0"

# Option tables: (source file, the function name its options are checked
# under) -> the options class of types/ that lists them.
C_OPTIONS = {
    ("lua_sandbox.c", "create"): "e2e.sandbox.CreateOpts",
    ("lua_sandbox.c", "net_opts"): "e2e.sandbox.NetworkOpts",
    ("lua_sandbox.c", "connect"): "e2e.sandbox.ConnectOpts",
    ("lua_sandbox.c", "pause"): "e2e.Sandbox.PauseOpts",
    ("lua_sbxlist.c", "list"): "e2e.sandbox.ListOpts",
    ("lua_sbxhttp.c", "http"): "e2e.Sandbox.HttpOpts",
    ("lua_code.c", "run_code"): "e2e.Sandbox.RunCodeOpts",
    ("lua_code.c", "create_code_context"): "e2e.Sandbox.CodeContextOpts",
    ("lua_commands.c", "run"): "e2e.Commands.RunOpts",
    ("lua_commands.c", "connect"): "e2e.Commands.ConnectOpts",
    ("lua_cmdhandle.c", "wait"): "e2e.CommandHandle.WaitOpts",
    ("lua_files.c", "read"): "e2e.Files.ReadOpts",
    ("lua_files.c", "list"): "e2e.Files.ListOpts",
    ("lua_files.c", "download_url"): "e2e.Files.UrlOpts",
    ("lua_files.c", "upload_url"): "e2e.Files.UrlOpts",
    ("lua_watcher.c", "watch_dir"): "e2e.Files.WatchOpts",
    ("lua_http.c", "request"): "e2e.http.RequestOpts",
}
for _f in ("write", "write_many", "stat", "exists", "make_dir", "rename", "remove",
           "upload", "download"):
    C_OPTIONS[("lua_files.c", _f)] = "e2e.Files.UserOpts"

# Lua functions whose option keys are their `k ~= "x"` checks and their
# `opts.x` reads: (file, function header) -> options class.
LUA_OPTIONS = {
    ("prelude.lua", "local function register("): "e2e.TestOpts",
    ("prelude.lua", "function M.parametrize("): "e2e.ParametrizeOpts",
    ("prelude.lua", "function M.describe("): "e2e.DescribeOpts",
    ("prelude.lua", "function M.fixture("): "e2e.FixtureOpts",
    ("expect.lua", "function M.eventually("): "e2e.EventuallyOpts",
    ("expect.lua", "local function raises_spec("): "e2e.RaisesSpec",
}

# Fields a userdata's __index function answers: (file, function) -> class.
C_FIELDS = {
    ("lua_sandbox.c", "sbx_index"): "e2e.Sandbox",
    ("lua_cmdhandle.c", "h_index"): "e2e.CommandHandle",
}

# The alias of types/ that lists every error class.
ERROR_ALIAS = "e2e.ErrorClass"


# ---- the API side: the binary -----------------------------------------------

class Platform(FakeHandler):
    """Just enough control plane for sandbox.connect; envd answers 404."""

    def any(self):
        self.read_body()
        path = self.path.split("?")[0]
        if self.headers.get("E2b-Sandbox-Id"):
            return self.reply(404, {"code": 404, "message": "no envd here"})
        if path == "/sandboxes/%s/connect" % SANDBOX_ID:
            return self.reply(200, {"sandboxID": SANDBOX_ID, "templateID": "base",
                                    "clientID": "types", "envdVersion": "0.5.7",
                                    "domain": None, "envdAccessToken": "t" * 24})
        if path.startswith("/v2/sandboxes"):   # the end-of-run sweep
            return self.reply(200, [])
        return self.reply(404, {"code": 404, "message": "no route"})

    do_GET = do_POST = do_DELETE = any


def api_from_binary(binary, src):
    """{(kind, class): {name: origin}} read by types_api.lua."""
    if not check(os.access(binary, os.X_OK), "abx-e2e is built: %s" % binary):
        return None
    srv, url = serve_in_thread(Platform)
    work = scratch("abx-types-")
    env = scrubbed_env(ALL_ABX, ABX_SANDBOX_BASE_URL=url, ABX_SANDBOX_URL=url,
                       ABX_SANDBOX_DOMAIN="localhost:%d" % srv.server_address[1],
                       ABX_SANDBOX_API_KEY="e2b_" + "0" * 38 + "ab")
    try:
        p = run([binary, "exec", os.path.join(src, "tests", "lint", "types_api.lua"),
                 SANDBOX_ID], cwd=work, env=env)
    finally:
        srv.shutdown()
        remove(work)
    if not check(p.returncode == 0, "abx-e2e exec types_api.lua ran (exit %d)" % p.returncode):
        print(p.stdout[-3000:], p.stderr[-3000:])
        return None
    api, stray = {}, []
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            stray.append(line)
            continue
        api.setdefault((parts[0], parts[1]), {})[parts[2]] = "the binary"
    check(not stray, "types_api.lua printed only KIND<TAB>CLASS<TAB>NAME lines: %r" % stray[:3])
    return api


# ---- the API side: the source -------------------------------------------------

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def c_functions(text):
    """{name: (parameter names, body)} of the top-level C functions."""
    out = {}
    for m in re.finditer(r"^(?:static )?[\w \*]+?\b(\w+)\(([^)]*)\)\n\{\n(.*?)^\}",
                         text, re.M | re.S):
        params = [(re.findall(r"\w+", p) or [""])[-1] for p in m.group(2).split(",")]
        out[m.group(1)] = (params, m.group(3))
    return out


def call_args(text, fname):
    """The argument lists (split on commas) of every call fname(...) in text."""
    return [[a.strip() for a in m.group(1).split(",")]
            for m in re.finditer(r"\b%s\(([^()]*)\)" % fname, text)]


def bpath(bindings, base):
    """A file of bindings/ by its name, in whichever of its folders."""
    found = glob.glob(os.path.join(bindings, "**", base), recursive=True)
    return found[0] if found else os.path.join(bindings, base)


def c_options(bindings, problems):
    """{options class: {option: origin}} from the known[] arrays."""
    out, seen = {}, set()
    for path in sorted(glob.glob(os.path.join(bindings, "**", "*.c"), recursive=True)):
        base, text = os.path.basename(path), read(path)
        funcs = c_functions(text)
        for fname, (params, body) in funcs.items():
            arrays = {m.group(1): re.findall(r'"(\w+)"', m.group(2))
                      for m in re.finditer(r"static const char \*const (\w+)\[\] = \{(.*?)\};",
                                           body, re.S)}
            if not arrays:
                continue
            keys = []   # (function name the options are checked under, array)
            for m in re.finditer(r"abx_lopt_check\(L, [^,]+, (\"?\w+\"?), (\w+)\)", body):
                name, arr = m.group(1), m.group(2)
                if name.startswith('"'):
                    keys.append((name.strip('"'), arr))
                elif name in params:   # a parameter: the literal of each caller
                    pos = params.index(name)
                    for args in call_args(text, fname):
                        if len(args) > pos and args[pos].startswith('"'):
                            keys.append((args[pos].strip('"'), arr))
            if not keys:                # checked by hand (net_opts)
                keys = [(fname, a) for a in arrays]
            for key, arr in keys:
                cls = C_OPTIONS.get((base, key))
                seen.add((base, key))
                if cls is None:
                    problems.append("options of '%s' (bindings/%s) map to no class of types/: "
                                    "add them to C_OPTIONS in tests/lint/test_types.py"
                                    % (key, base))
                    continue
                for opt in arrays.get(arr, []):
                    out.setdefault(cls, {})[opt] = "bindings/%s '%s'" % (base, key)
    for key in sorted(set(C_OPTIONS) - seen):
        problems.append("C_OPTIONS names %s:%s, which checks no options: update "
                        "tests/lint/test_types.py" % key)
    return out


def lua_function(text, header):
    """The source of the top-level Lua function that starts with header."""
    m = re.search(r"^%s.*?^end\b" % re.escape(header), text, re.M | re.S)
    return m.group(0) if m else None


def lua_options(bindings, problems):
    out = {}
    for (base, header), cls in LUA_OPTIONS.items():
        body = lua_function(read(bpath(bindings, base)), header)
        if body is None:
            problems.append("bindings/%s has no '%s...': update LUA_OPTIONS in "
                            "tests/lint/test_types.py" % (base, header))
            continue
        for opt in set(re.findall(r'\bk ~= "(\w+)"', body)) | set(
                re.findall(r"\bopts\.(\w+)", body)):
            out.setdefault(cls, {})[opt] = "bindings/%s %s...)" % (base, header)
    return out


def c_fields(bindings, problems):
    out = {}
    for (base, fname), cls in C_FIELDS.items():
        funcs = c_functions(read(bpath(bindings, base)))
        if fname not in funcs:
            problems.append("bindings/%s has no %s(): update C_FIELDS in "
                            "tests/lint/test_types.py" % (base, fname))
            continue
        for name in re.findall(r'strcmp\(k, "(\w+)"\) == 0', funcs[fname][1]):
            out.setdefault(cls, {})[name] = "bindings/%s %s()" % (base, fname)
    return out


def call_fields(bindings):
    """The public fields of a remote call: setmetatable({...}, Call)."""
    text = read(bpath(bindings, "remote.lua"))
    out = {}
    for m in re.finditer(r"setmetatable\(\{([^{}]*)\},\s*Call\)", text):
        for name in re.findall(r"\b(\w+) =", m.group(1)):
            if not name.startswith("_"):
                out[name] = "bindings/sdk/remote.lua setmetatable(..., Call)"
    return out


def error_classes(src):
    """Every class an error value of e2e can carry, where it is made."""
    out = {}

    def add(names, where):
        for n in names:
            out.setdefault(n, where)
    add(re.findall(r'#define ABX_ERR_\w+ "(\w+)"', read(os.path.join(src, "bindings", "core",
                                                                     "e2e_error.h"))),
        "bindings/core/e2e_error.h")
    text = read(os.path.join(src, "runtime", "client", "errclass.c"))
    names = c_functions(text).get("abx_errclass_name", ([], ""))[1]
    add([n for n in re.findall(r'return "(\w+)";', names) if n != "OK"],
        "runtime/client/errclass.c")
    files = glob.glob(os.path.join(src, "bindings", "**", "*.c"), recursive=True) + glob.glob(
        os.path.join(src, "bindings", "**", "*.lua"), recursive=True) + [
        os.path.join(src, "host", "repl", "exec.c")]
    for path in sorted(files):
        text = read(path)
        rel = os.path.relpath(path, src)
        add(re.findall(r'lua_pushliteral\(L, "(\w+)"\);\s*lua_setfield\(L, -2, "class"\)', text),
            rel)
        add(re.findall(r"""\bclass = ["'](\w+)["']""", text), rel)
        add(re.findall(r'\bmkerr\("(\w+)"', text), rel)
    return out


# ---- the types side -----------------------------------------------------------

def scan_type(s):
    """(type expression, rest) of s, which starts with a LuaLS type."""
    depth, i = 0, 0
    while i < len(s):
        c = s[i]
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c in "\"'":
            j = s.find(c, i + 1)
            i = j if j > 0 else len(s)
        elif c == " " and depth == 0:
            # `fun(...): ret`, and unions written with spaces around '|'
            if s[i - 1] == ":" or s[i + 1:i + 2] == "|" or s[i - 1] == "|":
                i += 1
                continue
            break
        i += 1
    return s[:i], s[i:].strip()


class Types:
    def __init__(self):
        self.members = {}   # class -> {name: (where, described)}
        self.aliases = {}   # alias -> {value: (where, described)}
        self.metas = {}     # meta name -> file
        self.problems = []

    def add(self, table, owner, name, where, described):
        table.setdefault(owner, {})[name] = (where, described)

    def parse(self, path):
        rel = os.path.join("types", os.path.basename(path))
        lines = read(path).split("\n")
        if not lines[0].startswith("---@meta"):
            self.problems.append("%s: does not start with ---@meta" % rel)
        else:
            self.metas[lines[0][len("---@meta"):].strip() or "(unnamed)"] = rel
        var_class = {}
        block = []
        for no, line in enumerate(lines, 1):
            if line.startswith("---"):
                block.append((no, line))
                continue
            self.block(block, line, no, rel, var_class)
            block = []

    def block(self, block, code, code_no, rel, var_class):
        cls = alias = None
        doc = any(l.startswith("--- ") and l[4:].strip() for _, l in block)
        for no, l in block:
            where = "%s:%d" % (rel, no)
            m = re.match(r"---@class\s+([\w.]+)", l)
            if m:
                cls, alias = m.group(1), None
                self.members.setdefault(cls, {})
                continue
            m = re.match(r"---@alias\s+([\w.]+)", l)
            if m:
                alias, cls = m.group(1), None
                self.aliases.setdefault(alias, {})
                continue
            m = re.match(r"---@field\s+(?:(?:private|protected|public|package)\s+)?"
                         r"([\w\[\]]+)\??\s+(.*)$", l)
            if m and cls:
                if not m.group(1).startswith("["):
                    _, desc = scan_type(m.group(2))
                    self.add(self.members, cls, m.group(1), where, bool(desc))
                continue
            m = re.match(r"---\|\s*(\"[^\"]*\"|'[^']*')\s*(#\s*(.*))?$", l)
            if m and alias:
                self.add(self.aliases, alias, m.group(1)[1:-1], where, bool(m.group(3)))
        m = re.match(r"local (\w+)\b", code)
        if m and cls:
            var_class[m.group(1)] = cls
        m = re.match(r"function (\w+)[.:](\w+)\(", code)
        if m:
            owner = var_class.get(m.group(1))
            if owner is None:
                self.problems.append("%s:%d: function %s.%s: '%s' is no local of a ---@class"
                                     % (rel, code_no, m.group(1), m.group(2), m.group(1)))
            else:
                self.add(self.members, owner, m.group(2), "%s:%d" % (rel, code_no), doc)


# ---- comparing ------------------------------------------------------------------

def compare(what, api, declared, problems):
    """api: {name: origin}; declared: {name: (where, described)} or None."""
    if declared is None:
        problems.append("types/ declares no %s (the API has %s)"
                        % (what, ", ".join(sorted(api))))
        return len(api)
    for name in sorted(set(api) - set(declared)):
        problems.append("in the API but not in types/: %s.%s (%s)" % (what, name, api[name]))
    for name in sorted(set(declared) - set(api)):
        problems.append("in types/ but not in the API: %s.%s (%s)"
                        % (what, name, declared[name][0]))
    for name in sorted(set(declared) & set(api)):
        if not declared[name][1]:
            problems.append("%s: %s.%s has no one-line description"
                            % (declared[name][0], what, name))
    return len(set(api) | set(declared))


def main():
    a = cli(src=True)
    src = os.path.abspath(a.src)
    bindings = os.path.join(src, "bindings")
    api = api_from_binary(a.bin, src)
    if api is None:
        done()
    problems = []
    types = Types()
    luarc = load_json(os.path.join(src, ".luarc.json"), {})
    check(luarc.get("workspace", {}).get("library") == ["types"]
          and luarc.get("runtime", {}).get("version") == "Lua 5.4",
          ".luarc.json: workspace.library [\"types\"], runtime.version \"Lua 5.4\"")
    files = sorted(glob.glob(os.path.join(src, "types", "*.lua")))
    check(files, "types/*.lua exist")
    for path in files:
        types.parse(path)
    problems += types.problems

    # The API by class of types/: members (functions, methods, fields,
    # options, fixtures) and alias values (capabilities, error classes).
    modules = {m: "bindings/bindings.c" for m in api.pop(("module", "-"), {})}
    members, aliases = {}, {ERROR_ALIAS: error_classes(src)}
    for (kind, cls), names in api.items():
        (aliases if kind == "alias" else members).setdefault(cls, {}).update(names)
    for found in (c_fields(bindings, problems), {"e2e.remote.Call": call_fields(bindings)},
                  c_options(bindings, problems), lua_options(bindings, problems)):
        for cls, names in found.items():
            members.setdefault(cls, {}).update(names)
    surfaces = [("module", modules, {m: (f, True) for m, f in types.metas.items() if m != "_"})]
    surfaces += [(c, n, types.members.get(c)) for c, n in sorted(members.items())]
    surfaces += [(a, n, types.aliases.get(a)) for a, n in sorted(aliases.items())]

    total = 0
    for label, have, declared in surfaces:
        before = len(problems)
        total += compare(label, have, declared, problems)
        check(len(problems) == before, "%s: types/ and the API agree (%d names)"
              % (label, len(have)))
    for p in problems:
        print("PROBLEM " + p)
    print("%d names checked, %d problems" % (total, len(problems)))
    check(not problems, "types/ lists exactly the API")
    done()


if __name__ == "__main__":
    main()
