-- e2e errors and assertions: the typed error objects (failure vs error),
-- value rendering with diffs, expect(), eventually() and sleep(). Loaded by
-- lua_e2e.c before prelude.lua, which builds the rest of the DSL on it.
-- Assertion failures are errors of kind "failed" carrying "file:line: ",
-- so the runner reports them as FAILED; any other error is an ERROR.
local core = ...

local type, pairs, ipairs, tostring, select = type, pairs, ipairs, tostring, select
local error, pcall, setmetatable, getmetatable = error, pcall, setmetatable, getmetatable
local rawget, rawequal = rawget, rawequal
local sfmt, sfind, ssub, sgsub = string.format, string.find, string.sub, string.gsub
local tconcat, tsort = table.concat, table.sort
local getinfo = debug.getinfo
local mtype, floor = math.type, math.floor

local M = {}

---------------------------------------------------------------------------
-- Error objects: the runner tells failures from errors by `kind`.
---------------------------------------------------------------------------
local Err = { __name = "e2e.Error" }
Err.__index = Err
Err.__tostring = function(e) return e.message end
core.set_error_mt(Err)

local function mkerr(kind, msg) return setmetatable({ kind = kind, message = msg }, Err) end

-- file:line of the innermost frame that is not ours ("=[e2e...]") or C.
local function user_where(level)
  level = (level or 1) + 1
  while true do
    local info = getinfo(level, "Sl")
    if not info then return nil end
    if info.what ~= "C" and ssub(info.source, 1, 5) ~= "=[e2e" and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline
    end
    level = level + 1
  end
end

local function raise_failure(msg)
  local where = user_where(2)
  local e = mkerr("failed", where and (where .. ": " .. msg) or msg)
  e.where = where
  error(e, 0)
end

function M.fail(msg) raise_failure(msg == nil and "failed" or tostring(msg)) end

function M.skip(reason)
  local e = mkerr("skip", reason == nil and "skipped" or tostring(reason))
  e.where = user_where(2)
  error(e, 0)
end

function M.is_error(e, kind)
  return getmetatable(e) == Err and (kind == nil or e.kind == kind)
end

---------------------------------------------------------------------------
-- Value rendering and diffs for assertion messages.
---------------------------------------------------------------------------
local function qstr(s)
  s = sgsub(s, '[%c"\\]', function(c)
    if c == "\n" then return "\\n" elseif c == "\t" then return "\\t"
    elseif c == "\r" then return "\\r" elseif c == '"' then return '\\"'
    elseif c == "\\" then return "\\\\" end
    return sfmt("\\%03d", c:byte())
  end)
  return '"' .. s .. '"'
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  tsort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys
end

