-- The sandbox lifecycle: create / connect / info / list / kill;
-- kill twice; set_timeout extends and shortens (end_at moves); connect
-- never shortens; metadata tagging in info and list filters (caller's
-- metadata kept, e2e / e2e_test added, a forged e2e overwritten);
-- is_running; envd_version; connect to a killed sandbox -> NotFound;
-- pause / connect-resume with files kept (capability pause); e2e_slow: TTL expiry ends the
-- sandbox (E2E_SHORT_TTL), shorten-then-lengthen keeps it alive.
-- Fixtures: sandbox_factory (every test here changes its sandbox's life).
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local sandbox = require "e2e.sandbox"
local suite = require "suite"

local rfc3339 = suite.rfc3339

local function end_at(sbx) return rfc3339(sbx:info().end_at) end

-- id's entry in the list, while it is alive (running or paused): a platform
-- may keep listing a killed sandbox a while as "terminated" (FC documents
-- the state, not for how long).
local function listed(id, filter)
  for _, info in ipairs(sandbox.list { metadata = filter }) do
    if info.sandbox_id == id and (info.state == "running" or info.state == "paused") then
      return info
    end
  end
  return nil
end

-- E2B reports the template by id and keeps the requested name as alias.
local function expect_template(info, name)
  expect(info.template_id == name or info.name == name,
    string.format("template_id %s / alias %s names %s", tostring(info.template_id),
      tostring(info.name), name)):eq(true)
end

describe("lifecycle", function()
  test("create gives a running sandbox of its template", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 120 }
    -- The id's shape is the platform's (E2B: lower-case alphanumerics,
    -- FC: sbx-...): only what the data-plane host name needs is asserted.
    expect(sbx.id):match("^[%w%-]+$")
    expect(tostring(sbx)):eq("Sandbox(" .. sbx.id .. ")")
    expect(sbx.envd_version):match("^%d+%.%d+%.%d+")
    expect(sbx:is_running()):eq(true)
    local info = sbx:info()
    expect(info.sandbox_id):eq(sbx.id)
    expect(info.state):eq("running")
    expect_template(info, "base")
    expect(info.envd_version):eq(sbx.envd_version)
    -- The lifetime asked for (120 s), measured on the platform's own
    -- clock. Whether it counts from the request or from the sandbox being
    -- up is not promised: a start-up of up to 30 s may come out of it. Not
    -- the 300 s or 15 s a create without a timeout gets.
    local life = rfc3339(info.end_at) - rfc3339(info.started_at)
    expect(life):ge(90)
    expect(life):le(125)
  end)

  test("connect gives a working handle to the same sandbox", function(sandbox_factory)
    local sbx = sandbox_factory {}
    local other = sandbox.connect(sbx.id)
    expect(other.id):eq(sbx.id)
    expect(other.envd_version):eq(sbx.envd_version)
    local method = sbx:connect {}
    expect(method.id):eq(sbx.id)
    other.files:write("/tmp/connected.txt", "through the second handle")
    expect(sbx.files:read("/tmp/connected.txt")):eq("through the second handle")
  end)

  test("list shows a created sandbox", function(sandbox_factory)
    local probe = suite.unique("life-list")
    local sbx = sandbox_factory { metadata = { probe = probe } }
    local info = e2e.eventually(function() return listed(sbx.id, { probe = probe }) end,
      { timeout = 30, message = "the new sandbox listed" })
    expect(info.state):eq("running")
    expect_template(info, "base")
  end)

  test("kill ends the sandbox", function(sandbox_factory)
    local probe = suite.unique("life-kill")
    local sbx = sandbox_factory { metadata = { probe = probe } }
    local id = sbx.id
    expect(sbx:kill()):eq(true)
    -- Asks the sandbox's envd (through the platform), not the handle.
    expect(sbx:is_running(), "the killed sandbox is not running"):eq(false)
    -- Listing is eventually consistent on the cloud: wait for it to drop.
    e2e.eventually(function() return listed(id, { probe = probe }) == nil end,
      { timeout = 30, message = "killed sandbox no longer listed" })
    -- Killed for the platform too, not only for this handle.
    local err = expect(function() return sandbox.connect(id) end):raises("NotFound")
    suite.expect_not_found(err)
  end)

  test("kill twice returns false", function(sandbox_factory)
    local sbx = sandbox_factory {}
    local id = sbx.id
    expect(sbx:kill()):eq(true)
    -- Both ask the platform (a killed handle does too), which no longer has it.
    expect(sbx:kill(), "the platform no longer has it"):eq(false)
    expect(sandbox.kill(id)):eq(false)
  end)

  test("connect to a killed sandbox raises NotFound", function(sandbox_factory)
    local sbx = sandbox_factory {}
    local id = sbx.id
    expect(sandbox.kill(id)):eq(true)
    local err = expect(function()
      return sandbox.connect(id, { timeout = 60 })
    end):raises("NotFound")
    suite.expect_not_found(err)
  end)
end)

