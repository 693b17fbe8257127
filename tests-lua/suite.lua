-- Small helpers shared by the suite's test files (require "suite").
-- Only what several files need; a file's own helpers stay in that file.
local e2e = require "e2e"

local M = {}

-- A shell word for any string (single quotes, embedded ones escaped).
function M.sh_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Calls fn(...), which creates a sandbox of the server template; when the
-- platform answers NotFound (404) it does not exist there: a set-up
-- mistake the test fails on, naming the fix (never a skip: green means
-- the tests ran).
function M.with_template(template, fn, ...)
  local res = table.pack(pcall(fn, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  local err = res[2]
  if type(err) == "table" and err.class == "NotFound" and err.status == 404 then
    e2e.fail(string.format("template %s not found on the platform (E2E_SERVER_TEMPLATE): "
      .. "build and deploy it (docs/fc-server-template.md) or name one that exists", template))
  end
  error(err, 0)
end

-- A NotFound as the platform gave it: status 404 and, when the error body
-- carries an integer code, 404 there too (E2B's JS SDK tells "not found"
-- by that code, not by the status). The message's id is the client's.
function M.expect_not_found(err)
  e2e.expect(err.status, "the platform's status"):eq(404)
  e2e.expect(err.body_code == nil or err.body_code == 404,
    "the error body's code agrees with its 404 (code " .. tostring(err.body_code) .. ")"):eq(true)
end

-- s with the first occurrence of the literal text `old` replaced by `new`
-- (string.gsub would read `old` as a pattern: '-' and '.' in a sandbox id
-- are pattern characters). Fails the test when `old` is absent.
function M.replace_plain(s, old, new)
  local i, j = string.find(s, old, 1, true)
  if not i then e2e.fail(string.format("%q not found in %q", old, s)) end
  return s:sub(1, i - 1) .. new .. s:sub(j + 1)
end

-- A value unique to this run and call: for metadata filters and names.
local serial = 0
function M.unique(prefix)
  serial = serial + 1
  return string.format("%s-%s-%s-%d", prefix or "u", e2e.run_id,
    e2e.worker_id, serial)
end

return M
