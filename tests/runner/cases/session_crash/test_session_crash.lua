local e2e = require "e2e"

e2e.test("uses doomed", function(doomed) e2e.expect(doomed):eq(1) end)