describe("timeouts", function()
  test("set_timeout extends the end time", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 60 }
    local before = end_at(sbx)
    sbx:set_timeout(600)
    local moved = end_at(sbx) - before
    -- now + 600 against created + 60: 540 plus the time in between.
    expect(moved):ge(538)
    expect(moved):le(570)
  end)

  test("set_timeout shortens the end time", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 600 }
    local before = end_at(sbx)
    sbx:set_timeout(60)
    local moved = before - end_at(sbx)
    expect(moved):ge(510)
    expect(moved):le(542)
    expect(sbx:is_running()):eq(true)
  end)

  test("connect with a shorter timeout keeps the end time", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 600 }
    local before = end_at(sbx)
    sandbox.connect(sbx.id, { timeout = 30 })
    sbx:connect { timeout = 1 }
    -- Second resolution: the same instant, never earlier.
    expect(end_at(sbx)):ge(before - 1)
  end)

  test("connect with a longer timeout extends the end time", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 60 }
    local before = end_at(sbx)
    sandbox.connect(sbx.id, { timeout = 900 })
    local moved = end_at(sbx) - before
    expect(moved):ge(838)
    expect(moved):le(870)
  end)

  test("TTL expiry ends the sandbox", {
    marks = { "e2e_slow" }, timeout = sandbox.short_ttl + 180,
  }, function(sandbox_factory)
    local probe = suite.unique("life-ttl")
    local sbx = sandbox_factory { timeout = sandbox.short_ttl, metadata = { probe = probe } }
    local id = sbx.id
    expect(sbx:is_running()):eq(true)
    e2e.eventually(function()
      return not sbx:is_running() and listed(id, { probe = probe }) == nil
    end, { timeout = sandbox.short_ttl + 90, interval = 1,
           message = "sandbox gone after its TTL" })
    expect(function() return sandbox.connect(id) end):raises("NotFound")
  end)

  test("shorten then lengthen keeps it alive past the short one", {
    marks = { "e2e_slow" }, timeout = sandbox.short_ttl + 120,
  }, function(sandbox_factory)
    local probe = suite.unique("life-relengthen")
    local sbx = sandbox_factory { timeout = 600, metadata = { probe = probe } }
    sbx:set_timeout(sandbox.short_ttl)
    sbx:set_timeout(sandbox.short_ttl + 300)
    e2e.sleep(sandbox.short_ttl + 5)
    expect(sbx:is_running()):eq(true)
    local info = listed(sbx.id, { probe = probe })
    expect(info and info.state):eq("running")
  end)
end)

