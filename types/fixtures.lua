---@meta e2e.fixtures
-- LuaLS definitions (never run) of the built-in fixtures
-- (bindings/core/fixtures.lua; docs/lua-api.md "fixtures"). The host loads
-- `e2e.fixtures` into every state before conftest.lua, which, like a test
-- file, may redefine any of them. A test requests a fixture by naming it
-- as a parameter; give it its type for completion with a cast, e.g.
--   test("...", function(base_sandbox)
--     ---@cast base_sandbox e2e.Sandbox

--- The built-in fixtures, by parameter name (all need the platform: skipped without credentials).
---@class e2e.BuiltinFixtures
---@field base_sandbox e2e.Sandbox File scope: a sandbox of template "base".
---@field code_sandbox e2e.Sandbox File scope: a sandbox of template "code-interpreter-v1".
---@field server_sandbox e2e.Sandbox File scope: E2E_SERVER_TEMPLATE, its server answering on E2E_SERVER_PORT.
---@field sandbox_factory fun(opts?: e2e.sandbox.CreateOpts): e2e.Sandbox Test scope: sandbox.create, test-scoped.
---@field workdir string Test scope: a fresh directory /tmp/e2e/<run id>/<worker>-<n> in base_sandbox.

--- `require "e2e.fixtures"` registers them and returns true.
return true