local function is_ident(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

-- repr(v, multiline): a Lua-ish literal, depth- and cycle-safe.
local function repr(v, multiline, indent, seen)
  local tv = type(v)
  if tv == "string" then return qstr(v) end
  if tv ~= "table" then
    if tv == "number" and mtype(v) == "float" and v == floor(v) and v < 2^53 and v > -2^53 then
      return sfmt("%.1f", v)
    end
    return tostring(v)
  end
  indent, seen = indent or "", seen or {}
  if seen[v] then return "<cycle>" end
  if #indent > 16 then return "{...}" end
  seen[v] = true
  local n, parts = #v, {}
  for i = 1, n do parts[#parts + 1] = repr(v[i], multiline, indent .. "  ", seen) end
  for _, k in ipairs(sorted_keys(v)) do
    if not (mtype(k) == "integer" and k >= 1 and k <= n) then
      local ks = is_ident(k) and k or ("[" .. repr(k, false, "", seen) .. "]")
      parts[#parts + 1] = ks .. " = " .. repr(v[k], multiline, indent .. "  ", seen)
    end
  end
  seen[v] = nil
  if #parts == 0 then return "{}" end
  if multiline then
    return "{\n" .. indent .. "  " .. tconcat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
  end
  return "{ " .. tconcat(parts, ", ") .. " }"
end
M.repr = function(v) return repr(v, false) end

local function deep_eq(a, b, seen)
  if rawequal(a, b) then return true end
  if type(a) ~= "table" or type(b) ~= "table" then
    if type(a) == "number" and type(b) == "number" then return a == b end
    return false
  end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  for k, va in pairs(a) do
    if not deep_eq(va, rawget(b, k), seen) then return false end
  end
  for k in pairs(b) do
    if rawget(a, k) == nil then return false end
  end
  return true
end
M.deep_eq = function(a, b) return deep_eq(a, b) end

-- Path to the first difference between two tables (for the message).
local function first_diff(a, b, path, depth)
  if deep_eq(a, b) then return nil end
  if type(a) ~= "table" or type(b) ~= "table" or depth > 16 then
    return path, a, b
  end
  for _, k in ipairs(sorted_keys(a)) do
    if not deep_eq(a[k], rawget(b, k)) then
      local seg = is_ident(k) and ("." .. k) or ("[" .. repr(k) .. "]")
      return first_diff(a[k], rawget(b, k), path .. seg, depth + 1)
    end
  end
  for _, k in ipairs(sorted_keys(b)) do
    if rawget(a, k) == nil then
      local seg = is_ident(k) and ("." .. k) or ("[" .. repr(k) .. "]")
      return path .. seg, nil, b[k]
    end
  end
  return path, a, b
end

local function split_lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end

-- Line diff by longest common subsequence; capped so a huge value can never
-- make an assertion message quadratic in time.
local MAX_DIFF_LINES = 400
local function line_diff(exp, act)
  local a, b = split_lines(exp), split_lines(act)
  if #a > MAX_DIFF_LINES or #b > MAX_DIFF_LINES then
    return "  (values too long for a line diff: " .. #a .. " vs " .. #b .. " lines)"
  end
  local n, m, L = #a, #b, {}
  for i = n + 1, 1, -1 do
    L[i] = {}
    for j = m + 1, 1, -1 do
      if i > n or j > m then L[i][j] = 0
      elseif a[i] == b[j] then L[i][j] = L[i + 1][j + 1] + 1
      else
        local x, y = L[i + 1][j], L[i][j + 1]
        L[i][j] = x > y and x or y
      end
    end
  end
  local out, i, j = {}, 1, 1
  while i <= n or j <= m do
    if i <= n and j <= m and a[i] == b[j] then
      out[#out + 1] = "    " .. a[i]; i, j = i + 1, j + 1
    elseif i <= n and (j > m or L[i + 1][j] >= L[i][j + 1]) then
      -- removals before additions, as unified diffs print them
      out[#out + 1] = "  - " .. a[i]; i = i + 1
    else
      out[#out + 1] = "  + " .. b[j]; j = j + 1
    end
  end
  return tconcat(out, "\n")
end

local function needs_diff(v)
  return (type(v) == "string" and (#v > 60 or sfind(v, "\n", 1, true))) or type(v) == "table"
end

local function eq_message(expected, actual, label)
  local lines = { (label and (label .. ": ") or "") .. "expected values to be equal",
    "  expected: " .. repr(expected), "  actual:   " .. repr(actual) }
  if type(expected) == "table" and type(actual) == "table" then
    local path, x, y = first_diff(expected, actual, "", 0)
    if path and path ~= "" then
      lines[#lines + 1] = "  first difference at " .. path .. ": expected " .. repr(x) .. ", got " .. repr(y)
    end
  end
  if needs_diff(expected) and needs_diff(actual) and type(expected) == type(actual) then
    local ea = type(expected) == "string" and expected or repr(expected, true)
    local aa = type(actual) == "string" and actual or repr(actual, true)
    lines[#lines + 1] = "  diff (- expected, + actual):"
    lines[#lines + 1] = line_diff(ea, aa)
  end
  return tconcat(lines, "\n")
end

---------------------------------------------------------------------------
-- expect(v[, label]): the assertion library.
---------------------------------------------------------------------------
local Expect = {}
Expect.__index = Expect
Expect.__name = "e2e.Expect"

function M.expect(v, label)
  return setmetatable({ v = v, label = label }, Expect)
end

local function pre(self) return self.label and (self.label .. ": ") or "" end

function Expect:eq(x)
  if not deep_eq(x, self.v) then raise_failure(eq_message(x, self.v, self.label)) end
  return self
end

function Expect:ne(x)
  if deep_eq(x, self.v) then
    raise_failure(pre(self) .. "expected a value different from " .. repr(x))
  end
  return self
end

function Expect:truthy()
  if not self.v then raise_failure(pre(self) .. "expected a truthy value, got " .. repr(self.v)) end
  return self
end

function Expect:falsy()
  if self.v then raise_failure(pre(self) .. "expected a falsy value, got " .. repr(self.v)) end
  return self
end

function Expect:is_nil()
  if self.v ~= nil then raise_failure(pre(self) .. "expected nil, got " .. repr(self.v)) end
  return self
end

function Expect:type(t)
  if type(self.v) ~= t then
    raise_failure(pre(self) .. "expected a value of type " .. t .. ", got " .. type(self.v) .. " " .. repr(self.v))
  end
  return self
end

function Expect:match(pattern)
  if type(self.v) ~= "string" then
    raise_failure(pre(self) .. "expected a string to match " .. qstr(pattern) .. ", got " .. repr(self.v))
  end
  if not sfind(self.v, pattern) then
    raise_failure(pre(self) .. "expected " .. repr(self.v) .. " to match pattern " .. qstr(pattern))
  end
  return self
end

function Expect:contains(x)
  local v = self.v
  if type(v) == "string" then
    if type(x) ~= "string" or not sfind(v, x, 1, true) then
      raise_failure(pre(self) .. "expected " .. repr(v) .. " to contain " .. repr(x))
    end
  elseif type(v) == "table" then
    for _, item in pairs(v) do
      if deep_eq(item, x) then return self end
    end
    raise_failure(pre(self) .. "expected table " .. repr(v) .. " to contain " .. repr(x))
  else
    raise_failure(pre(self) .. "contains needs a string or table, got " .. type(v) .. " " .. repr(v))
  end
  return self
end

local function cmp(self, x, op, word, ok)
  local v = self.v
  if type(v) ~= type(x) or (type(v) ~= "number" and type(v) ~= "string") then
    raise_failure(pre(self) .. "cannot compare " .. repr(v) .. " " .. op .. " " .. repr(x))
  end
  if not ok(v, x) then
    raise_failure(pre(self) .. "expected " .. repr(v) .. " " .. op .. " " .. repr(x) .. " (" .. word .. ")")
  end
  return self
end
function Expect:gt(x) return cmp(self, x, ">", "greater than", function(a, b) return a > b end) end
function Expect:ge(x) return cmp(self, x, ">=", "at least", function(a, b) return a >= b end) end
function Expect:lt(x) return cmp(self, x, "<", "less than", function(a, b) return a < b end) end
function Expect:le(x) return cmp(self, x, "<=", "at most", function(a, b) return a <= b end) end

function Expect:near(x, tol)
  tol = tol or 1e-9
  if type(self.v) ~= "number" or math.abs(self.v - x) > tol then
    raise_failure(pre(self) .. "expected " .. repr(self.v) .. " to be within " .. tol .. " of " .. repr(x))
  end
  return self
end

function Expect:len(n)
  local v = self.v
  if type(v) ~= "string" and type(v) ~= "table" then
    raise_failure(pre(self) .. "len needs a string or table, got " .. type(v))
  end
  if #v ~= n then
    raise_failure(pre(self) .. "expected length " .. n .. ", got " .. #v .. " for " .. repr(v))
  end
  return self
end

-- expect(fn):raises([pattern]) returns the error message for further checks.
-- Timeouts and interrupts are never "expected": they propagate.
function Expect:raises(pattern)
  if type(self.v) ~= "function" then
    raise_failure(pre(self) .. "raises needs a function, got " .. type(self.v))
  end
  local ok, err = pcall(self.v)
  if ok then raise_failure(pre(self) .. "expected the function to raise an error, it returned normally") end
  if M.is_error(err) and (err.kind == "timeout" or err.kind == "interrupt") then error(err, 0) end
  local msg = M.is_error(err) and err.message or (type(err) == "string" and err or repr(err))
  if pattern and not sfind(msg, pattern) then
    raise_failure(pre(self) .. "expected the error to match " .. qstr(pattern) .. ", got " .. qstr(msg))
  end
  return M.expect(msg, self.label)
end

---------------------------------------------------------------------------
-- eventually(fn, {timeout=, interval=, message=})
---------------------------------------------------------------------------
function M.eventually(fn, opts)
  opts = opts or {}
  local timeout, interval = opts.timeout or 10, opts.interval or 0.5
  if type(fn) ~= "function" then error("eventually: fn must be a function", 2) end
  if type(timeout) ~= "number" or timeout < 0 or type(interval) ~= "number" or interval <= 0 then
    error("eventually: timeout must be >= 0 and interval > 0", 2)
  end
  local deadline, attempts, last = core.clock() + timeout, 0, "condition returned a falsy value"
  while true do
    attempts = attempts + 1
    local res = table.pack(pcall(fn))
    if res[1] and res[2] then return select(2, table.unpack(res, 1, res.n)) end
    if not res[1] then
      local e = res[2]
      if not M.is_error(e, "failed") then error(e, 0) end
      last = e.message
    end
    if core.clock() >= deadline then
      raise_failure((opts.message and (opts.message .. ": ") or "") ..
        sfmt("condition not met within %g s (%d attempts); last: %s", timeout, attempts, last))
    end
    core.sleep(interval)
  end
end

-- e2e.sleep(s): sleeps, but never past the test's deadline and not through
-- an interrupt (the hook then raises at the next instruction).
function M.sleep(s)
  if type(s) ~= "number" or s < 0 then error("sleep: expected seconds >= 0", 2) end
  core.sleep(s)
end

-- Internals shared with prelude.lua (not part of the public module).
local internal = { Err = Err, mkerr = mkerr, user_where = user_where, repr = repr,
  qstr = qstr, sorted_keys = sorted_keys }
return M, internal
