-- Fixture graph errors are clear ERRORs at setup; misuse at run time too.
local e2e = require "e2e"
local test = e2e.test

e2e.fixture("shared", function() return "overridden" end)  -- overrides conftest
test("override_conftest", function(shared) e2e.expect(shared):eq("overridden") end)

e2e.fixture("cyc_a", function(cyc_b) return 1 end) -- luacheck: ignore 212 (used for its effect)
e2e.fixture("cyc_b", function(cyc_a) return 2 end) -- luacheck: ignore 212 (used for its effect)
test("cycle", function(cyc_a) end) -- luacheck: ignore 212 (used for its effect)

e2e.fixture("narrow", function() return 1 end)
e2e.fixture("wide", { scope = "file" }, function(narrow) return narrow end)
test("scope_mismatch", function(wide) end) -- luacheck: ignore 212 (used for its effect)

e2e.fixture("bad_teardown", function() return 1, 42 end)
test("non_function_teardown", function(bad_teardown) end) -- luacheck: ignore 212 (used for its effect)

test("unknown_fixture", function(no_such_fixture) end) -- luacheck: ignore 212 (used for its effect)
test("fixture_at_run_time", function() e2e.fixture("late_def", function() end) end)
test("describe_at_run_time", function() e2e.describe("g", function() end) end)
test("test_at_run_time", function() test("inner", function() end) end)
test("uses_later_fixture", function(defined_later) e2e.expect(defined_later):eq(5) end)
e2e.fixture("defined_later", function() return 5 end)
