-- Skips the platform's declaration explains, and those it does not
-- (harness.py sc_skips: green means ran).
local e2e = require "e2e"
local test = e2e.test

test("declared skip", { skip = "declared here" }, function() error("must not run") end)

test("requires skips", { requires = { "pause" } }, function() error("must not run") end)

test("requires at run time", function()
  e2e.requires("pause")
  error("must not run")
end)

test("envd below the gate", function()
  e2e.requires_envd("0.5.2", "0.6.2", "file metadata")
  error("must not run")
end)

test("unexplained skip", function() e2e.skip("decided at runtime") end)

e2e.fixture("gone", { scope = "file" }, function() e2e.skip("a fixture's own skip") end)

test("a fixture's skip", function(gone) end) -- luacheck: ignore 212 (used for its effect)
