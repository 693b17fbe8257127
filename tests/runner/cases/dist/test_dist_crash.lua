-- --dist self-test: a worker crashes in the middle of a file. Only the
-- test it was running fails; the rest of its batch runs elsewhere, once.
local e2e = require "e2e"
local test = e2e.test
local W = e2e.worker_id

e2e.fixture("cf", { scope = "file" }, function(log)
  log(W .. " setup crash.cf")
  return 1, function() log(W .. " teardown crash.cf") end
end)

for i = 1, 10 do
  test("c" .. i, function(cf, log) -- luacheck: ignore 212 (used for its effect)
    log(W .. " call crash.c" .. i)
    if i == 3 then e2e._crash_for_tests() end
  end)
end
