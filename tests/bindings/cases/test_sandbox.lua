-- e2e.sandbox against abx-local: lifecycle, info, list filters, the
-- host-enforced tags, data-plane helpers and every misuse message.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local http = require "e2e.http"
local expect = e2e.expect

-- Tests that reach the platform say so: without credentials they skip.
local function test(name, fn) e2e.test(name, { platform = true }, fn) end

-- abx-local's fc profile (ABX_LOCAL_PROFILE=fc, set by the bindings_fc.*
-- registrations): envd 0.5.2, pause refused (allow-listed accounts only).
local FC = os.getenv("ABX_LOCAL_PROFILE") == "fc"

-- Outside a test or fixture there is no scope to own a sandbox.
local toplevel_ok, toplevel_err = pcall(sandbox.create)

e2e.test("create outside a test or fixture raises", function()
  expect(toplevel_ok):eq(false)
  expect(toplevel_err:find("sandbox.create: only inside a test or a fixture", 1, true) ~= nil):eq(true)
end)

test("create, fields, info and tags", function()
  local sbx = sandbox.create { metadata = { team = "qa", e2e = "forged", e2e_test = "x" },
    envs = { GREETING = "hi" } }
  expect(type(sbx.id)):eq("string")
  expect(sbx.sandbox_id):eq(sbx.id)
  expect(sbx.template_id):eq("base")
  expect(tostring(sbx)):eq("Sandbox(" .. sbx.id .. ")")
  expect(type(sbx.envd_version)):eq("string")
  if FC then expect(sbx.envd_version):eq("0.5.2") end
  local info = sbx:info()
  expect(info.sandbox_id):eq(sbx.id)
  expect(info.template_id):eq("base")
  expect(info.state):eq("running")
  -- The run's tag wins over the caller's; other metadata is kept.
  expect(info.metadata.e2e):eq(e2e.run_id)
  local tid = info.metadata.e2e_test
  expect(tid:sub(-#"test_sandbox.lua::create, fields, info and tags"))
    :eq("test_sandbox.lua::create, fields, info and tags")
  expect(#info.metadata.e2e_nonce):eq(16)
  expect(info.metadata.team):eq("qa")
  expect(type(info.started_at)):eq("string")
  expect(info.cpu_count > 0):eq(true)
  -- envs reach the sandbox; commands/files are cached per handle.
  expect(sbx.commands:run("echo $GREETING").stdout):eq("hi\n")
  expect(rawequal(sbx.commands, sbx.commands)):eq(true)
  expect(rawequal(sbx.files, sbx.files)):eq(true)
end)

test("non-secure sandbox without internet access", function()
  local sbx = sandbox.create { secure = false, allow_internet_access = false, timeout = 120 }
  expect(sbx:is_running()):eq(true)
  expect(sbx:http(49983, { path = "/health" }).status < 300):eq(true)
end)

test("list filters by metadata and state", function()
  local a = sandbox.create { metadata = { role = "list-a" } }
  local b = sandbox.create { metadata = { role = "list-b" } }
  local mine = sandbox.list { metadata = { e2e = e2e.run_id, role = "list-a" } }
  expect(#mine):eq(1)
  expect(mine[1].sandbox_id):eq(a.id)
  local both = sandbox.list { metadata = { e2e = e2e.run_id }, state = "running", limit = 1 }
  local ids = {}
  for _, i in ipairs(both) do ids[i.sandbox_id] = true end
  expect(ids[a.id]):eq(true)
  expect(ids[b.id]):eq(true)
  expect(#sandbox.list { metadata = { e2e = e2e.run_id }, state = "paused" }):eq(0)
  expect(#sandbox.list { metadata = { role = "no-such-role" } }):eq(0)
end)

test("kill twice, then the handle is dead", function()
  local sbx = sandbox.create {}
  expect(sbx:is_running()):eq(true)
  expect(sbx:kill()):eq(true)
  expect(sbx:kill()):eq(false)
  expect(sbx:is_running()):eq(false)
  expect(sandbox.kill(sbx.id)):eq(false)
  expect(function() sbx:info() end):raises("sandbox " .. sbx.id .. " was killed")
  expect(function() return sbx.commands:list() end):raises("was killed")
  -- A killed sandbox is gone from the platform.
  local err = expect(function() sandbox.connect(sbx.id) end):raises("NotFound")
  expect(err.class):eq("NotFound")
  expect(err.status):eq(404)
end)

test("sandbox.kill by id", function()
  local sbx = sandbox.create {}
  expect(sandbox.kill(sbx.id)):eq(true)
  expect(sbx:is_running()):eq(false)
  expect(sandbox.kill(sbx.id)):eq(false)
end)

test("set_timeout moves end_at", function()
  local sbx = sandbox.create { timeout = 60 }
  local before = sbx:info().end_at
  sbx:set_timeout(3600)
  local after = sbx:info().end_at
  expect(after > before):eq(true)
end)

test("connect shares the tracked sandbox", function()
  local sbx = sandbox.create {}
  local again = sandbox.connect(sbx.id)
  expect(again.id):eq(sbx.id)
  local third = sbx:connect { timeout = 120 }
  expect(third.id):eq(sbx.id)
  expect(again:kill()):eq(true)
  -- Every handle of it sees the kill.
  expect(sbx:is_running()):eq(false)
  expect(function() third:info() end):raises("was killed")
end)

test("get_host, url and the http helper", function()
  local sbx = sandbox.create {}
  expect(sbx:get_host(8000)):eq("8000-" .. sbx.id .. "." .. sbx.domain)
  -- The host-name form even here, where one data-plane URL is configured
  -- (it needs routing headers): a URL that works as it is.
  expect(e2e.data_plane_url):match("^http://")
  expect(sbx:url(8000, "/x")):eq("http://" .. sbx:get_host(8000) .. "/x")
  -- envd answers /health on 49983 through the data plane, both ways.
  local r = sbx:http(49983, { path = "/health" })
  expect(r.status >= 200 and r.status < 300):eq(true)
  r = http.request { url = sbx:url(49983, "/health"), timeout = 10 }
  expect(r.status >= 200 and r.status < 300):eq(true)
  -- A port nobody listens on: the proxy's 502 is returned, not raised.
  r = sbx:http(8123, { path = "/", method = "GET", headers = { ["X-Probe"] = "1" }, timeout = 10 })
  expect(r.status):eq(502)
  expect(type(r.body)):eq("string")
  expect(type(r.headers)):eq("table")
end)

test("metrics is an array of samples", function()
  local sbx = sandbox.create {}
  local m = sbx:metrics()
  expect(type(m)):eq("table")
  if #m > 0 then expect(type(m[1])):eq("table") end
end)

test("pause is reported", function()
  local sbx = sandbox.create {}
  if FC then
    -- The platform refuses (HTTP 403), as FC does outside its allow-list.
    local ok, err = pcall(sbx.pause, sbx)
    expect(ok):eq(false)
    expect(err.class):eq("Sandbox")
    expect(err.status):eq(403)
    expect(sbx:is_running()):eq(true)
    return
  end
  expect(sbx:pause()):eq(true)
  expect(sbx:info().state):eq("paused")
  expect(#sandbox.list { metadata = { e2e = e2e.run_id }, state = "paused" } >= 1):eq(true)
  local back = sbx:connect {}
  expect(back:is_running()):eq(true)
end)

test("network option: info echoes it, user ports want the traffic token", function()
  local sbx = sandbox.create { network = { allow_public_traffic = false,
    allow_out = { "1.1.1.1", "10.0.0.0/8" }, deny_out = { "0.0.0.0/0" } } }
  local net = sbx:info().network
  expect(net.allow_public_traffic):eq(false)
  expect(net.allow_out):eq({ "1.1.1.1", "10.0.0.0/8" })
  expect(net.deny_out):eq({ "0.0.0.0/0" })
  -- sbx:http sends the token: the proxy lets it through to a port nobody
  -- listens on (502); a bare client without it is refused (403).
  expect(sbx:http(8123, { timeout = 10 }).status):eq(502)
  local bare = http.request { url = "http://" .. sbx:get_host(8123) .. "/", timeout = 10 }
  expect(bare.status):eq(403)
  -- envd still answers the client (its access token passes, also on FC).
  expect(sbx.commands:run("echo ok").stdout):eq("ok\n")
  -- allow_public_traffic = true gives no gate.
  local open = sandbox.create { network = { allow_public_traffic = true } }
  expect(http.request { url = "http://" .. open:get_host(8123) .. "/", timeout = 10 }.status):eq(502)
end)

test("operational errors have the one error shape", function()
  local err = expect(function() sandbox.connect("nosuchsandbox0") end):raises("NotFound: ")
  expect(err.class):eq("NotFound")
  expect(getmetatable(err).__name):eq("e2e.Error")
  expect(tostring(err)):eq("NotFound: " .. err.message)
  err = expect(function() sandbox.create { template = "no-such-template" } end):raises("")
  expect(type(err.class)):eq("string")
  expect(tostring(err)):eq(err.class .. ": " .. err.message)
  -- an assertion failure is the same shape, class Failed
  err = expect(function() expect(1):eq(2) end):raises("Failed")
  expect(getmetatable(err).__name):eq("e2e.Error")
  expect(err.message):contains("expected")
end)

test("misuse raises plain messages", function()
  expect(function() sandbox.create { timout = 5 } end):raises("unknown option 'timout' to 'create'")
  expect(function() sandbox.create "base" end):raises("bad argument #1 to 'create'")
  expect(function() sandbox.create { timeout = "x" } end):raises("option 'timeout': number expected, got string")
  expect(function() sandbox.create { timeout = 0 } end):raises("option 'timeout': seconds out of range")
  expect(function() sandbox.create { template = "" } end):raises("option 'template': must not be empty")
  expect(function() sandbox.create { metadata = { 1 } } end):raises("metadata: keys must be strings, got number")
  expect(function() sandbox.create { metadata = { a = 1 } } end)
    :raises("metadata: value of 'a' must be a string, got number")
  expect(function() sandbox.create { envs = "A=1" } end):raises("option 'envs': table expected, got string")
  expect(function() sandbox.create { secure = "yes" } end):raises("option 'secure': boolean expected, got string")
  expect(function() sandbox.create { network = "none" } end):raises("option 'network': table expected, got string")
  expect(function() sandbox.create { network = { allow_in = {} } } end):raises("network: unknown option 'allow_in'")
  expect(function() sandbox.create { network = { [1] = true } } end):raises("network: unknown option '1'")
  expect(function() sandbox.create { network = { allow_public_traffic = "no" } } end)
    :raises("network: 'allow_public_traffic' must be a boolean, got string")
  expect(function() sandbox.create { network = { allow_out = "1.1.1.1" } } end)
    :raises("network: 'allow_out' must be a list of strings, got string")
  expect(function() sandbox.create { network = { deny_out = { "a", 5 } } } end)
    :raises("network: 'deny_out' item 2 must be a string, got number")
  expect(function() sandbox.create { network = { deny_out = { x = "a" } } } end)
    :raises("network: 'deny_out' must be a list of strings (1..n), has key x")
  expect(function() sandbox.create { network = { allow_out = { "" } } } end)
    :raises("network: 'allow_out' item 1 is empty or contains a NUL byte")
  expect(function() sandbox.create { network = { allow_out = { [1] = "a", [3] = "b" } } } end)
    :raises("network: 'allow_out' must be a list of strings")
  expect(function() sandbox.connect() end):raises("bad argument #1 to 'connect' (string expected, got no value)")
  expect(function() sandbox.connect("x", { foo = 1 }) end):raises("unknown option 'foo' to 'connect'")
  expect(function() sandbox.list { state = "dead" } end):raises("option 'state': expected")
  expect(function() sandbox.list { limit = 1000 } end):raises("option 'limit': page size out of range")
  expect(function() sandbox.list { sort = 1 } end):raises("unknown option 'sort' to 'list'")
  expect(function() sandbox.kill({}) end):raises("bad argument #1 to 'kill' (string expected, got table)")
  local sbx = sandbox.create {}
  expect(function() sbx.info() end):raises("bad argument #1 to 'info' (e2e.Sandbox expected, got no value)")
  expect(function() sbx:get_host(0) end):raises("port out of range")
  expect(function() sbx:get_host("x") end):raises("bad argument #1 to 'get_host' (number expected, got string)")
  expect(function() sbx:url(80, "x") end):raises("path must start with '/'")
  expect(function() sbx:http(80, { path = "/a b" }) end):raises("contains a space or control byte")
  expect(function() sbx:http(80, { headers = { ["Bad Name"] = "1" } }) end):raises("invalid header name 'Bad Name'")
  expect(function() sbx:http(80, { headers = { X = "a\r\nB: c" } }) end):raises("value of 'X' contains CR, LF or NUL")
  expect(function() sbx:http(80, { verb = "GET" }) end):raises("unknown option 'verb' to 'http'")
  expect(function() sbx:set_timeout(-1) end):raises("seconds out of range")
  expect(function() sbx:pause { keep = true } end):raises("unknown option 'keep' to 'pause'")
  expect(function() sbx:pause { keep_memory = 1 } end):raises("option 'keep_memory': boolean expected, got number")
  expect(function() sbx.id = "x" end):raises("cannot set field 'id' of a Sandbox")
  expect(function() sbx:run_code("1", { language = "python", context = "c" }) end)
    :raises("options 'language' and 'context' are exclusive")
  expect(function() sbx:run_code(nil) end):raises("bad argument #1 to 'run_code' (string expected, got nil)")
  expect(function() sbx:run_code("1", { lang = "py" }) end):raises("unknown option 'lang' to 'run_code'")
  expect(sbx.no_such_field):eq(nil)
end)

-- A sandbox created by one test is dead in the next one.
local from_previous, previous_test
test("scope: a test's sandbox", function()
  from_previous = sandbox.create {}
  expect(from_previous:is_running()):eq(true)
  previous_test = from_previous:info().metadata.e2e_test
end)

test("scope: is killed when its test ends", function()
  expect(from_previous:is_running()):eq(false)
  expect(function() from_previous:info() end):raises("was killed")
  expect(#sandbox.list { metadata = { e2e = e2e.run_id, e2e_test = previous_test } }):eq(0)
end)
