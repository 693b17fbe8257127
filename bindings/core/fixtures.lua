-- Built-in fixtures (docs/lua-api.md "fixtures"), loaded by the host into
-- every Lua state before conftest.lua, which (like a test file) may
-- override any of them. All need the platform: without credentials the
-- tests that request them are skipped. Each sandbox is created through
-- sandbox.create, so it is tagged, in the ledger, and killed with the
-- scope of the fixture (file) or of the test (sandbox_factory).
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"

local sfmt = string.format

e2e._builtin(true)

e2e.fixture("base_sandbox", { scope = "file", needs_platform = true }, function()
  return sandbox.create { template = "base" }
end)

e2e.fixture("code_sandbox", { scope = "file", needs_platform = true }, function()
  return sandbox.create { template = "code-interpreter-v1" }
end)

-- Any HTTP answer from the server itself counts; 502/503/504 come from the
-- data-plane proxy while the port is not open yet.
local function server_answers(sbx, port)
  local ok, r = pcall(sbx.http, sbx, port, { path = "/", timeout = 5 })
  return ok and r.status ~= 502 and r.status ~= 503 and r.status ~= 504
end

-- The server template is built by hand on a cloud (README): where it does
-- not exist, every test of the file fails naming it and the fix (the
-- fixture's failure is kept for its scope, so it is one create). Not a
-- skip: a wrong name would otherwise give a green run.
e2e.fixture("server_sandbox", { scope = "file", needs_platform = true }, function()
  local tmpl = sandbox.server_template
  local ok, sbx = pcall(sandbox.create, { template = tmpl })
  if not ok then
    if type(sbx) == "table" and sbx.class == "NotFound" and sbx.status == 404 then
      e2e.fail(sfmt("template %s not found on the platform (E2E_SERVER_TEMPLATE): build and "
        .. "deploy it (docs/fc-server-template.md) or name one that exists", tmpl))
    end
    error(sbx, 0)
  end
  local port = sandbox.server_port
  e2e.eventually(function() return server_answers(sbx, port) end, {
    timeout = 60, interval = 0.5,
    message = sfmt("server in %s (template %s) did not answer on port %d",
      sbx.id, sandbox.server_template, port),
  })
  return sbx
end)

-- factory{...} takes sandbox.create's options; each sandbox belongs to
-- the requesting test and dies when it ends.
e2e.fixture("sandbox_factory", { needs_platform = true }, function()
  return function(opts) return sandbox.create(opts) end
end)

-- A fresh directory per test under one per-run directory of the file's
-- base sandbox; worker and counter keep parallel workers apart.
local workdirs = 0
e2e.fixture("workdir", { needs_platform = true }, function(base_sandbox)
  workdirs = workdirs + 1
  local path = sfmt("/tmp/e2e/%s/%s-%d", e2e.run_id, e2e.worker_id, workdirs)
  base_sandbox.files:make_dir(path)
  return path
end)

e2e._builtin(false)

return true
