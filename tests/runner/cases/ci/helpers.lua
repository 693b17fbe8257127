-- A helper module of the CI-output cases: its failing expect must be
-- annotated at the line of the TEST FILE that called it
-- (tests/runner/ci_output.py checks the line numbers).
local e2e = require "e2e"

local M = {}

function M.check_status(status)
  e2e.expect(status, "status"):eq(200)
end

return M
