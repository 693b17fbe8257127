-- Cases of tests/runner/ci_output.py (GitHub Actions annotations and job
-- summary). The script finds the lines it expects in annotations by the
-- "@ci:" markers at their ends.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect
local helpers = require "cases.ci.helpers"

local function same_file_helper(v)
  expect(v):eq("ok") -- @ci:same-file (the assertion, in this file)
end

test("helper in another file", function()
  helpers.check_status(500) -- @ci:other-file (where it surfaced here)
end)

test("helper in this file", function()
  same_file_helper("bad")
end)

e2e.fixture("broken", function()
  error("fixture broke") -- @ci:fixture
end)
test("fixture error", function(broken) expect(broken):eq(nil) end)

test("teardown error", function()
  e2e.defer(function() error("teardown broke") end) -- @ci:teardown
end)

-- A message with every byte GitHub escapes and a secret in it.
test("odd, name: 100%", function()
  local tok = e2e.secret(os.getenv("CI_CASE_SECRET") or "sk:live=9f8e,7d6c@5b4a%z")
  e2e.fail("bad value: a,b 100%\r\nsecond: line, with: " .. tok .. "\nthird`` ```fence") -- @ci:odd
end)

test("flaky", function()
  local f = io.open("flaky.count", "r")
  local n = f and tonumber(f:read("a")) or 0
  if f then f:close() end
  f = assert(io.open("flaky.count", "w"))
  f:write(tostring(n + 1))
  f:close()
  expect(n, "attempt"):ge(1) -- @ci:flaky
end)

test("skipped", { skip = "not today" }, function() end)

test("passes", function() expect(1):eq(1) end)

-- Markdown in a node id: a table cell must still hold it whole.
test("pipe | and `tick`", function() end)
