-- A session fixture whose teardown crashes the worker.
local e2e = require "e2e"

e2e.fixture("doomed", { scope = "session" }, function()
  return 1, function() e2e._crash_for_tests() end
end)
