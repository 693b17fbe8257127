-- --dist self-test, second file (see test_dist_a.lua).
local e2e = require "e2e"
local test = e2e.test
local W = e2e.worker_id

e2e.fixture("bfile", { scope = "file" }, function(log)
  log(W .. " setup b.bfile")
  return 1, function() log(W .. " teardown b.bfile") end
end)

for i = 1, 8 do
  test("t" .. i, function(bfile, log) log(W .. " call b.t" .. i) end) -- luacheck: ignore 212 (used for its effect)
end

test("x2", { group = "shared" }, function(log) log(W .. " call b.x2") end)
