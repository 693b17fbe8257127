-- Shared fixture that a test file may override (pytest's conftest rule).
local e2e = require "e2e"
e2e.fixture("shared", function() return "from conftest" end)
