-- (sweep_faults) Holds one sandbox for a few seconds: the driver breaks
-- the platform's deletes meanwhile, so the end-of-run sweep has to retry.
local e2e = require "e2e"

e2e.test("holds one sandbox briefly", function(base_sandbox)
  print("holding " .. base_sandbox.id)
  e2e.sleep(4)
end)
