local e2e = require "e2e"
e2e.test("uses an unregistered marker", { marks = { "no_such_marker" } }, function() end)