describe("metadata", function()
  test("caller metadata is kept and the run's tags added", function(sandbox_factory)
    local md = { owner = "lifecycle", ["kind.v-1"] = "a b & = /:[x]" }
    local sbx = sandbox_factory { metadata = md }
    local got = sbx:info().metadata
    expect(got.owner):eq("lifecycle")
    expect(got["kind.v-1"]):eq("a b & = /:[x]")
    expect(got.e2e):eq(e2e.run_id)
    local suffix = "::metadata::caller metadata is kept and the run's tags added"
    expect(got.e2e_test:sub(-#suffix)):eq(suffix)
    expect(got.e2e_test):contains("test_02_lifecycle.lua::")
    -- Listing by the tags and the caller's pairs together finds it.
    local info = e2e.eventually(function()
      return listed(sbx.id, { e2e = e2e.run_id, e2e_test = got.e2e_test, owner = "lifecycle",
                              ["kind.v-1"] = "a b & = /:[x]" })
    end, { timeout = 30, message = "listed by its tags and metadata" })
    expect(info.metadata.owner):eq("lifecycle")
  end)

  -- A space in a key, UTF-8 in a value: neither E2B nor FC says which
  -- metadata it takes. Kept exactly (and found by it), or refused as an
  -- invalid argument; never altered.
  test("unusual metadata is kept exactly or refused", function(sandbox_factory)
    local md = { ["key with space"] = "v\xc3\xbc & =" }
    local ok, sbx = pcall(sandbox_factory, { metadata = md })
    if not ok then
      expect(type(sbx) == "table" and sbx.class, "an error value: " .. tostring(sbx))
        :eq("InvalidArgument")
      expect(sbx.status):eq(400)
      return
    end
    expect(sbx:info().metadata["key with space"]):eq("v\xc3\xbc & =")
    local info = e2e.eventually(function() return listed(sbx.id, md) end,
      { timeout = 30, message = "listed by its unusual metadata" })
    expect(info.metadata["key with space"]):eq("v\xc3\xbc & =")
  end)

  test("the host's tag overwrites a forged e2e value", function(sandbox_factory)
    local probe = suite.unique("life-forged")
    local sbx = sandbox_factory { metadata = { e2e = "forged", e2e_test = "forged", probe = probe } }
    local got = sbx:info().metadata
    expect(got.e2e):eq(e2e.run_id)
    expect(got.e2e_test):ne("forged")
    e2e.eventually(function() return listed(sbx.id, { e2e = e2e.run_id, probe = probe }) end,
      { timeout = 30, message = "listed under the run's tag" })
    expect(listed(sbx.id, { e2e = "forged" })):is_nil()
  end)
end)

-- FC: allow-listed accounts only, not on the Eco plan (E2E_CAPS=+pause).
describe("pause", { requires = { "pause" } }, function()
  test("pause then connect resumes it with its files", function(sandbox_factory)
    local probe = suite.unique("life-pause")
    local sbx = sandbox_factory { metadata = { probe = probe } }
    local kept = sandbox.default_home .. "/kept.txt"
    sbx.files:write(kept, "survives a pause")
    local sleeper = sbx.commands:run("sleep 600", { background = true, timeout = 0 })
    expect(sbx:pause()):eq(true)
    expect(sbx:pause()):eq(false)
    expect(sbx:info().state):eq("paused")
    expect(sbx:is_running()):eq(false)
    local info = e2e.eventually(function()
      local l = sandbox.list { state = "paused", metadata = { probe = probe } }
      return l[1]
    end, { timeout = 30, message = "listed as paused" })
    expect(info.sandbox_id):eq(sbx.id)
    expect(sandbox.list { state = "running", metadata = { probe = probe } }):eq({})
    local back = sandbox.connect(sbx.id)
    expect(back.id):eq(sbx.id)
    expect(sbx:info().state):eq("running")
    expect(sbx:is_running()):eq(true)
    expect(back.files:read(kept)):eq("survives a pause")
    -- Processes are frozen, not lost: the sleeper is still there.
    local pids = {}
    for _, p in ipairs(back.commands:list()) do pids[#pids + 1] = p.pid end
    expect(pids):contains(sleeper.pid)
    expect(back.commands:kill(sleeper.pid)):eq(true)
  end)
end)
