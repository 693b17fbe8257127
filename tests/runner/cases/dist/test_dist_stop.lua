-- --dist self-test for -x with workers: the first test fails at once;
-- every other test waits for that failure, then holds its worker 2 s, so
-- a worker that honours the stop runs at most the one it already began.
local e2e = require "e2e"
local test = e2e.test
local W = e2e.worker_id
local FLAG = assert(os.getenv("ABX_SELFTEST_LOG")) .. ".failed"

test("fails first", function(log)
  log(W .. " call stop.fails")
  assert(io.open(FLAG, "w")):close()
  e2e.fail("deliberate")
end)

for i = 1, 12 do
  test("s" .. i, function(log)
    log(W .. " call stop.s" .. i)
    e2e.eventually(function()
      local f = io.open(FLAG)
      if f then f:close() end
      return f ~= nil
    end, { timeout = 30, interval = 0.01 })
    e2e.sleep(2)
  end)
end
