-- Fixtures of the --dist self-tests: a log shared by all workers (each
-- line names its worker) and a session fixture, once per worker.
local e2e = require "e2e"

local LOG = os.getenv("ABX_SELFTEST_LOG")

local function log(line)
  if LOG then
    local f = assert(io.open(LOG, "a"))
    f:write(line, "\n")
    f:close()
  end
end

e2e.fixture("log", { scope = "file" }, function() return log end)

e2e.fixture("sess", { scope = "session" }, function()
  log(e2e.worker_id .. " setup session")
  return true, function() log(e2e.worker_id .. " teardown session") end
end)
