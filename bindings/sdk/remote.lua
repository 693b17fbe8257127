-- e2e.remote: declarative remote execution (docs/lua-api.md "e2e.remote").
--
--   local add = remote.fn { python = "def main(a, b):\n  return a + b\n" }
--   add(1, 2)                          --> 3, run in a fresh sandbox
--   local c = add:spawn(1, 2); c:wait() --> 3
--   remote.gather { c1, c2 }          --> { r1, r2 }
--
-- Each call creates its own sandbox through sandbox.create (tagged, in the
-- ledger, owned by the current scope), writes our runner (runner.py,
-- embedded from remote_runner.py and passed in as `...` with the error
-- metatable), the source, the
-- files and the arguments, runs `python3 runner.py <entry>`, reads the
-- result file and kills the sandbox on every path. Values cross as tagged
-- JSON (remote_runner.py's docstring).
local RUNNER, ERROR_MT = ...
local sandbox = require "e2e.sandbox"
local json = require "e2e.json"

local type, pairs, ipairs, select, pcall, error = type, pairs, ipairs, select, pcall, error
local setmetatable, getmetatable, tostring = setmetatable, getmetatable, tostring
local sfmt, mtype, null = string.format, math.type, json.null

local M = { null = null }

local DIR = "/home/user/remote"     -- the call's cwd; files= go here
local ABX = DIR .. "/.abx"          -- runner, source, args, result
local TTL_MARGIN = 60               -- s of sandbox life beyond the call
local TTL_MAX = 86400               -- E2B's (and FC's) limit for a sandbox

---------------------------------------------------------------------------
-- Tagged JSON, Lua side
---------------------------------------------------------------------------
local Bytes = { __name = "e2e.remote.bytes" }
Bytes.__index = Bytes

-- remote.bytes(s): sent as Python bytes even when s is valid UTF-8.
function M.bytes(s)
  if type(s) ~= "string" then
    error(sfmt("bad argument #1 to 'bytes' (string expected, got %s)", type(s)), 2)
  end
  return setmetatable({ s = s }, Bytes)
end

local function hex(s)
  return (s:gsub(".", function(c) return sfmt("%02x", c:byte()) end))
end

local function unhex(h)
  return (h:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end))
end

local function fail_value(where, what)
  error(sfmt("remote: %s: %s", where, what), 0)
end

-- Lua value -> plain JSON-able value (json.encode does the rest).
local function tag(v, where, active)
  local t = type(v)
  if v == nil or v == null then return null end
  if t == "boolean" or mtype(v) == "integer" then return v end
  if t == "number" then
    if v ~= v then return { ["$float"] = "nan" } end
    if v == math.huge then return { ["$float"] = "inf" } end
    if v == -math.huge then return { ["$float"] = "-inf" } end
    return v
  end
  if t == "string" then
    if utf8.len(v) then return v end
    return { ["$bytes"] = hex(v) }
  end
  if t ~= "table" then fail_value(where, "cannot send a " .. t) end
  if getmetatable(v) == Bytes then return { ["$bytes"] = hex(v.s) } end
  if active[v] then fail_value(where, "cycle (a table contains itself)") end
  active[v] = true
  local n, nstr, max = 0, 0, 0
  for k in pairs(v) do
    n = n + 1
    if type(k) == "string" then nstr = nstr + 1
    elseif mtype(k) == "integer" and k >= 1 then max = k > max and k or max
    else fail_value(where, "key " .. tostring(k) .. " is neither a string nor an index 1..n") end
  end
  local out
  if nstr > 0 or json.is_object(v) then
    if nstr < n then fail_value(where, "table mixes string and integer keys") end
    out = json.object()
    local only
    for k, x in pairs(v) do
      out[k] = tag(x, where .. "." .. k, active)
      only = k
    end
    if n == 1 and only:sub(1, 1) == "$" then out = { ["$dict"] = out } end
  else
    if max ~= n then fail_value(where, sfmt("sparse array (key %d, %d keys)", max, n)) end
    out = {}
    for i = 1, n do out[i] = tag(v[i], sfmt("%s[%d]", where, i), active) end
  end
  active[v] = nil
  return out
end

