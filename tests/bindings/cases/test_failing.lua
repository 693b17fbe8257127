-- Failures must not strand sandboxes: a failing test, an erroring test, a
-- Lua error in a fixture after it created a sandbox, a test-scoped
-- finalizer that fails. The driver (run.py) checks the outcomes, the ids
-- printed for failed tests, and that nothing is left on the platform.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local expect = e2e.expect

local function test(name, opts, fn)
  if fn == nil then opts, fn = {}, opts end
  opts.platform = true
  e2e.test(name, opts, fn)
end

test("failing test with a sandbox", function()
  local sbx = sandbox.create { metadata = { case = "failing" } }
  print("created " .. sbx.id)
  expect(1):eq(2)
end)

test("erroring test with a sandbox", function()
  sandbox.create { metadata = { case = "erroring" } }
  error("plain Lua error")
end)

e2e.fixture("broken_after_create", function()
  sandbox.create { metadata = { case = "broken-fixture" } }
  error("fixture broke after creating a sandbox")
end)

test("fixture error after create", function(broken_after_create)
  expect(broken_after_create):eq(nil)
end)

e2e.fixture("file_broken", { scope = "file" }, function()
  sandbox.create { metadata = { case = "file-fixture" } }
  error("file fixture broke")
end)

test("file fixture error after create", function(file_broken)
  expect(file_broken):eq(nil)
end)

test("failing finalizer does not stop the kill", function()
  sandbox.create { metadata = { case = "finalizer" } }
  e2e.defer(function() error("finalizer failed") end)
end)

test("passing test keeps nothing", function(sandbox_factory)
  sandbox_factory { metadata = { case = "passing" } }
end)

-- The test's deadline cuts a call blocked in C; it ends as the runner's
-- own timeout (failed), and the sandbox still dies with the test.
test("deadline cuts a blocked call", { timeout = 2 }, function(code_sandbox)
  code_sandbox:run_code("import time\ntime.sleep(30)")
end)

test("deadline cuts a blocked http call", { timeout = 2 }, function(code_sandbox)
  local r = code_sandbox:http(49999, { method = "POST", path = "/execute",
    body = '{"code": "import time\\ntime.sleep(30)"}',
    headers = { ["Content-Type"] = "application/json" }, timeout = 60 })
  error("not cut: " .. tostring(r.status))
end)
