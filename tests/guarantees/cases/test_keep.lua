-- (i) --keep-failed: the failed test's sandbox stays alive (and its id is
-- printed); the passing test's sandbox dies as usual.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

local function side(name, data)
  local f = assert(io.open(os.getenv("E2E_SIDE_DIR") .. "/" .. name, "w"))
  f:write(data)
  f:close()
end

test("fails and keeps its sandbox", function(sandbox_factory)
  local s = sandbox_factory {}
  side("failed_id", s.id)
  expect("kept"):eq("deleted")
end)

test("passes and loses its sandbox", function(sandbox_factory)
  local s = sandbox_factory {}
  side("passed_id", s.id)
  expect(s:is_running()):eq(true)
end)
