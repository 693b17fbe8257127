local e2e = require "e2e"
e2e.test("unbalanced", function()
  local x = (1 + 
end)
