-- e2e errors and assertions: the typed error objects (failure vs error),
-- value rendering with diffs, expect(), eventually() and sleep(). Loaded by
-- lua_e2e.c before prelude.lua, which builds the rest of the DSL on it.
-- Every error value has one shape (bindings/core/e2e_error.h): {class =,
-- message =, ...} with the metatable e2e.Error. Assertion failures are
-- class "Failed" carrying "file:line: ", so the runner reports them as
-- FAILED; any other error is an ERROR.
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
-- Error objects: the runner tells failures from errors by `class`.
---------------------------------------------------------------------------
local Err = core.error_mt()

local function mkerr(class, msg) return setmetatable({ class = class, message = msg }, Err) end

-- The runner's stops (e2e_error.h): never caught by raises or retried.
local STOPS = { Skipped = true, TestTimeout = true, Interrupted = true, Exit = true }

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
  local e = mkerr("Failed", where and (where .. ": " .. msg) or msg)
  e.where = where
  error(e, 0)
end

function M.fail(msg) raise_failure(msg == nil and "failed" or tostring(msg)) end

function M.skip(reason)
  local e = mkerr("Skipped", reason == nil and "skipped" or tostring(reason))
  e.where = user_where(2)
  error(e, 0)
end

-- A skip the declared capabilities explain (e2e.requires): the one kind a
-- test may give itself without failing the run (prelude.lua, _run).
function M._skip_declared(reason)
  local e = mkerr("Skipped", tostring(reason))
  e.where = user_where(3)
  e.declared = true
  error(e, 0)
end

function M.is_error(e, class)
  return getmetatable(e) == Err and type(rawget(e, "class")) == "string"
    and (class == nil or e.class == class)
end

---------------------------------------------------------------------------
-- Value rendering and diffs for assertion messages. Tables are walked raw
-- (next/rawget/rawlen): a user's __index/__pairs/__len/__tostring cannot
-- fail or fool an assertion message, and every rendering is bounded so a
-- huge or cyclic value costs neither unbounded time nor memory.
---------------------------------------------------------------------------
local next, rawlen = next, rawlen
local STR_MAX = 2000        -- characters of one string shown
local ITEMS_MAX = 100       -- entries of one table shown
local TEXT_MAX = 64 * 1024  -- one rendering, in total

local function qstr(s)
  local more = ""
  if #s > STR_MAX then
    more = sfmt("...(%d more bytes)", #s - STR_MAX)
    s = ssub(s, 1, STR_MAX)
  end
  s = sgsub(s, '[%c"\\]', function(c)
    if c == "\n" then return "\\n" elseif c == "\t" then return "\\t"
    elseif c == "\r" then return "\\r" elseif c == '"' then return '\\"'
    elseif c == "\\" then return "\\\\" end
    return sfmt("\\%03d", c:byte())
  end)
  return '"' .. s .. '"' .. more
end

-- tostring that a failing or non-string __tostring cannot break.
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  return sfmt("%s: %p", type(v), v)
end

local function sorted_keys(t)
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  local ids = {}
  for _, k in ipairs(keys) do
    local tk = type(k)
    if tk ~= "number" and tk ~= "string" then ids[k] = safe_tostring(k) end
  end
  tsort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" then
      if a ~= a then return false end        -- NaN keys cannot exist; defensive
      return a < b
    end
    if ta == "string" then return a < b end
    return ids[a] < ids[b]
  end)
  return keys
end

