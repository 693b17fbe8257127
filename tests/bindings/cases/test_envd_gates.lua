-- envd version gates and token refresh as Lua sees them, against the
-- fake platform of tests/bindings/fakeplat.py: template "envd-X.Y.Z"
-- reports envdVersion X.Y.Z, every connect hands out new tokens, and envd
-- refuses a stale one. fakeplat.py then checks what reached the wire.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local expect = e2e.expect

local function test(name, fn) e2e.test(name, { platform = true }, fn) end

local function at(version, opts)
  opts = opts or {}
  opts.template = "envd-" .. version
  return sandbox.create(opts)
end

test("connect refreshes the tokens of every handle", function()
  local sbx = at("0.6.4")
  local files = sbx.files                 -- a sub-object made before
  expect(files:exists("/x")):eq(true)
  local other = sandbox.connect(sbx.id)   -- the platform's new tokens
  expect(files:exists("/x")):eq(true)     -- the first handle follows
  expect(other.files:exists("/x")):eq(true)
  sbx:connect {}
  expect(other.commands:run("true").stdout):eq("ran\n")
  expect(sbx:is_running()):eq(true)
end)

test("network option: the traffic token goes to user ports, refreshed", function()
  local sbx = at("0.6.4", { network = { allow_public_traffic = false,
    allow_out = { "1.1.1.1", "10.0.0.0/8" }, deny_out = { "0.0.0.0/0" } } })
  expect(sbx:http(8080).status):eq(200)
  sbx:connect {}
  expect(sbx:http(8080).status):eq(200)
  local net = sbx:info().network
  expect(net.allow_public_traffic):eq(false)
  expect(net.allow_out):eq({ "1.1.1.1", "10.0.0.0/8" })
  expect(net.deny_out):eq({ "0.0.0.0/0" })
end)

test("close_stdin below envd 0.5.2 raises Sandbox before sending", function()
  local sbx = at("0.5.1")
  local h = sbx.commands:run("cat", { background = true, stdin = true })
  local e = expect(function() return h:close_stdin() end):raises("Sandbox")
  expect(e.message):contains("close_stdin needs envd 0.5.2 or later; the sandbox's envd is 0.5.1")
  expect(function() return sbx.commands:close_stdin(h.pid) end):raises("Sandbox")
  local ok = at("0.5.2")
  local h2 = ok.commands:run("cat", { background = true, stdin = true })
  h2:close_stdin()
  ok.commands:close_stdin(h2.pid)
end)

test("recursive watch below envd 0.1.4 raises Template", function()
  local sbx = at("0.1.3")
  local e = expect(function()
    return sbx.files:watch_dir("/d", { recursive = true })
  end):raises("Template")
  expect(e.message):contains("recursive watch needs envd 0.1.4 or later")
  sbx.files:watch_dir("/d"):stop()        -- not recursive: no gate
end)

test("stdin=false below envd 0.3.0 raises Sandbox; left unsaid it runs", function()
  local sbx = at("0.2.9")
  local e = expect(function()
    return sbx.commands:run("true", { stdin = false })
  end):raises("Sandbox")
  expect(e.message):contains("stdin=false needs envd 0.3.0 or later")
  expect(sbx.commands:run("true").exit_code):eq(0)
end)

test("below envd 0.4.0 user 'user' is sent when none is given", function()
  local old = at("0.3.9")
  expect(old.files:read("/x")):eq("x")
  old.commands:run("true")
  old.commands:run("true", { user = "root" })
  expect(old.files:download_url("/x")):contains("username=user")
  local new = at("0.4.0")
  expect(new.files:read("/x")):eq("x")
  new.commands:run("true")
  expect(new.files:download_url("/x"):find("username=", 1, true)):is_nil()
end)

test("uploads are multipart below envd 0.5.7, octet-stream from it", function()
  local src = os.tmpname()
  local h = assert(io.open(src, "wb")); h:write(("0123456789"):rep(10000)); h:close()
  for _, v in ipairs { "0.5.2", "0.5.7" } do
    expect(at(v).files:upload(src, "/home/user/u.bin").path):eq("/home/user/u.bin")
  end
  os.remove(src)
end)

test("create of an envd older than 0.1.0 raises Template, the sandbox killed", function()
  local e = expect(function()
    return sandbox.create({ template = "envd-0.0.9" })
  end):raises("Template")
  expect(e.message):contains("needs envd 0.1.0 or later; the sandbox's envd is 0.0.9")
  expect(e.message):contains("(the sandbox was killed)")
end)

test("metrics below envd 0.1.5 raises Template", function()
  local old = at("0.1.4")
  expect(function() return old:metrics() end):raises("Template")
  expect(at("0.1.5"):metrics()):eq({})
end)

test("pause sends the SDK's body; keep_memory=false", function()
  local sbx = at("0.6.4")
  expect(sbx:pause()):eq(true)
  expect(sbx:pause { keep_memory = false }):eq(true)
end)
