-- DSL self-test (harness.py sc_dsl): eventually retries raised errors,
-- raises() by class and text, known_issue narrowed by raises, parametrize.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

-- A foreign error shaped like e2e's (class, __tostring), not one of ours.
local SE = { __tostring = function(e) return e.class .. ": " .. e.message end }
local function sbx_error(class, msg) return setmetatable({ class = class, message = msg }, SE) end

test("eventually retries a raised error", function()
  local n = 0
  local v = e2e.eventually(function()
    n = n + 1
    if n < 3 then error(sbx_error("NotFound", "no such file")) end
    return "there"
  end, { timeout = 5, interval = 0.01 })
  expect(v):eq("there")
  expect(n):eq(3)
end)

test("eventually retry_on lets other classes through", function()
  local n = 0
  local err = expect(function()
    e2e.eventually(function()
      n = n + 1
      error(sbx_error("Authentication", "bad key"))
    end, { timeout = 5, interval = 0.01, retry_on = { "NotFound" } })
  end):raises("Authentication")
  expect(n):eq(1)
  expect(err.message):eq("bad key")
end)

test("eventually names the last error", function()
  expect(function()
    e2e.eventually(function() error(sbx_error("NotFound", "still missing")) end,
      { timeout = 0.05, interval = 0.01, message = "waiting for the file" })
  end):raises(nil, "waiting for the file: condition not met within 0.05 s")
  expect(function()
    e2e.eventually(function() error(sbx_error("NotFound", "still missing")) end, { timeout = 0.05, interval = 0.01 })
  end):raises(nil, "last: NotFound: still missing")
  expect(function()
    e2e.eventually(function() error({ code = 7 }) end, { timeout = 0.05, interval = 0.01 })
  end):raises(nil, "last: { code = 7 }")
  expect(function() e2e.eventually(function() end, { timout = 1 }) end):raises("unknown option \"timout\"")
end)

test("raises by class, text and pattern", function()
  local e = expect(function() error(sbx_error("NotFound", "file a.txt does not exist")) end)
    :raises("NotFound", "a.txt does not")
  expect(e.class):eq("NotFound")
  expect(function() error("x.y failed") end):raises("x.y failed")
  expect(function() error("code 42") end):raises { pattern = "code %d+$" }
  expect(function()
    expect(function() error(sbx_error("Timeout", "slow")) end):raises("NotFound")
  end):raises(nil, "expected an error of class NotFound, got \"Timeout: slow\"")
  expect(function()
    expect(function() error("abc") end):raises("a.c")
  end):raises(nil, "to contain \"a.c\"")
end)

test("pinned failure", { known_issue = "KI-003: returns 500", raises = { class = "Sandbox", text = "500" } },
  function() error(sbx_error("Sandbox", "status 500")) end)

test("pinned but broken differently", { known_issue = "KI-003: returns 500", raises = "Sandbox" },
  function() local t = nil; return t.field end)

e2e.fixture("base", function() return 10 end)

e2e.parametrize("adds", { 1, 65536, "x y" }, function(v, base)
  expect(base):eq(10)
  if type(v) == "number" then expect(v + base):gt(10) else expect(v):eq("x y") end
end)

e2e.parametrize("tables", { { 1 }, { 2 } }, function(size) expect(#size):eq(1) end)

e2e.parametrize("dups", { "a", "a", "b" }, function(v) expect(v):ne("") end)

e2e.parametrize("named", { 8000, 49983 }, { ids = { "user-port", "envd" }, marks = { "e2e_slow" } },
  function(port) expect(port):gt(0) end)
