local e2e = require "e2e"
local test = e2e.test

test("before crash", function() end)
test("crashes", function() e2e._crash_for_tests() end)
test("after crash", function() end)
