-- Helpers shared by the binding cases: catching an expected error and
-- checking that it is a SandboxError value of a given class.
local e2e = require "e2e"
local expect = e2e.expect
local M = {}

-- Calls fn(...) and returns the error it raised; fails if it returned.
function M.catch(fn, ...)
  local ok, e = pcall(fn, ...)
  if ok then e2e.fail("expected an error, the call returned normally") end
  return e
end

-- A SandboxError value of the given class (table, class, __tostring).
function M.expect_class(e, class)
  expect(type(e), "error type"):eq("table")
  expect(e.class, "error class"):eq(class)
  expect(tostring(e), "tostring"):eq(class .. ": " .. e.message)
  return e
end

return M
