-- Shared fixtures of the runner self-test suite (loaded into every file's
-- state before the file, and into each worker's session state).
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

-- One per worker: each worker is its own session (like pytest-xdist).
e2e.fixture("sess", { scope = "session" }, function()
  log("session setup")
  return { token = "session-value" }, function() log("session teardown") end
end)
