-- The built-in fixtures and sandbox scopes: file-scope sandboxes live
-- across the file's tests, a factory's die with the test, workdir is fresh.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local test, expect = e2e.test, e2e.expect

local first_base, first_workdir, factory_sbx

test("base_sandbox is a tagged base sandbox", function(base_sandbox)
  first_base = base_sandbox
  expect(base_sandbox.template_id):eq("base")
  expect(base_sandbox:info().metadata.e2e):eq(e2e.run_id)
  expect(base_sandbox:is_running()):eq(true)
end)

test("base_sandbox is shared by the file", function(base_sandbox)
  expect(base_sandbox.id):eq(first_base.id)
end)

test("sandbox_factory creates test-scoped sandboxes", function(sandbox_factory)
  factory_sbx = sandbox_factory { timeout = 120, metadata = { via = "factory" } }
  local other = sandbox_factory {}
  expect(factory_sbx.id ~= other.id):eq(true)
  expect(factory_sbx:info().metadata.via):eq("factory")
  expect(factory_sbx:is_running()):eq(true)
end)

test("the factory's sandboxes died with their test", { platform = true }, function()
  expect(factory_sbx:is_running()):eq(false)
end)

test("workdir is a fresh directory in base_sandbox", function(workdir, base_sandbox)
  first_workdir = workdir
  expect(workdir:find("/tmp/e2e/" .. e2e.run_id .. "/", 1, true)):eq(1)
  expect(base_sandbox.files:exists(workdir)):eq(true)
end)

test("workdir differs per test", function(workdir)
  expect(workdir ~= first_workdir):eq(true)
end)

test("server_sandbox answers on its port", function(server_sandbox)
  local r = server_sandbox:http(sandbox.server_port, { path = "/health" })
  expect(r.status):eq(200)
end)

-- A fixture that defers work using its sandbox: the defer runs before
-- the scope's sandboxes are killed (LIFO), so the sandbox is still there.
e2e.fixture("with_defer", { needs_platform = true }, function()
  local sbx = sandbox.create {}
  e2e.defer(function()
    if not sbx:is_running() then error("sandbox already gone in a later finalizer") end
  end)
  return sbx
end)

test("finalizers run before the scope's sandboxes die", function(with_defer)
  expect(with_defer:is_running()):eq(true)
end)

-- conftest-style override of a built-in fixture in a test file.
e2e.fixture("code_sandbox", { scope = "file", needs_platform = true }, function()
  return "overridden"
end)

test("a test file may override a built-in fixture", function(code_sandbox)
  expect(code_sandbox):eq("overridden")
end)
