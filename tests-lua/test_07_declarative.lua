-- Declarative remote execution with e2e.remote. A test declares a remote
-- Python function with its sandbox requirements (template, envs, files,
-- timeout); a call runs it in a fresh sandbox that is tagged (e2e=<run
-- id>, the test's node id), tracked and gone after the call, and returns
-- the decoded result. Remote exceptions
-- come back as RemoteError with the remote traceback; the call timeout is
-- Timeout; a bad template is refused naming it; arguments and results
-- round-trip (nested tables, unicode, binary incl. all 256 bytes, big ints,
-- floats, nil); spawned calls run at the same time in separate sandboxes.
-- Fixtures: none; every call makes its own sandbox through sandbox.create,
-- owned by the test's scope.
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local sandbox = require "e2e.sandbox"
local remote = require "e2e.remote"
local suite = require "suite"

local FILE = "tests-lua/test_07_declarative.lua"

-- Only tests that reach the platform are run with credentials; remote
-- calls make their own sandboxes, so say so.
local function opts(extra)
  local o = { platform = true }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- id's entry while it is alive: a killed sandbox may stay listed a while
-- as "terminated" (FC documents the state, not for how long).
local function listed(id)
  for _, info in ipairs(sandbox.list { metadata = { e2e = e2e.run_id } }) do
    if info.sandbox_id == id and info.state ~= "terminated" then return info end
  end
  return nil
end

-- Listing lags on the cloud: a sandbox just made is listed eventually.
local function listed_soon(id)
  return e2e.eventually(function() return listed(id) end,
    { timeout = 30, message = "sandbox " .. id .. " listed under the run's tag" })
end

local function gone(id)
  e2e.eventually(function() return listed(id) == nil end,
    { timeout = 30, message = "sandbox " .. id .. " still listed after the call" })
end

local ALL_BYTES = {}
for i = 0, 255 do ALL_BYTES[#ALL_BYTES + 1] = string.char(i) end
ALL_BYTES = table.concat(ALL_BYTES)

-- Where the call ran: its sandbox id (envd's E2B_SANDBOX_ID), hostname, cwd.
local whereami = remote.fn { python = [[
import os, socket
def main():
    return {"id": os.environ.get("E2B_SANDBOX_ID"), "host": socket.gethostname(),
            "cwd": os.getcwd(), "seen": os.path.exists("marker")}
]] }

describe("calls", function()
  test("a call returns the decoded result", opts(), function()
    local add = remote.fn { python = "def main(a, b):\n    return a + b\n" }
    expect(add(1, 2)):eq(3)
    expect(add("ab", "cd")):eq("abcd")
    expect(add({ 1 }, { 2, 3 })):eq({ 1, 2, 3 })
  end)

  test("each call runs in a fresh sandbox", opts(), function()
    local touch = remote.fn { python = [[
import os
def main():
    seen = os.path.exists("marker")
    open("marker", "w").write("x")
    return {"id": os.environ.get("E2B_SANDBOX_ID"), "seen": seen}
]] }
    local a, b = touch(), touch()
    expect(b.seen, "a file the first call wrote, seen by the second"):eq(false)
    -- E2B_SANDBOX_ID where the platform sets it (FC does not promise it)
    if type(a.id) == "string" then
      expect(b.id):type("string")
      expect(a.id):ne(b.id)
    end
    local w = whereami()
    expect(w.cwd):match("/remote$")
    if type(w.id) == "string" then expect(w.id):ne(a.id) end
  end)

  test("the call's sandbox is tagged and gone after the call", opts(), function()
    local call = whereami:spawn()
    local info = listed_soon(call.sandbox_id)
    expect(info.metadata.e2e):eq(e2e.run_id)
    expect(info.metadata.e2e_test):eq(FILE .. "::calls::the call's sandbox is tagged and gone after the call")
    expect(info.metadata.e2e_remote):eq("main")
    expect(info.template_id == "code-interpreter-v1" or info.name == "code-interpreter-v1",
      "template code-interpreter-v1 (the default)"):eq(true)
    local r = call:wait()
    if type(r.id) == "string" then expect(r.id):eq(call.sandbox_id) end
    gone(call.sandbox_id)
  end)

  test("the template option picks the sandbox's template", opts(), function()
    -- not the default (code-interpreter-v1); the server template has python3 too
    local tpl = sandbox.server_template
    local fn = remote.fn { template = tpl, python = "def main():\n    return 1\n" }
    local call = suite.with_template(tpl, fn.spawn, fn)
    local info = listed_soon(call.sandbox_id)
    expect(info.template_id == tpl or info.name == tpl,
      "template of " .. e2e.repr(info)):eq(true)
    expect(call:wait()):eq(1)
  end)

  test("envs and files are visible remotely", opts(), function()
    local fn = remote.fn {
      envs = { GREETING = "hi there", UNICODE = "héllo ✓" },
      files = { ["in.txt"] = "line 1\nline 2\n", ["data/nested/blob.bin"] = remote.bytes(ALL_BYTES),
                ["helper.py"] = "def twice(x):\n    return 2 * x\n" },
      python = [[
import os, helper
def main():
    return {"greeting": os.environ.get("GREETING"), "unicode": os.environ.get("UNICODE"),
            "text": open("in.txt").read(), "blob": open("data/nested/blob.bin", "rb").read(),
            "twice": helper.twice(21)}
]] }
    expect(fn()):eq({ greeting = "hi there", unicode = "héllo ✓", text = "line 1\nline 2\n",
      blob = ALL_BYTES, twice = 42 })
  end)

  test("a call with a call timeout that suffices returns", opts(), function()
    local fn = remote.fn { timeout = 30, python = "import time\ndef main(s):\n    time.sleep(s)\n    return s\n" }
    expect(fn(1)):eq(1)
  end)
end)

describe("errors", function()
  test("a remote exception comes back with the remote traceback", opts(), function()
    local fn = remote.fn { python = [[
import sys
def helper(x):
    print("before the error")
    print("to stderr", file=sys.stderr)
    return x / 0

def main(x):
    return helper(x)
]] }
    local err = expect(function() return fn(1) end):raises("RemoteError")
    expect(err.name):eq("ZeroDivisionError")
    expect(err.message):eq("division by zero")
    expect(tostring(err)):eq("RemoteError: ZeroDivisionError: division by zero")
    expect(err.remote_traceback):contains('remote_fn.py", line 8, in main')
    expect(err.remote_traceback):contains('remote_fn.py", line 5, in helper')
    expect(err.remote_traceback):contains("ZeroDivisionError: division by zero")
    expect(err.remote_traceback:find("runner.py", 1, true), "runner frames in " .. err.remote_traceback):is_nil()
    expect(err.stdout):eq("before the error\n")
    expect(err.stderr):eq("to stderr\n")
  end)

  test("an exception keeps its type and its unicode message", opts(), function()
    local fn = remote.fn { entry = "go", python = [[
class Boom(ValueError):
    pass
def go(what):
    raise Boom("bad " + what)
]] }
    local err = expect(function() return fn("thing ✓") end):raises("RemoteError")
    expect(err.name):eq("Boom")
    expect(err.message):eq("bad thing ✓")
    expect(err.remote_traceback):contains("in go")
  end)

  test("a syntax error names its line", opts(), function()
    local fn = remote.fn { python = "def main():\n    return (1 +\n\nx = = 2\n" }
    local err = expect(function() return fn() end):raises("RemoteError")
    expect(err.name):eq("SyntaxError")
    expect(err.remote_traceback):contains("remote_fn.py")
    expect(err.remote_traceback):match("line [24]")
  end)

  test("a missing entry function is a NameError", opts(), function()
    local fn = remote.fn { entry = "nope", python = "def main():\n    return 1\n" }
    local err = expect(function() return fn() end):raises("RemoteError")
    expect(err.name):eq("NameError")
    expect(err.message):contains("'nope'")
  end)

  test("a runner that dies before its result is RunnerExit", opts(), function()
    local fn = remote.fn { python = "import os\ndef main():\n    print('bye', flush=True)\n    os._exit(3)\n" }
    local err = expect(function() return fn() end):raises("RemoteError")
    expect(err.name):eq("RunnerExit")
    expect(err.message):contains("code 3")
    expect(err.stdout):eq("bye\n")
  end)

  test("a result without a Lua form names its type", opts(), function()
    local fn = remote.fn { python = [[
def main(kind):
    if kind == "set":
        return {"a": [1, {2, 3}]}
    if kind == "big":
        return 2 ** 64
    return object()
]] }
    local err = expect(function() return fn("set") end):raises("RemoteError")
    expect(err.name):eq("TypeError")
    expect(err.message):contains("set")
    expect(err.message):contains("result['a'][1]")
    expect(expect(function()
      return fn("big")
    end):raises("RemoteError").message):contains("beyond int64")
    expect(expect(function() return fn("obj") end):raises("RemoteError").message):contains("object")
  end)

  test("exceeding the call timeout is Timeout and kills the sandbox", opts(), function()
    local fn = remote.fn { timeout = 2, python = "import time\ndef main():\n    time.sleep(60)\n" }
    local call = fn:spawn()
    local err = expect(function() return call:wait() end):raises("Timeout")
    expect(err.message):contains("timeout of 2 s")
    gone(call.sandbox_id)
  end)

  -- NotFound on E2B, InvalidArgument where the platform validates first.
  test("a bad template is refused naming it", opts(), function()
    local name = suite.unique("no-such-template")
    local fn = remote.fn { template = name, python = "def main():\n    return 1\n" }
    local err = expect(function() return fn() end):raises()
    expect({ "NotFound", "InvalidArgument" }, tostring(err))
      :contains(type(err) == "table" and err.class)
    expect(err.message):contains(name)
  end)

  test("misuse raises at once", function()
    local cases = {
      { { python = "x", timout = 1 }, "unknown option 'timout' to 'fn'" },
      { {}, "option 'python' is required" },
      { { python = 1 }, "option 'python': string expected, got number" },
      { { python = "x", timeout = -1 }, "timeout must be" },
      { { python = "x", entry = "a b" }, "is not a Python name" },
      { { python = "x", files = { ["/abs"] = "x" } }, "must be a relative path" },
      { { python = "x", files = { ["a/../b"] = "x" } }, "must be a relative path" },
      { { python = "x", files = { a = 1 } }, "a path and a string expected" },
      { { python = "x", envs = { A = 1 } }, "strings expected" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(remote.fn, c[1])
      expect(ok, c[2]):eq(false)
      expect(err):contains(c[2])
    end
    local ok, err = pcall(remote.fn, "def main(): pass")
    expect(ok):eq(false)
    expect(err):contains("table expected, got string")
  end)

  test("unsendable arguments raise before any sandbox", opts(), function()
    local fn = remote.fn { python = "def main(*a):\n    return 1\n" }
    local cyc = {}
    cyc.self = cyc
    for _, c in ipairs {
      { { f = print }, "argument #1.f: cannot send a function" },
      { cyc, "cycle" },
      { { 1, nil, 3 }, "sparse array" },
      { { 1, x = 2 }, "mixes string and integer keys" },
    } do
      local ok, err = pcall(fn, c[1])
      expect(ok):eq(false)
      expect(err):contains(c[2])
    end
    -- The run's tags of this test find a sandbox made the same way (one
    -- sendable call) and that one only: none was made for those above.
    local filter = { e2e = e2e.run_id, e2e_remote = "main",
      e2e_test = FILE .. "::errors::unsendable arguments raise before any sandbox" }
    local call = fn:spawn(1)
    local got = e2e.eventually(function()
      local l = sandbox.list { metadata = filter }
      return #l > 0 and l
    end, { timeout = 30, message = "the sendable call's sandbox listed by the test's tags" })
    expect(#got):eq(1)
    expect(got[1].sandbox_id):eq(call.sandbox_id)
    expect(call:wait()):eq(1)
  end)
end)

local identity = remote.fn { python = "def main(*args):\n    return list(args)\n" }

describe("round trip", function()
  test("arguments arrive as the right Python types", opts(), function()
    local fn = remote.fn { python = [[
def main(*args):
    return [type(a).__name__ for a in args] + [args[5] == bytes(range(256)), args[8] + 1]
]] }
    expect(fn(nil, true, 42, 1.5, "é", ALL_BYTES, { 1, 2 }, { a = 1 }, math.maxinteger - 1,
      remote.bytes("text")))
      :eq({ "NoneType", "bool", "int", "float", "str", "bytes", "list", "dict", "int", "bytes",
            true, math.maxinteger })
  end)

  test("scalars, strings and binary round-trip exactly", opts(), function()
    local vals = { true, false, 0, -1, math.maxinteger, math.mininteger,
      9007199254740993, 0.1, -0.0, 1 / 3, 1e300, -2.5e-300, 3.0, "", "a\0b", "héllo ✓ 𝄞 日本",
      ALL_BYTES, "\xff\xfe", ("x"):rep(100000) }
    local got = identity(table.unpack(vals, 1, #vals))
    expect(#got):eq(#vals)
    for i, v in ipairs(vals) do
      expect(got[i], "value #" .. i):eq(v)
      expect(math.type(got[i]), "number type of #" .. i):eq(math.type(v))
    end
    expect(1 / got[9], "-0.0 keeps its sign (value #9)"):eq(-math.huge)
    local special = identity(0 / 0, math.huge, -math.huge)
    expect(special[1] ~= special[1], "NaN"):eq(true)
    expect(special[2]):eq(math.huge)
    expect(special[3]):eq(-math.huge)
  end)

  test("nested tables round-trip", opts(), function()
    local v = { list = { 1, { 2, { 3, { "deep" } } } }, map = { ["key with spaces"] = "v", ["ключ"] = "значение" },
      mixed = { { a = 1 }, { b = { ALL_BYTES } } }, tag = { ["$bytes"] = "not bytes" },
      empty_list = {} }
    local got = identity(v)
    expect(got[1]):eq(v)
  end)

  test("None comes back as nil, inside tables as remote.null", opts(), function()
    local fn = remote.fn { python = [[
def main(kind):
    return {"none": None, "list": [1, None, 3], "dict": {"a": None}, "empty": {}}.get(kind)
]] }
    expect(fn("none")):is_nil()
    expect(fn("missing")):is_nil()
    expect(fn("list")):eq({ 1, remote.null, 3 })
    expect(fn("dict")):eq({ a = remote.null })
    expect(fn("empty")):eq({})
  end)

  test("Python bytes and str come back as the same Lua string", opts(), function()
    local fn = remote.fn { python = [[
def main():
    return [bytes(range(256)), bytearray(b"\x00\xff"), "\u00e9\u2713", (1, "two")]
]] }
    expect(fn()):eq({ ALL_BYTES, "\0\xff", "é✓", { 1, "two" } })
  end)
end)

describe("concurrency", function()
  test("spawned calls run at the same time in separate sandboxes", opts { timeout = 240 }, function()
    local nap = remote.fn { timeout = 120, python = [[
import os, time
def main(i, secs):
    start = time.time()
    time.sleep(secs)
    return {"i": i, "start": start, "end": time.time(), "id": os.environ.get("E2B_SANDBOX_ID")}
]] }
    -- A spawn costs what a create costs on the platform (about a second
    -- on a cloud): time one, and let each nap outlast six of them, so the
    -- four naps overlap when the calls run concurrently, however slow the
    -- creates are, and cannot when they run one after another.
    local t0 = e2e.clock()
    local probe = nap:spawn(0, 0)
    local spawn_secs = e2e.clock() - t0
    probe:wait()
    local secs = math.min(60, math.max(3, 6 * spawn_secs))
    local calls = {}
    for i = 1, 4 do calls[i] = nap:spawn(i, secs) end
    local res = remote.gather(calls)
    expect(#res):eq(4)
    local ids, max_start, min_end = {}, -math.huge, math.huge
    for i, r in ipairs(res) do
      expect(r.i, "results in order"):eq(i)
      if type(r.id) == "string" then expect(r.id):eq(calls[i].sandbox_id) end
      ids[calls[i].sandbox_id] = true
      max_start = math.max(max_start, r.start)
      min_end = math.min(min_end, r["end"])
    end
    local n = 0
    for _ in pairs(ids) do n = n + 1 end
    expect(n, "distinct sandboxes"):eq(4)
    expect(max_start, "the last call started before the first one ended"):lt(min_end)
  end)

  test("gather waits for every call and raises the first error", opts(), function()
    local fn = remote.fn { python = [[
def main(x):
    if x < 0:
        raise ValueError("negative %d" % x)
    return x * 10
]] }
    local ok1, bad, ok2 = fn:spawn(1), fn:spawn(-2), fn:spawn(3)
    local err = expect(function() return remote.gather({ ok1, bad, ok2 }) end):raises("RemoteError")
    expect(err.message):eq("negative -2")
    expect(ok1:wait()):eq(10)
    expect(ok2:wait()):eq(30)
    expect(expect(function()
      return bad:wait()
    end):raises("RemoteError").message, "wait again"):eq("negative -2")
    for _, c in ipairs { ok1, bad, ok2 } do gone(c.sandbox_id) end
    expect(remote.gather {}):eq({})
  end)
end)
