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

-- Days since 1970-01-01 of a proleptic Gregorian date (no os.time: it
-- reads the local time zone).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

-- RFC 3339 -> seconds since the epoch (UTC), fractions kept.
function M.rfc3339(s)
  e2e.expect(s, "RFC 3339 time"):type("string")
  local y, mo, d, h, mi, sec, rest =
    s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)[Tt](%d%d):(%d%d):(%d%d)(.*)$")
  if not y then e2e.fail("not an RFC 3339 time: " .. s) end
  local frac, zone = rest:match("^(%.?%d*)(.*)$")
  local t = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 86400
    + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
  if #frac > 1 then t = t + tonumber("0" .. frac) end
  if zone ~= "Z" and zone ~= "z" then
    local sign, zh, zm = zone:match("^([+-])(%d%d):(%d%d)$")
    if not sign then e2e.fail("RFC 3339 time without a zone: " .. s) end
    local off = tonumber(zh) * 3600 + tonumber(zm) * 60
    t = sign == "+" and t - off or t + off
  end
  return t
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
