local e2e = require "e2e"

-- Its teardown ignores the first interrupt (teardown is not interruptible);
-- a second signal must end the run at once.
e2e.fixture("stubborn", function(log)
  return 1, function()
    log("stubborn teardown started")
    e2e.sleep(60)
  end
end)

e2e.test("waits", function(stubborn, log) -- luacheck: ignore 212 (used for its effect)
  log("waits started")
  e2e.sleep(60)
end)
