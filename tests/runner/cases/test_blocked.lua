local e2e = require "e2e"

-- Blocked in a C call (a child process): the timeout hook cannot fire, so
-- the parent's watchdog must end it.
e2e.test("blocked in C", { timeout = 0.5 }, function() os.execute("sleep 6") end)
