-- Small helpers shared by the suite's test files (require "suite").
-- Only what several files need; a file's own helpers stay in that file.
local e2e = require "e2e"
local expect = e2e.expect

local M = {}

-- Calls fn(...) and returns the error value it raised; the test fails
-- when the call returns normally instead.
function M.catch(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then e2e.fail("expected an error, the call returned normally") end
  return err
end

-- Calls fn(...), which must raise a SandboxError of `class`; returns it.
function M.raises(class, fn, ...)
  local err = M.catch(fn, ...)
  expect(type(err), "error value type (" .. tostring(err) .. ")"):eq("table")
  expect(err.class, "error class of: " .. tostring(err)):eq(class)
  return err
end

-- A shell word for any string (single quotes, embedded ones escaped).
function M.sh_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- A value unique to this run and call: for metadata filters and names.
local serial = 0
function M.unique(prefix)
  serial = serial + 1
  return string.format("%s-%s-%s-%d", prefix or "u", e2e.run_id,
    e2e.worker_id, serial)
end

return M