-- Decoded JSON -> Lua value; nested None stays remote.null.
local function untag(v)
  if type(v) ~= "table" then return v end
  local k1, x1 = next(v)
  if k1 ~= nil and next(v, k1) == nil and type(k1) == "string" then
    if k1 == "$bytes" then return unhex(x1) end
    if k1 == "$float" then
      return x1 == "nan" and 0.0 / 0.0 or (x1 == "inf" and math.huge or -math.huge)
    end
    if k1 == "$dict" then
      for k, x in pairs(x1) do x1[k] = untag(x) end
      return x1
    end
  end
  for k, x in pairs(v) do v[k] = untag(x) end
  return v
end

---------------------------------------------------------------------------
-- Errors
---------------------------------------------------------------------------
-- One shape with every e2e error (bindings/core/e2e_error.h): tostring reads
-- "RemoteError: <name>: <message>"; .traceback is left to the runner (the
-- Lua side's), the Python side's is .remote_traceback.
local function remote_error(name, message, traceback, r)
  return setmetatable({ class = "RemoteError", name = name, message = message,
    remote_traceback = traceback or "", stdout = r and r.stdout or "",
    stderr = r and r.stderr or "" }, ERROR_MT)
end

---------------------------------------------------------------------------
-- Declaration
---------------------------------------------------------------------------
local OPTIONS = { template = "string", envs = "table", files = "table",
  timeout = "number", python = "string", entry = "string" }

local function check_spec(o)
  if type(o) ~= "table" then
    error(sfmt("bad argument #1 to 'fn' (table expected, got %s)", type(o)), 3)
  end
  for k, v in pairs(o) do
    local want = OPTIONS[k]
    if not want then error(sfmt("unknown option '%s' to 'fn'", tostring(k)), 3) end
    if type(v) ~= want then
      error(sfmt("bad argument #1 to 'fn' (option '%s': %s expected, got %s)",
        k, want, type(v)), 3)
    end
  end
  if not o.python then error("bad argument #1 to 'fn' (option 'python' is required)", 3) end
  local entry = o.entry or "main"
  if not entry:match("^[%a_][%w_]*$") then
    error(sfmt("bad argument #1 to 'fn' (entry %q is not a Python name)", entry), 3)
  end
  local timeout = o.timeout or 60
  if not (timeout > 0 and timeout <= 86400) then
    error("bad argument #1 to 'fn' (timeout must be in (0, 86400] s)", 3)
  end
  for k, v in pairs(o.envs or {}) do
    if type(k) ~= "string" or type(v) ~= "string" then
      error(sfmt("bad argument #1 to 'fn' (envs: %s = %s: strings expected)",
        tostring(k), tostring(v)), 3)
    end
  end
  local files = {}
  for p, data in pairs(o.files or {}) do
    if type(p) ~= "string" or (type(data) ~= "string" and getmetatable(data) ~= Bytes) then
      error(sfmt("bad argument #1 to 'fn' (files: %s: a path and a string expected)",
        tostring(p)), 3)
    end
    if p == "" or p:sub(1, 1) == "/" or p:find("%z") or ("/" .. p .. "/"):find("/%.%.?/")
        or p:sub(1, 5) == ".abx/" or p == ".abx" then
      error(sfmt("bad argument #1 to 'fn' (files: %q must be a relative path "
        .. "without '.', '..' or '.abx')", p), 3)
    end
    files[#files + 1] = { path = DIR .. "/" .. p,
      data = getmetatable(data) == Bytes and data.s or data }
  end
  return { template = o.template or "code-interpreter-v1", envs = o.envs, files = files,
    timeout = timeout, python = o.python, entry = entry }
end

---------------------------------------------------------------------------
-- Calls
---------------------------------------------------------------------------
local Call = { __name = "e2e.remote.Call" }
Call.__index = Call

local function encode_args(n, ...)
  local args, active = {}, {}
  for i = 1, n do
    args[i] = tag((select(i, ...)), sfmt("argument #%d", i), active)
  end
  return json.encode(args)
end

-- Creates the sandbox and starts the runner in it, in the background.
local function start(spec, n, ...)
  local args = encode_args(n, ...)   -- misuse raises before any sandbox
  local sbx = sandbox.create { template = spec.template, envs = spec.envs,
    timeout = math.min(math.ceil(spec.timeout) + TTL_MARGIN, TTL_MAX),
    metadata = { e2e_remote = spec.entry } }
  local ok, handle = pcall(function()
    local writes = {
      { path = ABX .. "/runner.py", data = RUNNER },
      { path = ABX .. "/remote_fn.py", data = spec.python },
      { path = ABX .. "/args.json", data = args },
    }
    for _, f in ipairs(spec.files) do writes[#writes + 1] = f end
    sbx.files:write_many(writes)
    return sbx.commands:run("exec python3 .abx/runner.py " .. spec.entry,
      { background = true, cwd = DIR, timeout = spec.timeout })
  end)
  if not ok then
    pcall(sbx.kill, sbx)
    error(handle, 0)
  end
  return setmetatable({ sandbox_id = sbx.id, _sbx = sbx, _handle = handle,
    _spec = spec }, Call)
end

-- The outcome of a finished runner: true, value | false, error value.
local function finish(self)
  local sbx, spec = self._sbx, self._spec
  local ok, r = pcall(self._handle.wait, self._handle)
  if not ok then
    if type(r) ~= "table" or r.class ~= "CommandExit" then
      if type(r) == "table" and r.class == "Timeout" then
        r = setmetatable({ class = "Timeout", message = sfmt(
          "remote call %s exceeded its timeout of %g s", spec.entry, spec.timeout),
          status = r.status, code = r.code }, getmetatable(r))
      end
      return false, r
    end
  end
  local rok, text = pcall(sbx.files.read, sbx.files, ABX .. "/result.json")
  if not rok then
    if not ok then   -- the runner died before writing a result
      return false, remote_error("RunnerExit", sfmt(
        "python3 exited with code %s before writing a result",
        tostring(r.exit_code)), "", r)
    end
    return false, text
  end
  local dok, res = pcall(json.decode, text)
  if not dok then return false, remote_error("ProtocolError", tostring(res), "", r) end
  if res.error then
    local e = res.error
    return false, remote_error(e.name, e.message, e.traceback, r)
  end
  local v = untag(res.ok)
  if v == null then v = nil end
  return true, v
end

-- c:wait() -> the result, or raises; the sandbox is killed first. Waiting
-- again gives the same outcome.
function Call:wait()
  if getmetatable(self) ~= Call then
    error("bad argument #1 to 'wait' (remote call expected)", 2)
  end
  if not self._done then
    local pok, ok, v = pcall(finish, self)
    if not pok then ok, v = false, ok end
    self._done = true
    pcall(self._sbx.kill, self._sbx)
    self._ok, self._value = ok, v
  end
  if not self._ok then error(self._value, 0) end
  return self._value
end

local Fn = { __name = "e2e.remote.Function" }
Fn.__index = Fn

function Fn:spawn(...)
  if getmetatable(self) ~= Fn then
    error("bad argument #1 to 'spawn' (remote function expected)", 2)
  end
  return start(self._spec, select("#", ...), ...)
end

Fn.__call = function(self, ...) return Fn.spawn(self, ...):wait() end
Fn.__tostring = function(self) return "RemoteFunction(" .. self._spec.entry .. ")" end

-- remote.fn{python=, entry="main", template="code-interpreter-v1", envs=, files=, timeout=60}
function M.fn(opts)
  return setmetatable({ _spec = check_spec(opts) }, Fn)
end

-- remote.gather{c1, c2, ...} -> {r1, r2, ...}: waits for every call (so
-- each sandbox is killed), then raises the first error if any.
function M.gather(calls)
  if type(calls) ~= "table" then
    error(sfmt("bad argument #1 to 'gather' (table expected, got %s)", type(calls)), 2)
  end
  for i, c in ipairs(calls) do
    if getmetatable(c) ~= Call then
      error(sfmt("bad argument #1 to 'gather' (item %d is not a remote call)", i), 2)
    end
  end
  local out, first = {}, nil
  for i, c in ipairs(calls) do
    local ok, v = pcall(c.wait, c)
    if ok then out[i] = v elseif first == nil then first = v end
  end
  if first ~= nil then error(first, 0) end
  return out
end

return M
