local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

e2e.fixture("a", function(log)
  log("setup a")
  return "A", function() log("teardown a") end
end)

e2e.fixture("b", function(a, log)
  log("setup b")
  return a .. "B", function() log("teardown b") end
end)

e2e.fixture("fileres", { scope = "file" }, function(log)
  log("setup fileres")
  return 42, function() log("teardown fileres") end
end)

e2e.fixture("broken", function(a, log) -- luacheck: ignore 212 (used for its effect)
  e2e.defer(function() log("deferred of broken") end)
  error("broken fixture setup")
end)

e2e.fixture("bad_teardown", function(log)
  return 1, function()
    log("bad teardown runs")
    error("teardown exploded")
  end
end)

test("order under failure", function(b, fileres, log)
  log("call order")
  expect(b):eq("AB")
  expect(fileres):eq(42)
  e2e.fail("deliberate failure")
end)

test("setup failure still tears down", function(broken) end) -- luacheck: ignore 212 (used for its effect)

test("teardown error reported separately", function(bad_teardown) end) -- luacheck: ignore 212 (used for its effect)

test("session fixture shared", function(sess, log)
  log("sess " .. sess.token)
  expect(sess.token):eq("session-value")
end)

test("missing fixture is an error", function(no_such_fixture) end) -- luacheck: ignore 212 (used for its effect)

e2e.fixture("platform_thing", { needs_platform = true }, function() return "p" end)
e2e.fixture("uses_platform", function(platform_thing) return platform_thing end)

test("platform fixture skips without credentials", function(uses_platform)
  expect(uses_platform):eq("p")
end)

-- A fixture implemented in C (registered only when ABX_E2E_SELFTEST=1):
-- the seam base_sandbox & co. will use. Session scope: one per worker.
test("c fixture seam", function(c_session_probe)
  expect(c_session_probe.serial):eq(1)
end)

test("last", function(fileres) expect(fileres):eq(42) end)