local function is_ident(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

-- repr(v, multiline): a Lua-ish literal, depth-, cycle- and size-safe.
local function repr(v, multiline, indent, seen, budget)
  local tv = type(v)
  if tv == "string" then return qstr(v) end
  if tv ~= "table" then
    if tv == "number" and mtype(v) == "float" and v == floor(v) and v < 2^53 and v > -2^53 then
      if v == 0 and 1 / v < 0 then return "-0.0" end
      return sfmt("%.1f", v)
    end
    return safe_tostring(v)
  end
  indent, seen = indent or "", seen or {}
  budget = budget or { left = TEXT_MAX }
  if seen[v] then return "<cycle>" end
  if #indent > 16 then return "{...}" end
  if budget.left <= 0 then return "{...}" end
  seen[v] = true
  local n, parts = rawlen(v), {}
  local shown, total = 0, 0
  local function add(s)
    total = total + 1
    if shown >= ITEMS_MAX or budget.left <= 0 then return end
    shown = shown + 1
    budget.left = budget.left - #s
    parts[#parts + 1] = s
  end
  for i = 1, n do
    if shown >= ITEMS_MAX or budget.left <= 0 then total = total + (n - i + 1); break end
    add(repr(rawget(v, i), multiline, indent .. "  ", seen, budget))
  end
  local nkeys = 0
  for _ in next, v do nkeys = nkeys + 1 end
  -- A plain sequence needs no key sort (a big list stays cheap to show).
  for _, k in ipairs(nkeys > n and sorted_keys(v) or {}) do
    if not (mtype(k) == "integer" and k >= 1 and k <= n) then
      if shown >= ITEMS_MAX or budget.left <= 0 then
        total = total + 1
      else
        local ks = is_ident(k) and k or ("[" .. repr(k, false, "", seen, budget) .. "]")
        add(ks .. " = " .. repr(rawget(v, k), multiline, indent .. "  ", seen, budget))
      end
    end
  end
  seen[v] = nil
  if total > shown then parts[#parts + 1] = sfmt("...(%d more)", total - shown) end
  if #parts == 0 then return "{}" end
  if multiline then
    return "{\n" .. indent .. "  " .. tconcat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
  end
  return "{ " .. tconcat(parts, ", ") .. " }"
end
M.repr = function(v) return repr(v, false) end

-- A table with an __eq metamethod compares with == (as Lua and Python do).
local function has_eq(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__eq") ~= nil
end

-- Structural equality, iterative (no recursion limit on deep values) and
-- cycle-safe: each (a, b) pair is compared once.
local function deep_eq(a, b)
  local work, n, seen = { a, b }, 2, {}
  while n > 0 do
    local x, y = work[n - 1], work[n]
    work[n - 1], work[n] = nil, nil
    n = n - 2
    if not rawequal(x, y) then
      if type(x) ~= "table" or type(y) ~= "table" then
        if not (type(x) == "number" and type(y) == "number" and x == y) then return false end
      elseif has_eq(x) or has_eq(y) then
        if x ~= y then return false end   -- ~= is exactly not (==), __eq included
      else
        local partners = seen[x]
        if not partners then partners = {}; seen[x] = partners end
        if not partners[y] then
          partners[y] = true
          for k, vx in next, x do
            local vy = rawget(y, k)
            if vy == nil then return false end
            work[n + 1], work[n + 2] = vx, vy
            n = n + 2
          end
          for k in next, y do
            if rawget(x, k) == nil then return false end
          end
        end
      end
    end
  end
  return true
end
M.deep_eq = deep_eq

-- Path to the first difference between two tables (for the message).
local function first_diff(a, b, path, depth)
  if type(a) ~= "table" or type(b) ~= "table" or depth > 16 or has_eq(a) or has_eq(b) then
    return path, a, b
  end
  for _, k in ipairs(sorted_keys(a)) do
    if not deep_eq(rawget(a, k), rawget(b, k)) then
      local seg = is_ident(k) and ("." .. k) or ("[" .. repr(k) .. "]")
      return first_diff(rawget(a, k), rawget(b, k), path .. seg, depth + 1)
    end
  end
  for _, k in ipairs(sorted_keys(b)) do
    if rawget(a, k) == nil then
      local seg = is_ident(k) and ("." .. k) or ("[" .. repr(k) .. "]")
      return path .. seg, nil, rawget(b, k)
    end
  end
  return path, a, b
end

-- Byte offset of the first difference of two strings, with a little
-- context from each (long strings: the message shows where, not all).
local function string_diff(x, y)
  local i, step = 1, 4096
  while ssub(x, i, i + step - 1) == ssub(y, i, i + step - 1) do i = i + step end
  while ssub(x, i, i) == ssub(y, i, i) do i = i + 1 end
  local from = i > 40 and i - 40 or 1
  return i, ssub(x, from, i + 40), ssub(y, from, i + 40)
end

local function split_lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end

-- Line diff by longest common subsequence; capped so a huge value can never
-- make an assertion message quadratic in time.
local MAX_DIFF_LINES = 400
local MAX_DIFF_BYTES = 64 * 1024
local function line_diff(exp, act)
  if #exp > MAX_DIFF_BYTES or #act > MAX_DIFF_BYTES then
    return "  (values too long for a line diff: " .. #exp .. " vs " .. #act .. " bytes)"
  end
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
  if type(expected) == "string" and type(actual) == "string" and (#expected > STR_MAX or #actual > STR_MAX) then
    local at, x, y = string_diff(expected, actual)
    lines[#lines + 1] = sfmt("  first difference at byte %d: expected %s, got %s", at, qstr(x), qstr(y))
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
    for _, item in next, v do
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
  if type(x) ~= "number" or type(tol) ~= "number" then
    error("near: expected a number and a numeric tolerance, got " .. type(x) .. " and " .. type(tol), 2)
  end
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
  local len = type(v) == "string" and #v or rawlen(v)
  if len ~= n then
    raise_failure(pre(self) .. "expected length " .. tostring(n) .. ", got " .. len .. " for " .. repr(v))
  end
  return self
end

-- The classes of the errors e2e raises (the SDK's, CommandExit,
-- RemoteError, and Failed for an assertion): a lone class name given to
-- raises() is a class, not text.
local CLASSES = {}
for _, c in ipairs { "Authentication", "NotFound", "RateLimit", "Timeout", "InvalidArgument",
  "NotEnoughSpace", "Sandbox", "Connection", "Protocol", "Canceled", "Template", "CommandExit",
  "RemoteError", "Failed" } do CLASSES[c] = true end

-- Text of any error value: the message of an assertion failure, a
-- string itself, its __tostring (an e2e error reads "NotFound: ..."),
-- else its repr; never "(error object is a table value)".
local function error_text(e)
  if M.is_error(e, "Failed") then return tostring(e.message) end
  if type(e) == "string" then return e end
  local mt = getmetatable(e)
  if type(mt) == "table" and rawget(mt, "__tostring") then
    local ok, s = pcall(tostring, e)
    if ok and type(s) == "string" then return s end
  end
  return repr(e)
end

local function error_class(e)
  local c = type(e) == "table" and rawget(e, "class")
  return type(c) == "string" and c or nil
end

-- e2e's own stops (a timeout, an interrupt, a skip) are never caught.
local function is_stop(e) return M.is_error(e) and STOPS[e.class] == true end

-- A foreign error the runner wrapped (class Error) is matched as raised.
local function raised(e)
  if M.is_error(e, "Error") and e.value ~= nil then return e.value end
  return e
end

-- raises spec: {class =, text = (plain), pattern = (Lua pattern)}; nil
-- fields match anything. Returns nil when e matches, else why not.
local function mismatch(spec, e)
  local cls, text = error_class(e), error_text(e)
  if spec.class and cls ~= spec.class then
    return sfmt("an error of class %s, got %s", spec.class, qstr(cls and text or ("(no class) " .. text)))
  end
  if spec.text and not sfind(text, spec.text, 1, true) then
    return sfmt("the error to contain %s, got %s", qstr(spec.text), qstr(text))
  end
  if spec.pattern and not sfind(text, spec.pattern) then
    return sfmt("the error to match pattern %s, got %s", qstr(spec.pattern), qstr(text))
  end
end

-- raises() spec from its arguments: (), (text), (Class), (Class|nil,
-- text), or ({class =, text =, pattern =}).
local function raises_spec(a, b, where)
  if type(a) == "table" then
    for k in pairs(a) do
      if k ~= "class" and k ~= "text" and k ~= "pattern" then
        error(where .. ": unknown key " .. qstr(tostring(k)) .. " (class, text, pattern)", 3)
      end
    end
    return { class = a.class, text = a.text, pattern = a.pattern }
  end
  if a ~= nil and type(a) ~= "string" or b ~= nil and type(b) ~= "string" then
    error(where .. ": expected (class, text) strings or {class =, text =, pattern =}", 3)
  end
  if b ~= nil then return { class = a, text = b } end
  if a ~= nil and CLASSES[a] then return { class = a } end
  return { text = a }
end

-- expect(fn):raises([class], [text]) or :raises{class =, text =, pattern =}:
-- the function must raise an error of that class (NotFound & co.)
-- whose text (tostring) contains text (plain) or matches pattern. Returns
-- the error itself, as pytest.raises(...) as e. Timeouts, interrupts and
-- skips are never "expected": they propagate.
function Expect:raises(a, b)
  if type(self.v) ~= "function" then
    raise_failure(pre(self) .. "raises needs a function, got " .. type(self.v))
  end
  local spec = raises_spec(a, b, "raises")
  local ok, err = pcall(self.v)
  if ok then raise_failure(pre(self) .. "expected the function to raise an error, it returned normally") end
  if is_stop(err) then error(err, 0) end
  err = raised(err)
  local why = mismatch(spec, err)
  if why then raise_failure(pre(self) .. "expected " .. why) end
  return err
end

---------------------------------------------------------------------------
-- eventually(fn, {timeout=, interval=, message=, retry_on=})
---------------------------------------------------------------------------
-- Calls fn until it returns a truthy value (returned) or timeout passes.
-- A failed assertion or a raised error is retried too (a file that is not
-- there yet answers NotFound), as Playwright's toPass does; retry_on =
-- {"NotFound", ...} narrows that to errors of those classes (assertions
-- are always retried). The failure names the last error; message= goes
-- in front of it.
function M.eventually(fn, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("eventually: opts must be a table", 2) end
  for k in pairs(opts) do
    if k ~= "timeout" and k ~= "interval" and k ~= "message" and k ~= "retry_on" then
      error("eventually: unknown option " .. qstr(tostring(k)) .. " (timeout, interval, message, retry_on)", 2)
    end
  end
  local timeout, interval = opts.timeout or 10, opts.interval or 0.5
  if type(fn) ~= "function" then error("eventually: fn must be a function", 2) end
  -- Both false for NaN, as every comparison with NaN is.
  local timeout_ok = type(timeout) == "number" and timeout >= 0
  local interval_ok = type(interval) == "number" and interval > 0
  if not (timeout_ok and interval_ok) then
    error("eventually: timeout must be >= 0 and interval > 0", 2)
  end
  local retry_on
  if opts.retry_on ~= nil then
    if type(opts.retry_on) ~= "table" then error("eventually: retry_on must be a list of error classes", 2) end
    retry_on = {}
    for _, c in ipairs(opts.retry_on) do
      if type(c) ~= "string" then error("eventually: retry_on must be a list of error classes", 2) end
      retry_on[c] = true
    end
  end
  local deadline, attempts, last = core.clock() + timeout, 0, "condition returned a falsy value"
  while true do
    attempts = attempts + 1
    local res = table.pack(pcall(fn))
    if res[1] and res[2] then return select(2, table.unpack(res, 1, res.n)) end
    if not res[1] then
      local e = res[2]
      if is_stop(e) then error(e, 0) end
      if retry_on and not M.is_error(e, "Failed") and not retry_on[error_class(raised(e))] then error(e, 0) end
      last = error_text(e)
    elseif res[1] then
      last = "condition returned a falsy value"
    end
    if core.clock() >= deadline then
      raise_failure((opts.message and (tostring(opts.message) .. ": ") or "") ..
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
  raises_spec = raises_spec, raises_mismatch = mismatch, error_text = error_text,
  qstr = qstr, sorted_keys = sorted_keys }
return M, internal
