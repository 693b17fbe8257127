-- (c)/(d) with slow deletes: five sandboxes (one file-scoped, four in the
-- test's scope) held while the driver signals the runner.
local e2e = require "e2e"
local test = e2e.test

test("holds five sandboxes", function(base_sandbox, sandbox_factory)
  local ids = { base_sandbox.id }
  for _ = 1, 4 do ids[#ids + 1] = sandbox_factory {}.id end
  print("holding " .. table.concat(ids, " "))
  e2e.sleep(120)
end)
