-- Files through envd: write/read text and binary (all 256 byte values);
-- list with depth, stat, exists; make_dir (twice), rename, remove (missing
-- path); size boundaries (0, 1, 64 KiB and 1 MiB chunk edges, 10
-- MiB, 31 MiB under FC's documented cap, 100 MiB e2e_slow: whole or
-- 413); unicode and spaces in paths; reading a directory
-- or a missing file; watch_dir events; signed URLs on a secure sandbox
-- (valid, expired, tampered, unsigned). Depth: that of E2B's own SDK tests
-- of the filesystem.
-- Fixtures: base_sandbox + workdir; sandbox_factory{secure=true} for the
-- signed URLs (reached with e2e.http, which sends no credential).
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local suite = require "suite"
local http = require "e2e.http"
local sandbox = require "e2e.sandbox"
local HOME = sandbox.default_home   -- E2E_DEFAULT_USER's home

local q = suite.sh_quote
local KiB, MiB = 1024, 1024 * 1024

-- Every byte value once, 0..255.
local ALL_BYTES = (function()
  local t = {}
  for i = 0, 255 do t[#t + 1] = string.char(i) end
  return table.concat(t)
end)()

-- n bytes of data whose every 4 KiB block differs (a block counter leads
-- each one), so a dropped, repeated or swapped chunk changes the bytes.
local BASE = ALL_BYTES:rep(16)
local function data_of(n)
  local t, i = {}, 0
  while i * 4096 < n do
    t[#t + 1] = (string.format("%08x", i) .. BASE):sub(1, 4096)
    i = i + 1
  end
  return table.concat(t):sub(1, n)
end

local function sha256_remote(sbx, path)
  return sbx.commands:run("sha256sum " .. q(path)).stdout:match("^(%x+)")
end

local function sha256_local(path)
  local f = assert(io.popen("sha256sum " .. q(path)))
  local out = f:read("a"); f:close()
  return out:match("^(%x+)")
end

-- A local temporary file holding data (removed at the end of the test).
local function local_file(data)
  local path = os.tmpname()
  e2e.defer(function() os.remove(path) end)
  if data then
    local f = assert(io.open(path, "wb"))
    assert(f:write(data)); f:close()
  end
  return path
end

local function sorted_names(entries, field)
  local t = {}
  for _, en in ipairs(entries) do t[#t + 1] = en[field or "name"] end
  table.sort(t)
  return t
end

describe("read and write", function()
  test("text round-trips and write reports the file", function(base_sandbox, workdir)
    local path = workdir .. "/hello.txt"
    local info = base_sandbox.files:write(path, "Hello, World!\n")
    expect(info):eq({ name = "hello.txt", type = "file", path = path })
    expect(base_sandbox.files:exists(path)):eq(true)
    expect(base_sandbox.files:read(path)):eq("Hello, World!\n")
  end)

  test("all 256 byte values round-trip exactly as bytes", function(base_sandbox, workdir)
    local path = workdir .. "/all.bin"
    base_sandbox.files:write(path, ALL_BYTES)
    expect(base_sandbox.files:read(path, { format = "bytes" })):eq(ALL_BYTES)
    -- and what is on disk is those bytes, not a re-encoding
    local od = base_sandbox.commands:run("od -An -tu1 -v " .. q(path) .. " | tr -s ' \\n' '  '")
    local seen = {}
    for n in od.stdout:gmatch("%d+") do seen[#seen + 1] = tonumber(n) end
    expect(#seen):eq(256)
    for i = 1, 256 do expect(seen[i], "byte " .. (i - 1)):eq(i - 1) end
  end)

  test("text read replaces each invalid utf-8 sequence by U+FFFD", function(base_sandbox, workdir)
    local path = workdir .. "/bad.txt"
    base_sandbox.files:write(path, ALL_BYTES)
    -- 0x80..0xFF, each followed by a byte that cannot continue it: 128
    -- ill-formed subsequences of one byte each.
    expect(base_sandbox.files:read(path)):eq(ALL_BYTES:sub(1, 128) .. ("\u{FFFD}"):rep(128))
    base_sandbox.files:write(path, "a\xE2\x82b\xF0\x9F\x98\x80c")
    expect(base_sandbox.files:read(path)):eq("a\u{FFFD}b\u{1F600}c")
  end)

  test("overwrite replaces the whole content", function(base_sandbox, workdir)
    local path = workdir .. "/over.txt"
    base_sandbox.files:write(path, "a much longer first content\n")
    base_sandbox.files:write(path, "short")
    expect(base_sandbox.files:read(path)):eq("short")
  end)

  test("write creates missing parent directories", function(base_sandbox, workdir)
    local path = workdir .. "/p/q/r/deep.txt"
    expect(base_sandbox.files:write(path, "deep").path):eq(path)
    expect(base_sandbox.files:stat(workdir .. "/p/q").type):eq("dir")
    expect(base_sandbox.files:read(path)):eq("deep")
  end)

  test("write_many with an empty list returns an empty list", function(base_sandbox)
    expect(base_sandbox.files:write_many({})):eq({})
  end)

  test("write_many writes one and several files", function(base_sandbox, workdir)
    local one = base_sandbox.files:write_many({ { path = workdir .. "/one.txt", data = "1" } })
    expect(one):eq({ { name = "one.txt", type = "file", path = workdir .. "/one.txt" } })
    local list, want = {}, {}
    for i = 1, 10 do
      local p = string.format("%s/many/%d/f%02d.txt", workdir, i % 3, i)
      list[#list + 1] = { path = p, data = "content " .. i }
      want[#want + 1] = p
    end
    local infos = base_sandbox.files:write_many(list)
    expect(sorted_names(infos, "path")):eq((function() table.sort(want); return want end)())
    for _, f in ipairs(list) do expect(base_sandbox.files:read(f.path)):eq(f.data) end
    expect(base_sandbox.files:read(workdir .. "/one.txt")):eq("1")
  end)

  test("reading a directory is an invalid argument", function(base_sandbox, workdir)
    local err = expect(function()
      return base_sandbox.files:read(workdir)
    end):raises("InvalidArgument")
    if e2e.has("e2b-messages") then expect(err.message):contains("directory") end
  end)

  test("reading a missing file is not found", function(base_sandbox, workdir)
    expect(function() return base_sandbox.files:read(workdir .. "/nope.txt") end):raises("NotFound")
  end)
end)

describe("sizes", function()
  for _, n in ipairs({ 0, 1, 64 * KiB - 1, 64 * KiB, 64 * KiB + 1, MiB - 1, MiB, MiB + 1 }) do
    test(string.format("%d bytes round-trip exactly", n), function(base_sandbox, workdir)
      local path = string.format("%s/size-%d.bin", workdir, n)
      local data = data_of(n)
      base_sandbox.files:write(path, data)
      expect(base_sandbox.files:stat(path).size):eq(n)
      local back = base_sandbox.files:read(path, { format = "bytes" })
      expect(#back):eq(n)
      expect(back == data, "content differs"):eq(true)
    end)
  end

  test("10 MiB: checksum in the sandbox matches, download is identical", function(base_sandbox, workdir)
    local data = data_of(10 * MiB + 7)
    local src = local_file(data)
    local path = workdir .. "/ten.bin"
    base_sandbox.files:write(path, data)
    expect(sha256_remote(base_sandbox, path)):eq(sha256_local(src))
    local dst = local_file()
    base_sandbox.files:download(path, dst)
    expect(sha256_local(dst)):eq(sha256_local(src))
    expect(base_sandbox.files:read(path, { format = "bytes" }) == data, "read differs"):eq(true)
  end)

  -- An FC page once capped an upload's body at 32 MiB with its multipart
  -- overhead ("EntityTooLarge"); today's give no figure. Under it, an
  -- upload goes through whole everywhere.
  test("31 MiB, under FC's documented upload cap, arrives whole", function(base_sandbox, workdir)
    local src = local_file(data_of(31 * MiB))
    local path = workdir .. "/thirty-one.bin"
    expect(base_sandbox.files:upload(src, path).path):eq(path)
    expect(sha256_remote(base_sandbox, path)):eq(sha256_local(src))
  end)

  -- Above a platform's cap an upload is refused as too large, never cut.
  test("100 MiB streams up and down intact, or is refused as too large",
    { marks = { "e2e_slow" }, timeout = 600 },
    function(base_sandbox, workdir)
      local src = local_file()
      local f = assert(io.open(src, "wb"))
      local block = data_of(MiB)
      for i = 1, 100 do assert(f:write(string.format("%08d", i), block:sub(9))) end
      f:close()
      local path = workdir .. "/hundred.bin"
      local ok, up = pcall(base_sandbox.files.upload, base_sandbox.files, src, path)
      if not ok then
        expect(type(up) == "table" and up.status, "413, not: " .. tostring(up)):eq(413)
        return
      end
      expect(up.path):eq(path)
      expect(base_sandbox.files:stat(path).size):eq(100 * MiB)
      local want = sha256_local(src)
      expect(sha256_remote(base_sandbox, path)):eq(want)
      local dst = local_file()
      base_sandbox.files:download(path, dst)
      expect(sha256_local(dst)):eq(want)
    end)
end)

describe("entries", function()
  -- A new file's or folder's mode is the platform's umask's (E2B's 022
  -- gives 0644 and 0755; not promised): the entry must say what the file
  -- system says (find, not stat: gVisor refuses coreutils' statx flags).
  local function fs_mode(sbx, path)
    local m = sbx.commands:run("find " .. q(path) .. " -maxdepth 0 -printf '%m'").stdout
    expect(m, "find's mode of " .. path):match("^[0-7]+$")
    return tonumber(m, 8)
  end
  -- ls's string of a mode: lead ("-", "d") then rwx for user, group, other.
  local function perm_string(lead, mode)
    local s = lead
    for shift = 6, 0, -3 do
      local b = (mode >> shift) & 7
      s = s .. ((b & 4) ~= 0 and "r" or "-") .. ((b & 2) ~= 0 and "w" or "-")
        .. ((b & 1) ~= 0 and "x" or "-")
    end
    return s
  end

  -- workdir/{a_dir/{x.txt, sub/{z.txt}}, b.txt, c_dir/{y.txt}}: 3 entries
  -- at depth 1, 6 at depth 2, 7 at depth 3 and depth 4 (nothing deeper).
  local function tree(sbx, w)
    sbx.files:write_many({
      { path = w .. "/a_dir/x.txt", data = "x" }, { path = w .. "/b.txt", data = "b" },
      { path = w .. "/c_dir/y.txt", data = "y" }, { path = w .. "/a_dir/sub/z.txt", data = "z" } })
  end
  local function listing(sbx, w, depth)
    local t = {}
    for _, en in ipairs(sbx.files:list(w, depth and { depth = depth } or nil)) do
      t[#t + 1] = en.path:sub(#w + 2) .. ":" .. en.type
      expect(en.name, "name of " .. en.path):eq(en.path:match("[^/]+$"))
    end
    table.sort(t)
    return t
  end
  local TWO = { "a_dir/sub:dir", "a_dir/x.txt:file", "a_dir:dir", "b.txt:file",
                "c_dir/y.txt:file", "c_dir:dir" }

  test("list defaults to depth 1", function(base_sandbox, workdir)
    tree(base_sandbox, workdir)
    expect(listing(base_sandbox, workdir)):eq({ "a_dir:dir", "b.txt:file", "c_dir:dir" })
  end)

  test("list depth 2 stops above depth 3", function(base_sandbox, workdir)
    tree(base_sandbox, workdir)
    expect(listing(base_sandbox, workdir, 2)):eq(TWO)
  end)

  test("list depth 3 reaches the bottom, depth 4 equals it", function(base_sandbox, workdir)
    tree(base_sandbox, workdir)
    local three = { "a_dir/sub/z.txt:file", table.unpack(TWO) }
    table.sort(three)
    expect(listing(base_sandbox, workdir, 3)):eq(three)
    expect(listing(base_sandbox, workdir, 4)):eq(three)
  end)

  test("list depth 0 is an invalid argument naming depth", function(base_sandbox, workdir)
    local err = expect(function() return base_sandbox.files:list(
      workdir, { depth = 0 }) end):raises("InvalidArgument")
    expect(err.message):contains("depth")
  end)

  test("file entry has every field", function(base_sandbox, workdir)
    local path = workdir .. "/entry.txt"
    base_sandbox.files:write(path, "hello")
    local en = base_sandbox.files:stat(path)
    expect(en.name):eq("entry.txt")
    expect(en.path):eq(path)
    expect(en.type):eq("file")
    expect(en.size):eq(5)
    expect(en.mode):eq(fs_mode(base_sandbox, path))
    expect(en.mode & tonumber("700", 8), "its owner reads and writes it"):eq(tonumber("600", 8))
    expect(en.permissions):eq(perm_string("-", en.mode))
    -- written by the default user: its name and its primary group's
    local who = base_sandbox.commands:run("id -un; id -gn").stdout
    expect(en.owner .. "\n" .. en.group .. "\n"):eq(who)
    expect(en.symlink_target):is_nil()
    expect(en.modified_time):match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[.%d]*[Z+-]")
    -- the same instant as the file's mtime, to the second (date -r, not
    -- stat: gVisor's kernel refuses coreutils' statx flags)
    local r = base_sandbox.commands:run(string.format("date -d %s +%%s; date -r %s +%%s",
      q(en.modified_time), q(path)))
    local a, b = r.stdout:match("^(%d+)\n(%d+)\n$")
    expect(a):eq(b)
    expect(base_sandbox.files:list(workdir)[1]):eq(en)
  end)

  test("directory and executable entries carry their modes", function(base_sandbox, workdir)
    local d = workdir .. "/adir"
    expect(base_sandbox.files:make_dir(d)):eq(true)
    local en = base_sandbox.files:stat(d)
    local u, g = base_sandbox.commands:run("id -un; id -gn").stdout:match("^(%S+)\n(%S+)\n$")
    expect({ en.type, en.mode, en.permissions, en.owner, en.group })
      :eq({ "dir", fs_mode(base_sandbox, d), perm_string("d", en.mode), u, g })
    expect(en.mode & tonumber("700", 8), "its owner uses it"):eq(tonumber("700", 8))
    local x = workdir .. "/run.sh"
    base_sandbox.files:write(x, "#!/bin/sh\n")
    base_sandbox.commands:run("chmod 750 " .. q(x))
    en = base_sandbox.files:stat(x)
    expect({ en.mode, en.permissions }):eq({ tonumber("750", 8), "-rwxr-x---" })
  end)

  test("stat of a missing path is not found", function(base_sandbox, workdir)
    expect(function() return base_sandbox.files:stat(workdir .. "/missing") end):raises("NotFound")
  end)

  test("stat of a symlink gives its target", function(base_sandbox, workdir)
    base_sandbox.files:write(workdir .. "/target.txt", "t")
    base_sandbox.commands:run("ln -s target.txt link", { cwd = workdir })
    local en = base_sandbox.files:stat(workdir .. "/link")
    expect(en.name):eq("link")
    expect(en.path):eq(workdir .. "/link")
    expect(en.type):eq("file")
    expect(en.symlink_target):eq(workdir .. "/target.txt")
  end)

  test("exists is true for a file and a directory, false when missing", function(base_sandbox, workdir)
    base_sandbox.files:write(workdir .. "/e.txt", "")
    expect(base_sandbox.files:exists(workdir .. "/e.txt")):eq(true)
    expect(base_sandbox.files:exists(workdir)):eq(true)
    expect(base_sandbox.files:exists(workdir .. "/none")):eq(false)
  end)

  test("make_dir is true, then false the second time", function(base_sandbox, workdir)
    local d = workdir .. "/twice"
    expect(base_sandbox.files:make_dir(d)):eq(true)
    expect(base_sandbox.files:make_dir(d)):eq(false)
    expect(base_sandbox.files:stat(d).type):eq("dir")
  end)

  test("make_dir creates nested directories in one call", function(base_sandbox, workdir)
    local d = workdir .. "/n1/n2/n3"
    expect(base_sandbox.files:make_dir(d)):eq(true)
    expect(base_sandbox.files:stat(d).type):eq("dir")
  end)

  test("rename moves the content and returns the new entry", function(base_sandbox, workdir)
    local old, new = workdir .. "/old.txt", workdir .. "/sub/new.txt"
    base_sandbox.files:write(old, "moving")
    base_sandbox.files:make_dir(workdir .. "/sub")
    local en = base_sandbox.files:rename(old, new)
    expect({ en.name, en.path, en.type }):eq({ "new.txt", new, "file" })
    expect(base_sandbox.files:exists(old)):eq(false)
    expect(base_sandbox.files:read(new)):eq("moving")
  end)

  test("rename of a missing path is not found", function(base_sandbox, workdir)
    expect(function() return base_sandbox.files:rename(
      workdir .. "/ghost", workdir .. "/ghost2") end):raises("NotFound")
    expect(base_sandbox.files:exists(workdir .. "/ghost2")):eq(false)
  end)

  test("remove deletes a file and a directory tree", function(base_sandbox, workdir)
    base_sandbox.files:write(workdir .. "/r.txt", "r")
    base_sandbox.files:write(workdir .. "/rd/in/f.txt", "f")
    base_sandbox.files:remove(workdir .. "/r.txt")
    base_sandbox.files:remove(workdir .. "/rd")
    expect(base_sandbox.files:exists(workdir .. "/r.txt")):eq(false)
    expect(base_sandbox.files:exists(workdir .. "/rd")):eq(false)
  end)

  test("remove of a missing path is not an error", function(base_sandbox, workdir)
    base_sandbox.files:remove(workdir .. "/never-there")
    expect(base_sandbox.files:exists(workdir .. "/never-there")):eq(false)
  end)

  test("unicode and spaces in names are listed back exactly", function(base_sandbox, workdir)
    local names = { "with space.txt", "naïve café.txt", "日本語.txt", "emoji 😀.txt",
                    "  lead and trail  ", "quote ' and \".txt" }
    for i, n in ipairs(names) do base_sandbox.files:write(workdir .. "/" .. n, "n" .. i) end
    base_sandbox.files:make_dir(workdir .. "/dir with ünïcode")
    local want = { "dir with ünïcode", table.unpack(names) }
    table.sort(want)
    expect(sorted_names(base_sandbox.files:list(workdir))):eq(want)
    for i, n in ipairs(names) do
      expect(base_sandbox.files:read(workdir .. "/" .. n)):eq("n" .. i)
      expect(base_sandbox.files:stat(workdir .. "/" .. n).name):eq(n)
    end
    local ls = base_sandbox.commands:run("ls -A", { cwd = workdir }).stdout
    for _, n in ipairs(want) do expect(ls):contains(n .. "\n") end
  end)
end)

describe("watch_dir", function()
  -- Reads events until one of type `kind` named `name` arrives (nil when
  -- `wait` s, 30 by default, pass without any event); returns it and
  -- everything seen. `kind` may be a list of the types that would do.
  local function await(w, kind, name, wait)
    local kinds = type(kind) == "table" and kind or { kind }
    local seen = {}
    for _ = 1, 500 do
      local ev = w:next(wait or 30)
      if not ev then break end
      seen[#seen + 1] = ev.type .. " " .. ev.name
      if ev.name == name then
        for _, k in ipairs(kinds) do if ev.type == k then return ev, seen end end
      end
    end
    return nil, seen
  end
  local function expect_event(w, kind, name)
    local ev, seen = await(w, kind, name)
    local what = (type(kind) == "table" and table.concat(kind, "/") or kind) .. " " .. name
    -- an event is its type and name, nothing else
    expect(ev, what .. " among " .. table.concat(seen, ", "))
      :eq(ev and { type = ev.type, name = name } or "an event")
  end

  test("create and write events name the file", function(base_sandbox, workdir)
    local w <close> = base_sandbox.files:watch_dir(workdir, { timeout = 60 })
    base_sandbox.files:write(workdir .. "/w.txt", "data")
    expect_event(w, "create", "w.txt")
    expect_event(w, "write", "w.txt")
  end)

  test("remove and rename events name the file", function(base_sandbox, workdir)
    base_sandbox.files:write(workdir .. "/gone.txt", "g")
    base_sandbox.files:write(workdir .. "/from.txt", "f")
    local w <close> = base_sandbox.files:watch_dir(workdir, { timeout = 60 })
    base_sandbox.files:remove(workdir .. "/gone.txt")
    expect_event(w, "remove", "gone.txt")
    base_sandbox.files:rename(workdir .. "/from.txt", workdir .. "/to.txt")
    -- E2B's envd: rename names the old name, create the new; a watcher
    -- may name only the new one (not promised): the new name is reported.
    expect_event(w, { "create", "rename" }, "to.txt")
  end)

  test("recursive watch names nested files, new folders included", function(base_sandbox, workdir)
    base_sandbox.files:make_dir(workdir .. "/sub")
    local w <close> = base_sandbox.files:watch_dir(workdir, { recursive = true, timeout = 60 })
    base_sandbox.files:write(workdir .. "/sub/n.txt", "n")
    expect_event(w, "create", "sub/n.txt")
    base_sandbox.files:make_dir(workdir .. "/fresh")
    expect_event(w, "create", "fresh")
    -- When a new folder is watched is not promised (inotify cannot add it
    -- atomically; a watcher may report it first): written until reported.
    local got
    for i = 1, 20 do
      base_sandbox.files:write(workdir .. "/fresh/in.txt", "i" .. i)
      got = await(w, { "create", "write" }, "fresh/in.txt", 1)
      if got then break end
    end
    expect(got, "a write in the new folder reported"):truthy()
  end)

  test("watching a missing directory is not found", function(base_sandbox, workdir)
    expect(function()
      local w <close> = base_sandbox.files:watch_dir(workdir .. "/absent")
      w:next()
    end):raises("NotFound")
  end)

  test("watching a file raises an error naming it", function(base_sandbox, workdir)
    base_sandbox.files:write(workdir .. "/plain.txt", "p")
    local err = expect(function()
      local w <close> = base_sandbox.files:watch_dir(workdir .. "/plain.txt")
      w:next()
    end):raises()
    expect(type(err), tostring(err)):eq("table")
    expect(err.class):eq("InvalidArgument")
    expect(err.message):contains("plain.txt")
  end)
end)

describe("signed URLs", function()
  -- A signed URL is for a client that sends no header at all, so it is
  -- envd's host-name form (scheme://49983-<id>.<domain>/files?...), also
  -- when the host itself uses one header-routed data-plane URL.
  local function direct(sbx, url)
    local _, host, query = url:match("^(https?)://([^/]+)/files(%?.*)$")
    expect(query, "a /files URL with a query"):type("string")
    expect(host, "the URL's host"):eq(sbx:get_host(49983))
    return url
  end
  local function multipart(path, data)
    local b = "e2eboundary" .. e2e.run_id:gsub("%W", "")
    return "--" .. b .. "\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
      .. path .. "\"\r\nContent-Type: application/octet-stream\r\n\r\n" .. data
      .. "\r\n--" .. b .. "--\r\n", "multipart/form-data; boundary=" .. b
  end

  -- FC does not honour signatures on secure sandboxes (there a URL needs
  -- the access token): what only a valid signature allows runs where
  -- signed-urls is declared; refusals hold on every platform.
  local SIGNED = { requires = { "signed-urls" } }
  -- A refusal is envd's own 401, or the 403 of a gateway in front of it
  -- (FC refuses an envd call without the sandbox's token so).
  local function expect_refused(r)
    expect({ 401, 403 }, "refused, not served"):contains(r.status)
  end
  test("download_url without a token returns the content", SIGNED, function(sandbox_factory)
    local sbx = sandbox_factory { secure = true }
    local path = HOME .. "/signed.bin"
    sbx.files:write(path, ALL_BYTES)
    local url = sbx.files:download_url(path)
    expect(url):match("signature=")
    local r = http.request { url = direct(sbx, url) }
    expect(r.status):eq(200)
    expect(r.body == ALL_BYTES, "body is the file's bytes"):eq(true)
    r = http.request { url = direct(sbx, sbx.files:download_url(path, { expires = 300 })) }
    expect(r.status):eq(200)
    expect(#r.body):eq(256)
  end)

  test("upload_url accepts a multipart POST", SIGNED, function(sandbox_factory)
    local sbx = sandbox_factory { secure = true }
    local path = HOME .. "/up/loaded.txt"
    local body, ctype = multipart(path, "uploaded\0bytes")
    local r = http.request { url = direct(sbx, sbx.files:upload_url(path)), method = "POST",
                             body = body, headers = { ["Content-Type"] = ctype } }
    expect(r.status):eq(200)
    expect(r.body):contains('"path":"' .. path .. '"')
    expect(sbx.files:read(path, { format = "bytes" })):eq("uploaded\0bytes")
  end)

  test("an expired URL is refused, saying expired", SIGNED, function(sandbox_factory)
    local sbx = sandbox_factory { secure = true }
    local path = HOME .. "/exp.txt"
    sbx.files:write(path, "soon gone")
    local url = direct(sbx, sbx.files:download_url(path, { expires = 1 }))
    e2e.sleep(2.5)
    local r = http.request { url = url }
    expect_refused(r)
    if e2e.has("e2b-messages") then expect(r.body):contains("expired") end
    local body, ctype = multipart(HOME .. "/exp2.txt", "x")
    url = direct(sbx, sbx.files:upload_url(HOME .. "/exp2.txt", { expires = 1 }))
    e2e.sleep(2.5)
    r = http.request { url = url, method = "POST", body = body, headers = { ["Content-Type"] = ctype } }
    expect_refused(r)
    expect(sbx.files:exists(HOME .. "/exp2.txt")):eq(false)
  end)

  test("a tampered signature is refused", function(sandbox_factory)
    local sbx = sandbox_factory { secure = true }
    local path = HOME .. "/t.txt"
    sbx.files:write(path, "secret content")
    local url = direct(sbx, sbx.files:download_url(path))
    local forged = url:gsub("signature=[^&]*", "signature=v1_" .. ("A"):rep(43))
    expect(forged ~= url, "signature replaced"):eq(true)
    local r = http.request { url = forged }
    expect_refused(r)
    expect(r.body:find("secret content", 1, true)):is_nil()
  end)

  test("an unsigned URL on a secure sandbox is refused", function(sandbox_factory)
    local sbx = sandbox_factory { secure = true }
    local path = HOME .. "/u.txt"
    sbx.files:write(path, "private")
    local url = direct(sbx, sbx.files:download_url(path)):gsub("&?signature[_%w]*=[^&]*", "")
    expect(url:find("signature", 1, true)):is_nil()
    local r = http.request { url = url }
    expect_refused(r)
    if e2e.has("e2b-messages") then expect(r.body):contains("signature") end
  end)

  -- Every platform: an insecure sandbox's URLs need no credential at all
  -- (on FC the only way to hand a file to a client without the token).
  test("an insecure sandbox's URLs work without a token", function(sandbox_factory)
    local sbx = sandbox_factory { secure = false }
    local path = HOME .. "/open/plain.bin"
    local body, ctype = multipart(path, "open\0bytes")
    local r = http.request { url = direct(sbx, sbx.files:upload_url(path)), method = "POST",
                             body = body, headers = { ["Content-Type"] = ctype } }
    expect(r.status):eq(200)
    r = http.request { url = direct(sbx, sbx.files:download_url(path)) }
    expect(r.status):eq(200)
    expect(r.body):eq("open\0bytes")
  end)
end)

describe("e2e.http client", function()
  test("misuse raises at once", function()
    expect(function() http.request { url = "ftp://x/" } end):raises("only http")
    expect(function() http.request { url = "http://127.0.0.1/", tiemout = 1 } end)
      :raises("unknown option 'tiemout'")
    expect(function() http.request { url = "http:///x" } end):raises("no host")
    expect(function() http.request {} end):raises("option 'url'")
  end)

  -- A server on `port` that answers every request with the request's
  -- header lines, or (mode "mute") accepts and never answers. In a
  -- code-interpreter sandbox: FC's base promises envd only, no python.
  local ECHO = [[
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    if sys.argv[2] == "mute":
        time.sleep(120)
        continue
    head = data.split(b"\r\n\r\n", 1)[0]
    c.sendall(b"HTTP/1.1 201 Created\r\nX-Multi: one\r\nX-Multi: two\r\nContent-Length: "
              + str(len(head)).encode() + b"\r\nConnection: close\r\n\r\n" + head)
    c.close()
]]
  local function serve(sbx, workdir, port, mode)
    sbx.files:write(workdir .. "/echo.py", ECHO)
    local h = sbx.commands:run(string.format("python3 -B echo.py %d %s", port, mode),
      { background = true, cwd = workdir })
    e2e.defer(function() h:kill() end)
    local url = sbx:url(port, "/probe")
    local out = ""
    e2e.eventually(function() out = out .. h.stdout; return out:find("ready", 1, true) end,
      { timeout = 30 })
    return url
  end

  test("a sandbox service by host name gets only the caller's headers", function(code_sandbox)
    local url = serve(code_sandbox, "/tmp", 8431, "echo")
    local r = http.request { url = url, method = "POST", body = "x", headers = { ["X-Probe"] = "yes" } }
    expect(r.status):eq(201)
    expect(r.headers["x-multi"]):eq("one, two")
    -- HTTP/1.1 from E2B's proxy; a gateway in front (FC's nginx) may speak 1.0
    expect(r.body):match("^POST /probe HTTP/1%.[01]\r\n")
    expect(r.body):contains("\r\nX-Probe: yes")
    for _, h in ipairs({ "x-access-token", "x-api-key", "e2b-sandbox-id", "e2b-sandbox-port",
                         "authorization", "e2b-traffic-access-token" }) do
      expect(r.body:lower():find("\n" .. h .. ":", 1, true), h .. " was sent"):is_nil()
    end
  end)

  test("a server that never answers raises Timeout", function(code_sandbox)
    local url = serve(code_sandbox, "/tmp", 8432, "mute")
    expect(function() return http.request({ url = url, timeout = 2 }) end):raises("Timeout")
  end)

  test("a refused connection raises Connection", function()
    -- port 1 on loopback: nothing listens there on a test machine
    local err = expect(function()
      return http.request({ url = "http://127.0.0.1:1/", timeout = 10 })
    end):raises("Connection")
    expect(err.message):contains("127.0.0.1")
  end)
end)
