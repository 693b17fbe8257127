-- The control plane as a client first meets it. Auth with a valid key
-- (list works, this file's sandbox is listed); an invalid, empty or
-- malformed key gives Authentication (401) without the key in the message;
-- sandbox list (metadata filter, state filter, pagination, the fixture's
-- sandbox with its template and metadata);
-- error mapping (unknown sandbox -> NotFound / kill false, bad template ->
-- an error naming it, timeout above the platform's 24 h -> InvalidArgument).
-- Fixtures: base_sandbox (file scope), sandbox_factory.
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local sandbox = require "e2e.sandbox"
local suite = require "suite"

-- A sandbox id nobody has: E2B ids are 20 characters of [a-z0-9].
-- An id no sandbox has, shaped like a real one (`like`, an id of this
-- platform): its part after the last '-' redrawn from its own characters.
-- A platform may check an id's shape before looking it up (FC does not
-- say): a made-up shape would test that check, not the lookup.
local function unknown_id(like)
  local head, tail = like:match("^(.*%-)([^-]+)$")
  head, tail = head or "", tail or like
  local out = {}
  for i = 1, #tail do
    local k = math.random(1, #tail)
    out[i] = tail:sub(k, k)
  end
  local id = head .. table.concat(out)
  return id ~= like and id or unknown_id(like)
end

-- A key shaped like a real one (e2b_ + 40 hex), random so no team has it.
local function fake_key()
  local hex = {}
  for i = 1, 40 do hex[i] = string.format("%x", math.random(0, 15)) end
  local key = "e2b_" .. table.concat(hex)
  e2e.secret(key)   -- a failing assertion must not print it either
  return key
end

local function ids_of(list)
  local ids = {}
  for _, info in ipairs(list) do ids[#ids + 1] = info.sandbox_id end
  table.sort(ids)
  return ids
end

local function find(list, id)
  for _, info in ipairs(list) do
    if info.sandbox_id == id then return info end
  end
  return nil
end

-- The error of list{api_key = key}: Authentication, 401, key not quoted.
local function expect_auth_error(key)
  local err = expect(function() return sandbox.list({ api_key = key }) end):raises("Authentication")
  expect(err.status, "HTTP status"):eq(401)
  if #key > 0 then
    expect(err.message:find(key, 1, true), "key echoed in the message"):is_nil()
    expect(tostring(err):find(key, 1, true), "key echoed by tostring"):is_nil()
  end
  return err
end

describe("auth", function()
  test("a valid key lists this file's sandbox", function(base_sandbox)
    local all = sandbox.list {}
    expect(type(all)):eq("table")
    -- Listing is eventually consistent on the cloud.
    local info = e2e.eventually(function()
      return find(sandbox.list { metadata = { e2e = e2e.run_id } }, base_sandbox.id)
    end, { timeout = 30, message = "base_sandbox in the run's list" })
    expect(info.metadata.e2e):eq(e2e.run_id)
  end)

  test("an invalid key gives Authentication without echoing it", { platform = true }, function()
    local key = fake_key()
    local err = expect_auth_error(key)
    -- Not a part of it either (a server quoting a prefix leaks most of it).
    expect(err.message:find(key:sub(5, 20), 1, true), "key fragment echoed"):is_nil()
  end)

  test("an empty key gives Authentication", { platform = true }, function()
    expect_auth_error("")
  end)

  -- Spaces and UTF-8 in a header: the platform's own check (401), or a
  -- gateway's in front of it (400); FC says neither. Never accepted, never
  -- echoed.
  test("a malformed key is refused without echoing it", { platform = true }, function()
    local junk = "not a key " .. e2e.run_id .. " \xe2\x9c\x93 %s"
    e2e.secret(junk)
    local err = expect(function() return sandbox.list({ api_key = junk }) end):raises()
    expect(type(err) == "table" and (err.class == "Authentication" and err.status == 401 or
      err.class == "InvalidArgument" and err.status == 400),
      "Authentication 401 or InvalidArgument 400: " .. tostring(err)):eq(true)
    expect(tostring(err):find(junk, 1, true), "key echoed"):is_nil()
  end)

  test("a key with a line break is refused before any request", { platform = true }, function()
    local err = expect(function()
      return sandbox.list({ api_key = "e2b_abc\r\nX-Evil: 1" })
    end):raises()
    expect(type(err)):eq("string")
    expect(err):contains("option 'api_key': contains a line break")
    expect(err:find("X-Evil", 1, true)):is_nil()
  end)
end)

describe("list", function()
  test("a metadata filter returns exactly the matching sandboxes", function(sandbox_factory, base_sandbox)
    local probe = suite.unique("list-md")
    local a = sandbox_factory { metadata = { probe = probe, role = "a" } }
    local b = sandbox_factory { metadata = { probe = probe, role = "b" } }
    local want = { a.id, b.id }
    table.sort(want)
    local got = e2e.eventually(function()
      local l = sandbox.list { metadata = { probe = probe } }
      return #l == 2 and l
    end, { timeout = 30, message = "both sandboxes listed by probe" })
    expect(ids_of(got)):eq(want)
    -- Every pair must match (AND), not any of them.
    expect(ids_of(sandbox.list { metadata = { probe = probe, role = "b" } })):eq({ b.id })
    expect(sandbox.list { metadata = { probe = probe, role = "c" } }):eq({})
    expect(find(sandbox.list { metadata = { probe = probe } }, base_sandbox.id)):is_nil()
  end)

  test("state running finds the fixture's sandbox with template and metadata", function(base_sandbox)
    local info = e2e.eventually(function()
      return find(sandbox.list { state = "running", metadata = { e2e = e2e.run_id } },
        base_sandbox.id)
    end, { timeout = 30, message = "base_sandbox listed as running" })
    expect(info.state):eq("running")
    -- E2B lists the template by id; its alias is the name it was made from.
    expect(info.template_id == "base" or info.name == "base",
      "template_id or alias 'base': " .. tostring(info.template_id) .. "/" .. tostring(info.name)):eq(true)
    expect(info.metadata.e2e):eq(e2e.run_id)
    expect(info.started_at):match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d")
    expect(info.end_at):match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d")
    expect(info.cpu_count):gt(0)
    expect(info.memory_mb):gt(0)
  end)

  test("state paused leaves running sandboxes out", function(base_sandbox)
    e2e.eventually(function()
      return find(sandbox.list { metadata = { e2e = e2e.run_id } }, base_sandbox.id)
    end, { timeout = 30, message = "base_sandbox listed" })
    local paused = sandbox.list { state = "paused", metadata = { e2e = e2e.run_id } }
    expect(find(paused, base_sandbox.id)):is_nil()
    for _, info in ipairs(paused) do expect(info.state):eq("paused") end
  end)

  test("a page size of one returns every match, each once", function(sandbox_factory)
    local probe = suite.unique("list-page")
    local made = {}
    for i = 1, 3 do made[i] = sandbox_factory { metadata = { probe = probe } }.id end
    local got = e2e.eventually(function()
      local l = sandbox.list { metadata = { probe = probe }, limit = 1 }
      return #l >= 3 and l
    end, { timeout = 30, message = "three sandboxes over pages of one" })
    -- The order is the platform's (E2B: newest first; FC does not say):
    -- pages of one must still give each sandbox exactly once.
    local order = {}
    for i, info in ipairs(got) do order[i] = info.sandbox_id end
    table.sort(order)
    table.sort(made)
    expect(order):eq(made)
  end)
end)

describe("error mapping", function()
  test("connect to an unknown sandbox raises NotFound naming it", function(base_sandbox)
    local id = unknown_id(base_sandbox.id)
    local err = expect(function() return sandbox.connect(id) end):raises("NotFound")
    expect(err.message):contains(id)
    -- The message's id is the client's; the platform's own answer is the
    -- status and the body's code, which E2B's JS SDK reads.
    suite.expect_not_found(err)
  end)

  test("kill of an unknown sandbox returns false", function(base_sandbox)
    expect(sandbox.kill(unknown_id(base_sandbox.id))):eq(false)
  end)

  -- E2B answers NotFound (404); a platform that validates a request before
  -- it looks the template up answers InvalidArgument (400). The client
  -- names the template either way.
  test("an unknown template is refused naming the template", function(sandbox_factory)
    local name = suite.unique("no-such-template")
    local err = expect(function()
      return sandbox_factory({ template = name })
    end):raises()
    expect(type(err), tostring(err)):eq("table")
    expect({ "NotFound 404", "InvalidArgument 400" }, err.message)
      :contains(err.class .. " " .. tostring(err.status))
    expect(err.message):contains(name)
    if e2e.has("e2b-messages") then
      -- the platform's own words, after the client's "...: 404: "
      local said = err.message:match(": %d%d%d: (.*)$")
      expect(said, err.message):contains(name)
      expect(said):match("[Tt]emplate")
    end
  end)

  -- The longest lifetime is the plan's (24 h on E2B's Pro and FC's Eco
  -- and Standard, 7 days on FC's Pro): just above 24 h is refused or kept
  -- as asked; 30 days is above every plan's.
  test("a timeout above the plan's limit is InvalidArgument", function(sandbox_factory)
    local err = expect(function()
      return sandbox_factory({ timeout = 2592000 })
    end):raises("InvalidArgument")
    expect(err.status):eq(400)
    if e2e.has("e2b-messages") then expect(err.message:lower()):contains("timeout") end
    local ok, sbx = pcall(sandbox_factory, { timeout = 86401 })
    if ok then
      local info = sbx:info()
      expect(suite.rfc3339(info.end_at) - suite.rfc3339(info.started_at),
        "the lifetime asked for"):near(86401, 5)
    else
      expect(type(sbx) == "table" and sbx.class, tostring(sbx)):eq("InvalidArgument")
      expect(sbx.status):eq(400)
    end
  end)

  test("a timeout out of the client's range is refused before any request", function(sandbox_factory)
    for _, t in ipairs { 0, -1, 2592001 } do
      local err = expect(function() return sandbox_factory({ timeout = t }) end):raises()
      expect(type(err)):eq("string")
      expect(err):contains("out of range")
    end
  end)
end)
