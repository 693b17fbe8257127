-- (a) A failing test that used base_sandbox and sandbox_factory: every
-- sandbox it touched must be gone when the run ends.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

test("fails holding two sandboxes", function(base_sandbox, sandbox_factory)
  local extra = sandbox_factory {}
  print("created " .. base_sandbox.id .. " " .. extra.id)
  expect(extra:is_running()):eq(true)
  expect("actual"):eq("expected")
end)

test("passes with the file's sandbox", function(base_sandbox)
  expect(base_sandbox:is_running()):eq(true)
end)
