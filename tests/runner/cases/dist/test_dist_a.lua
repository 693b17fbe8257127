-- --dist self-test (harness.py sc_dist): file fixtures per worker and
-- file, their teardown order, and which worker runs what. Every line in
-- the log names the worker, so the harness reads each worker's story.
local e2e = require "e2e"
local test, describe = e2e.test, e2e.describe
local W = e2e.worker_id

e2e.fixture("base", { scope = "file" }, function(log)
  log(W .. " setup a.base")
  return "base", function() log(W .. " teardown a.base") end
end)

e2e.fixture("top", { scope = "file" }, function(base, log)
  log(W .. " setup a.top")
  return base .. "+top", function() log(W .. " teardown a.top") end
end)

for i = 1, 8 do
  test("t" .. i, function(top, sess, log) -- luacheck: ignore 212 (used for its effect)
    log(W .. " call a.t" .. i)
    e2e.expect(top):eq("base+top")
  end)
end

describe("grp", function()
  for i = 1, 4 do
    test("g" .. i, function(log) log(W .. " call a.grp.g" .. i) end)
  end
end)

test("x1", { group = "shared" }, function(log) log(W .. " call a.x1") end)
