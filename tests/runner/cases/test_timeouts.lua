local e2e = require "e2e"
local test = e2e.test

e2e.fixture("guarded", function(log)
  return 1, function() log("timeout teardown ran") end
end)

test("busy loop", { timeout = 0.5 }, function() while true do end end)

test("inside pcall", { timeout = 0.5 }, function()
  while true do pcall(function() while true do end end) end
end)

test("inside coroutine", { timeout = 0.5 }, function()
  local co = coroutine.wrap(function() while true do end end)
  co()
end)

test("teardown runs after timeout", { timeout = 0.5 }, function(guarded) -- luacheck: ignore 212 (used for its effect)
  while true do end
end)

test("sleep hits deadline", { timeout = 0.3 }, function() e2e.sleep(10) end)

-- Time spent in C, where the hook cannot run, still counts: a call that
-- returns past its deadline is a Timeout, not a pass.
test("blocked in os.execute", { timeout = 0.3 }, function() os.execute("sleep 0.6") end)

test("blocked in a pipe", { timeout = 0.3 }, function() io.popen("sleep 0.6"):close() end)

test("after timeouts still fine", function() end)
