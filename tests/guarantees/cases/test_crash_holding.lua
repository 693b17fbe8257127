-- A worker that crashes (SIGSEGV, selftest hook) while it holds sandboxes:
-- the run's own cleanup (ledger + tag sweep) must still delete them.
local e2e = require "e2e"
local test = e2e.test

test("crashes holding sandboxes", function(base_sandbox, sandbox_factory)
  local s = sandbox_factory {}
  local f = assert(io.open(os.getenv("E2E_SIDE_DIR") .. "/ids", "w"))
  f:write(base_sandbox.id, "\n", s.id, "\n")
  f:close()
  e2e._crash_for_tests()
end)

test("after the crash", function(sandbox_factory)
  local s = sandbox_factory {}
  e2e.expect(s:is_running()):eq(true)
end)
