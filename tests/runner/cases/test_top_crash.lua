-- Crashes while being collected (top-level code), not while running.
local e2e = require "e2e"
e2e._crash_for_tests()
