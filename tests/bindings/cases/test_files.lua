-- sbx.files and watchers (docs/lua-api.md "sbx.files"), against
-- abx-local. Run by tests/bindings/run.py (scenario "files") with
-- ABX_E2E_SELFTEST=1 (e2e.files._open_watchers counts watch streams).
local e2e = require "e2e"
local files = require "e2e.files"
local test, expect = e2e.test, e2e.expect


local ALL = {}
for i = 0, 255 do ALL[#ALL + 1] = string.char(i) end
ALL = table.concat(ALL)

-- What format="text" must give for s: each byte of an invalid sequence
-- replaced by U+FFFD (utf8.len finds the first bad byte).
local function text_of(s)
  local out, i = {}, 1
  while i <= #s do
    local n, bad = utf8.len(s, i)
    if n then out[#out + 1] = s:sub(i); break end
    out[#out + 1] = s:sub(i, bad - 1) .. "\u{FFFD}"
    i = bad + 1
  end
  return table.concat(out)
end

local function by_name(entries)
  local t = {}
  for _, e in ipairs(entries) do t[e.name] = e end
  return t
end

test("write and read: 0, 1 and large sizes, exact bytes", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local info = f:write(workdir .. "/a.txt", "hello")
  expect(info):eq({ name = "a.txt", type = "file", path = workdir .. "/a.txt" })
  expect(f:read(workdir .. "/a.txt")):eq("hello")
  for _, n in ipairs({ 0, 1, 65537, 3 * 1024 * 1024 + 7 }) do
    local data = string.rep(ALL, n // 256 + 1):sub(1, n)
    local p = ("%s/size-%d.bin"):format(workdir, n)
    f:write(p, data)
    local got = f:read(p, { format = "bytes" })
    expect(#got, "length of " .. n):eq(n)
    expect(got == data, "bytes of " .. n):eq(true)
    expect(f:stat(p).size):eq(n)
  end
end)

test("256 byte values: bytes exact, text with U+FFFD", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local p = workdir .. "/all.bin"
  f:write(p, ALL)
  expect(f:read(p, { format = "bytes" }) == ALL):eq(true)
  local text = f:read(p)
  expect(utf8.len(text) ~= nil, "text is valid UTF-8"):eq(true)
  expect(text):eq(text_of(ALL))
  expect(text:sub(1, 128)):eq(ALL:sub(1, 128))
  -- one U+FFFD per maximal ill-formed subpart (as Python and TextDecoder)
  local cases = {
    { "\xE2\x82A", "\u{FFFD}A" },              -- truncated 3-byte sequence
    { "\xF0\x9F\x98", "\u{FFFD}" },            -- truncated 4-byte sequence at the end
    { "\xED\xA0\x80x", "\u{FFFD}\u{FFFD}\u{FFFD}x" }, -- surrogate: ED then 2 strays
    { "\xC0\xAF", "\u{FFFD}\u{FFFD}" },         -- overlong
    { "a\xF5\x80b", "a\u{FFFD}\u{FFFD}b" },     -- beyond U+10FFFF
    { "\xF4\x90\x80\x80", "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}" },
    { "\xE0\xA0", "\u{FFFD}" },
  }
  for i, c in ipairs(cases) do
    f:write(p, c[1])
    expect(f:read(p), "case " .. i):eq(c[2])
    expect(f:read(p, { format = "bytes" }), "bytes " .. i):eq(c[1])
  end
  -- valid multi-byte UTF-8 is kept as is
  f:write(p, "héllo 世界 🎉")
  expect(f:read(p)):eq("héllo 世界 🎉")
end)

test("unicode and spaces in paths", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local dir = workdir .. "/dir with space/ünï 世界"
  local p = dir .. "/file name 🎉.txt"
  expect(f:write(p, "x").path):eq(p)
  expect(f:read(p)):eq("x")
  expect(f:exists(p)):eq(true)
  local e = f:stat(p)
  expect(e.name):eq("file name 🎉.txt")
  expect(e.path):eq(p)
  local l = f:list(dir)
  expect(#l):eq(1)
  expect(l[1].name):eq("file name 🎉.txt")
  local r = base_sandbox.commands:run("cat " .. ("%q"):format(p))
  expect(r.stdout):eq("x")
end)

test("reading a directory or a missing file raises", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local e = expect(function() return f:read(workdir) end):raises("InvalidArgument")
  expect(e.status):eq(400)
  e = expect(function() return f:read(workdir .. "/missing") end):raises("NotFound")
  expect(e.status):eq(404)
  expect(function() return f:stat(workdir .. "/missing") end):raises("NotFound")
  expect(function() return f:list(workdir .. "/missing") end):raises("NotFound")
end)

test("list, stat and entry fields", function(base_sandbox, workdir)
  local f = base_sandbox.files
  f:write(workdir .. "/top.txt", "12345")
  f:write(workdir .. "/sub/inner.txt", "1")
  local l = by_name(f:list(workdir))
  expect(l["top.txt"]):truthy()
  expect(l["sub"].type):eq("dir")
  expect(l["inner.txt"]):is_nil()
  local e = l["top.txt"]
  expect(e.type):eq("file")
  expect(e.path):eq(workdir .. "/top.txt")
  expect(e.size):eq(5)
  expect(math.type(e.size)):eq("integer")
  expect(math.type(e.mode)):eq("integer")
  expect(e.mode):eq(420)  -- 0644
  expect(e.permissions):eq("-rw-r--r--")
  expect(e.owner):eq("user")
  expect(e.group):eq("user")
  expect(e.modified_time):match("^%d%d%d%d%-%d%d%-%d%dT")
  expect(e.symlink_target):is_nil()
  l = by_name(f:list(workdir, { depth = 2 }))
  expect(l["inner.txt"].path):eq(workdir .. "/sub/inner.txt")
  local d = f:stat(workdir .. "/sub")
  expect(d.type):eq("dir")
  expect(d.permissions):match("^d")
  e = expect(function() return f:list(workdir, { depth = 0 }) end):raises("InvalidArgument")
  expect(e.message):match("depth")
  -- symlinks: target reported
  base_sandbox.commands:run(("ln -s %s/top.txt %s/link"):format(workdir, workdir))
  e = f:stat(workdir .. "/link")
  expect(e.symlink_target):eq(workdir .. "/top.txt")
end)

test("exists, make_dir, rename, remove", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local d = workdir .. "/a/b/c"
  expect(f:exists(d)):eq(false)
  expect(f:make_dir(d)):eq(true)
  expect(f:make_dir(d)):eq(false)
  expect(f:exists(d)):eq(true)
  f:write(workdir .. "/old.txt", "data")
  local e = f:rename(workdir .. "/old.txt", workdir .. "/new dir/new.txt")
  expect(e.path):eq(workdir .. "/new dir/new.txt")
  expect(e.name):eq("new.txt")
  expect(e.type):eq("file")
  expect(f:exists(workdir .. "/old.txt")):eq(false)
  expect(f:read(workdir .. "/new dir/new.txt")):eq("data")
  expect(function() return f:rename(workdir .. "/nope", workdir .. "/x") end):raises("NotFound")
  expect(f:remove(workdir .. "/a")):is_nil()
  expect(f:exists(d)):eq(false)
  f:remove(workdir .. "/a")  -- missing is not an error
end)

test("write_many writes every file in one call", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local r = f:write_many {
    { path = workdir .. "/m1.txt", data = "one" },
    { path = workdir .. "/deep/m2.bin", data = ALL },
  }
  expect(#r):eq(2)
  local names = by_name(r)
  expect(names["m1.txt"].path):eq(workdir .. "/m1.txt")
  expect(names["m2.bin"].type):eq("file")
  expect(f:read(workdir .. "/m1.txt")):eq("one")
  expect(f:read(workdir .. "/deep/m2.bin", { format = "bytes" }) == ALL):eq(true)
  expect(f:write_many {}):eq({})
end)

test("user option reaches envd: files are owned by that user", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local p = workdir .. "/by-root.txt"
  f:write(p, "r", { user = "root" })
  expect(f:read(p, { user = "root" })):eq("r")
  expect(f:stat(p, { user = "root" }).owner):eq("root")
  expect(f:stat(p).owner):eq("root")
  f:write(workdir .. "/by-user.txt", "u")
  expect(f:stat(workdir .. "/by-user.txt").owner):eq("user")
  expect(f:list(workdir, { user = "root" })[1].name):eq("by-root.txt")
  expect(f:make_dir(workdir .. "/root-dir", { user = "root" })):eq(true)
  expect(f:stat(workdir .. "/root-dir").owner):eq("root")
  f:rename(p, workdir .. "/root-dir/moved.txt", { user = "root" })
  expect(f:exists(workdir .. "/root-dir/moved.txt", { user = "root" })):eq(true)
  f:remove(workdir .. "/root-dir", { user = "root" })
  expect(f:exists(workdir .. "/root-dir")):eq(false)
  expect(function()
    return f:read(workdir .. "/by-user.txt", { user = "nobody-here" })
  end):raises("Authentication")
end)

test("watch_dir reports events; stop and __close end the stream", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local before = files._open_watchers()
  local w = f:watch_dir(workdir)
  expect(files._open_watchers()):eq(before + 1)
  expect(w:next(0.2)):is_nil()
  f:write(workdir .. "/w.txt", "x")
  local ev = w:next(10)
  expect(ev):truthy()
  expect(ev.name):eq("w.txt")
  expect(ev.type == "create" or ev.type == "write", "type " .. tostring(ev.type)):eq(true)
  f:remove(workdir .. "/w.txt")
  local seen = {}
  while true do
    ev = w:next(5)
    if not ev then break end
    seen[ev.type] = true
    if ev.type == "remove" then break end
  end
  expect(seen.remove, "remove event"):eq(true)
  w:stop()
  w:stop()
  expect(files._open_watchers()):eq(before)
  expect(expect(function() return w:next(0) end):raises()):match("watcher is stopped")
  do
    local w2 <close> = f:watch_dir(workdir, { recursive = true, timeout = 30 }) -- luacheck: ignore 211 (for <close>)
    expect(files._open_watchers()):eq(before + 1)
  end
  expect(files._open_watchers()):eq(before)
  f:watch_dir(workdir)
  collectgarbage(); collectgarbage()
  expect(files._open_watchers(), "__gc stopped it"):eq(before)
  expect(function() return f:watch_dir(workdir .. "/missing") end):raises("NotFound")
  expect(files._open_watchers()):eq(before)
end)

test("upload and download stream between disk and sandbox", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local src, dst = os.tmpname(), os.tmpname()
  local data = string.rep(ALL, 4096 * 2 + 3)  -- 2 MiB + 768
  local h = assert(io.open(src, "wb")); h:write(data); h:close()
  local info = f:upload(src, workdir .. "/up load.bin")
  expect(info.path):eq(workdir .. "/up load.bin")
  expect(f:read(workdir .. "/up load.bin", { format = "bytes" }) == data):eq(true)
  expect(f:download(workdir .. "/up load.bin", dst)):is_nil()
  h = assert(io.open(dst, "rb")); local got = h:read("a"); h:close()
  expect(#got):eq(#data)
  expect(got == data):eq(true)
  os.remove(dst)
  expect(function() return f:download(workdir .. "/missing", dst) end):raises("NotFound")
  expect(io.open(dst, "rb"), "no file left after a failed download"):is_nil()
  local e = expect(function() return f:upload(src .. ".missing", workdir .. "/x") end):raises()
  expect(type(e)):eq("table")
  os.remove(src)
end)

test("download_url and upload_url", function(base_sandbox, workdir)
  local f = base_sandbox.files
  local u = f:download_url(workdir .. "/a b.txt")
  expect(u):match("^https?://")
  expect(u):contains("/files?path=")
  expect(u):contains("a%20b.txt")
  u = f:upload_url(workdir .. "/x.txt", { user = "root", expires = 60 })
  expect(u):contains("username=root")
  expect(u):contains("signature_expiration=")
  expect(u):contains("signature=")
end)

test("misuse raises at once with a clear message", function(base_sandbox)
  local f = base_sandbox.files
  local function m(fn) return expect(function() return fn() end):raises() end
  expect(m(function() f:read() end)):match("bad argument #1 to 'read' %(string expected, got no value%)")
  expect(m(function() f:read("/x", { formt = "bytes" }) end)):match("unknown option 'formt' to 'read'$")
  expect(m(function() f:read("/x", { format = "json" }) end))
    :match("bad argument #2 to 'read' %(option 'format': \"text\" or \"bytes\" expected, got \"json\"%)")
  expect(m(function() f:read("/x", { user = 0 }) end)):match("option 'user': string expected, got number")
  expect(m(function() f:write("/x") end)):match("bad argument #2 to 'write' %(string expected, got no value%)")
  expect(m(function() f:write("/x", "d", { mode = 1 }) end)):match("unknown option 'mode' to 'write'$")
  expect(m(function() f:write_many("x") end)):match("bad argument #1 to 'write_many' %(table expected, got string%)")
  expect(m(function() f:write_many { 5 } end)):match("item 1: table {path=, data=} expected, got number")
  expect(m(function() f:write_many { { path = "/a" } } end)):match("item 1: 'data' must be a string")
  expect(m(function() f:write_many { { data = "" } } end)):match("item 1: 'path' must be a string")
  -- Items and options are read raw: nothing behind __index is seen (a
  -- string a metamethod made would be anchored nowhere).
  local proxy = setmetatable({}, { __index = function() return "/p" end })
  expect(m(function() f:write_many { proxy } end)):match("item 1: 'path' must be a string")
  expect(f:exists("/", setmetatable({}, { __index = { user = 0 } }))):eq(true)
  expect(m(function() f:list("/", { depth = "1" }) end)):match("option 'depth': number expected, got string")
  expect(m(function() f:list("/", { depth = 1.5 }) end)):match("option 'depth': number has no integer representation")
  expect(m(function() f:rename("/a") end)):match("bad argument #2 to 'rename' %(string expected, got no value%)")
  expect(m(function() f:watch_dir("/", { recursve = true }) end)):match("unknown option 'recursve' to 'watch_dir'$")
  expect(m(function() f:download_url("/", { expires = "1" }) end)):match("option 'expires': number expected")
  expect(m(function() f:upload_url("/", { expires = -5 }) end)):match("option 'expires': seconds out of range")
  expect(m(function() f.read({}, "/x") end)):match("e2e.Files expected, got table")
  local w = f:watch_dir("/tmp")
  expect(m(function() w:next(-1) end)):match("bad argument #1 to 'next' %(seconds out of range")
  expect(m(function() w.next({}) end)):match("e2e.Watcher expected, got table")
  w:stop()
end)

test("a killed sandbox refuses every call", function(sandbox_factory)
  local sbx = sandbox_factory {}
  local f = sbx.files
  f:write("/tmp/k.txt", "k")
  local w = f:watch_dir("/tmp")
  expect(sbx:kill()):eq(true)
  local want = "sandbox " .. sbx.id .. " was killed"
  expect(expect(function() return f:read("/tmp/k.txt") end):raises()):contains(want)
  expect(expect(function() return f:write("/tmp/k.txt", "x") end):raises()):contains(want)
  expect(expect(function() return f:list("/tmp") end):raises()):contains(want)
  expect(expect(function() return f:exists("/tmp") end):raises()):contains(want)
  expect(expect(function() return w:next(0) end):raises()):contains(want)
  w:stop()  -- closing never needs the sandbox
end)
