-- Error values of every type, NUL bytes and invalid UTF-8 in messages and
-- output, and a huge message: each is a clear, bounded ERROR/FAILED and
-- the reports stay valid.
local e2e = require "e2e"
local test = e2e.test

test("nil_error", function() error(nil) end)
test("table_error", function() error({}) end)
test("number_error", function() error(42) end)
test("tostring_fails", function()
  error(setmetatable({}, { __tostring = function() error("boom in tostring") end }))
end)
test("tostring_not_string", function()
  error(setmetatable({}, { __tostring = function() return {} end }))
end)
test("tostring_ok", function()
  error(setmetatable({}, { __tostring = function() return "custom text" end }))
end)
test("nul_in_message", function() error("before\0after", 0) end)
test("nul_in_failure", function() e2e.fail("left\0right") end)
test("bad_utf8_output", function()
  print("out\xff\xfe\0tail")
  error("bad \xff\xc3 utf8", 0)
end)
test("huge_message", function() error(string.rep("x", 8 * 1024 * 1024), 0) end)
test("huge_multiline", function() error(string.rep("y\n", 4 * 1024 * 1024), 0) end)
-- Plain tables that look like the runner's own typed errors are not
-- obeyed: a fake interrupt must not stop the run, a fake skip not skip.
test("fake_interrupt", function() error({ class = "Interrupted", message = "fake" }) end)
test("fake_skip", function()
  error(setmetatable({ class = "Skipped", message = "fake skip" }, { __name = "e2e.Error" }))
end)
test("passes", function() end)
