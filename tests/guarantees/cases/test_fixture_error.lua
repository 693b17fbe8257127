-- (b) Lua errors after a sandbox was obtained: in a user fixture (through
-- the factory and through sandbox.create), in a file-scoped fixture, and
-- in the test body itself. None may leave a sandbox behind.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local test = e2e.test

e2e.fixture("env_from_factory", function(sandbox_factory)
  local s = sandbox_factory {}
  print("created " .. s.id)
  error("fixture blew up after creating " .. s.id)
end)

e2e.fixture("env_from_create", function()
  local s = sandbox.create {}
  print("created " .. s.id)
  local t = nil
  return t.missing  -- a runtime error, not error()
end)

e2e.fixture("file_env", { scope = "file" }, function()
  local s = sandbox.create {}
  print("created " .. s.id)
  error({ "a table error value", s.id })
end)

test("user fixture errors after factory", function(env_from_factory) end) -- luacheck: ignore 212 (used for its effect)

test("user fixture errors after create", function(env_from_create) end) -- luacheck: ignore 212 (used for its effect)

test("file fixture errors", function(file_env) end) -- luacheck: ignore 212 (used for its effect)

test("body errors holding sandboxes", function(base_sandbox, sandbox_factory)
  local s = sandbox_factory {}
  print("created " .. base_sandbox.id .. " " .. s.id)
  local n = nil
  print(n + 1)
end)
