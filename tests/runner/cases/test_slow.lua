local e2e = require "e2e"
local test = e2e.test

e2e.fixture("held", function(log)
  return 1, function() log("interrupted teardown ran") end
end)

test("quick", function() end)

test("long", function(held, sess, log) -- luacheck: ignore 212 (used for its effect)
  log("long started")
  e2e.sleep(60)
end)

test("never reached", function() end)
