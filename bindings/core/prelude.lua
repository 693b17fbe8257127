-- The e2e test DSL: registration (test, describe, fixture), the runner that
-- executes one collected test with its fixtures (assertions: expect.lua).
-- Mechanism (deadlines, interrupts, output, C fixtures, session state) is in
-- C and reaches us as the table `core`; this file is policy and sugar.
--
--   local e2e = require "e2e"
--   local test, expect = e2e.test, e2e.expect
--   test(name, [opts], fn)   opts: marks = {...}, skip = "why", timeout = S,
--                            known_issue = "KI-NNN: why" (strict xfail; the
--                            id needs an entry in KNOWN-ISSUES.md, if any),
--                            raises = "Class" | "text" | {class =, text =,
--                            pattern =} (only that failure is pinned),
--                            platform = true (skipped without credentials),
--                            requires = {"pause", ...} (capabilities),
--                            reruns = N (this test's --reruns),
--                            group = "name" (--dist loadgroup: one worker)
--   e2e.parametrize(name, cases, [opts], fn)   one test per case, name[id];
--                            fn(case, fixtures...), opts.ids = {...}
--   e2e.describe(name, [opts], fn)   groups: node id file::group::name;
--                            opts.requires applies to every test inside
--   e2e.has(cap)  e2e.requires(cap, ...)  e2e.requires_envd(sbx, "0.6.2", what)
--   e2e.platform  (capabilities: docs/capabilities.md)
--   e2e.fixture(name, [{scope = "test"|"file"|"session",
--               needs_platform = true}], fn)
--   e2e.defer(fn)  e2e.skip(why)  e2e.fail(msg)  e2e.sleep(s)  e2e.secret(v)
--   e2e.clock()  (monotonic seconds)
--   e2e.eventually(fn, {timeout = 10, interval = 0.5, message = "...",
--                  retry_on = {"NotFound"}})   e2e.repr(v)  e2e.deep_eq(a, b)
--   e2e.is_error(e)  e2e.markers()  e2e.capabilities  e2e.is_local
--   e2e.data_plane_url  (docs/authoring.md is the whole reference)
--   e2e.register_marker(name, description)   e2e.run_id   e2e.worker_id
--
-- Fixture protocol: a fixture function receives its own dependencies by
-- parameter name and returns `value[, teardown_fn]`. `e2e.defer(fn)` adds a
-- finalizer to the scope being set up (or to the running test) as soon as a
-- resource exists, so it is released even if the fixture fails later.
-- Finalizers run LIFO, each in its own protected call with its own budget.
-- Wider scopes are set up first. Fixtures shared by a suite live in
-- conftest.lua next to the test files (loaded into every file's state).
-- Session fixtures belong there: each worker runs them once in its own
-- session state and copies their (plain data) value into each file state;
-- fixtures implemented in C (core.cfixture_*) are found by name as well.
local core, M, I = ...

local type, pairs, ipairs, tostring, select = type, pairs, ipairs, tostring, select
local error, pcall, setmetatable = error, pcall, setmetatable
local sfmt, sfind, ssub = string.format, string.find, string.sub
local tinsert, tremove, tconcat, tsort = table.insert, table.remove, table.concat, table.sort
local getinfo, getlocal = debug.getinfo, debug.getlocal
local mkerr, user_where, repr, qstr, sorted_keys = I.mkerr, I.user_where, I.repr, I.qstr, I.sorted_keys

-- Identity of the run and of this worker (as pytest-xdist's worker_id):
-- resources created by tests carry them so that parallel runs never touch
-- each other's.
M.run_id = core.config.run_id
M.worker_id = core.config.worker_id
-- Monotonic seconds (time.monotonic): to size a wait by what the platform
-- takes, never to assert a speed (bench/ measures those).
M.clock = core.clock

---------------------------------------------------------------------------
-- Markers
---------------------------------------------------------------------------
local markers = {
  e2e = "every test of the suite (added automatically)",
  e2e_slow = "slow tests (minutes)",
  known_issue = "strict expected failure pinned to a KI-NNN product defect",
}

function M.register_marker(name, description)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error("register_marker: invalid marker name " .. repr(name), 2)
  end
  markers[name] = description or ""
end

function M.markers()
  local out = {}
  for _, k in ipairs(sorted_keys(markers)) do out[#out + 1] = { name = k, description = markers[k] } end
  return out
end

---------------------------------------------------------------------------
-- Capabilities (docs/capabilities.md): declared by the platform's
-- configuration (E2E_PLATFORM, E2E_CAPS), never probed, so a broken
-- feature fails instead of skipping.
---------------------------------------------------------------------------
local caps, cap_known = core.config.caps or {}, {}
for _, n in ipairs(core.config.cap_names or {}) do cap_known[n] = true end
M.platform = core.config.platform
-- The single data-plane URL (ABX_SANDBOX_URL) that routes by the
-- E2b-Sandbox-Id/-Port headers, or nil where sandboxes are reached by
-- host name only (as on FC).
M.data_plane_url = core.config.data_plane_url ~= "" and core.config.data_plane_url or nil
-- True under --local (abx-local started for this run); the declared
-- capabilities, sorted (e2e.has tests one).
M.is_local = core.config.is_local == true
M.capabilities = {}
for _, n in ipairs(core.config.cap_names or {}) do
  if caps[n] then M.capabilities[#M.capabilities + 1] = n end
end
tsort(M.capabilities)

local function known_caps() return tconcat(core.config.cap_names or {}, ", ") end

-- A list of capability names, checked; `what` names the caller.
local function cap_list(v, what, level)
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" then error(what .. ": requires must be a list of capability names", level + 1) end
  local out = {}
  for _, n in ipairs(v) do
    if type(n) ~= "string" or not cap_known[n] then
      error(sfmt("%s: unknown capability %s (known: %s)", what, repr(n), known_caps()), level + 1)
    end
    out[#out + 1] = n
  end
  return out
end

local function missing_caps(list)
  local miss = {}
  for _, n in ipairs(list) do if not caps[n] then miss[#miss + 1] = n end end
  return miss
end

local function caps_reason(miss)
  return sfmt("requires %s %s (E2E_CAPS)", #miss == 1 and "capability" or "capabilities",
    tconcat(miss, ", "))
end

function M.has(name)
  if type(name) ~= "string" or not cap_known[name] then
    error(sfmt("has: unknown capability %s (known: %s)", repr(name), known_caps()), 2)
  end
  return caps[name] == true
end

-- Inside a test or fixture: skip now unless every capability is declared.
function M.requires(...)
  local miss = missing_caps(cap_list({ ... }, "requires", 2))
  if #miss > 0 then M._skip_declared(caps_reason(miss)) end
end

-- Skips unless the sandbox's envd is at least `min` (a gated feature the
-- platform's envd predates, as FC's 0.5.2); `what` names the feature.
function M.requires_envd(sbx, min, what)
  local v = type(sbx) == "string" and sbx or (sbx and sbx.envd_version)
  if type(min) ~= "string" then error("requires_envd: expected a minimum version string", 2) end
  if type(v) ~= "string" or v == "" then
    error("requires_envd: the sandbox reports no envd version", 2)
  end
  local c, err = core.envd_version_cmp(v, min)
  if c == nil then error("requires_envd: " .. err, 2) end
  if c < 0 then
    M._skip_declared(sfmt("requires envd %s or later%s (the sandbox reports %s)", min,
      what and (" for " .. tostring(what)) or "", v))
  end
end

---------------------------------------------------------------------------
-- Registration: tests, groups, fixtures
---------------------------------------------------------------------------
local tests, by_id = {}, {}
local groups = {}
local group_requires = {}   -- requires of each open describe
local fixtures = {}
local file_id = "?"      -- node-id prefix of the file being collected
local in_script = false  -- abx-e2e exec: a script, not a test file

-- The KNOWN-ISSUES.md governing this file (core.known_issue_ids), looked
-- up once per file; false when there is none.
local known_cache
local function known_issue_ids()
  if known_cache == nil then known_cache = core.known_issue_ids(file_id or ".") or false end
  return known_cache or nil
end
local usage_errors = {}
local running = false
local loading_conftest = false
local loading_builtin = false   -- e2e.fixtures: overridable anywhere

local function params_of(fn)
  local names, i = {}, 1
  while true do
    local name = getlocal(fn, i)
    if not name then break end
    names[#names + 1] = name
    i = i + 1
  end
  return names
end

local function caller_line(level)
  local info = getinfo(level + 1, "Sl")
  return info and info.currentline or 0
end

-- Registers a test; lv is the error level of the user's call, case (when
-- given) the value of a parametrised case, passed first to fn.
local function register(name, opts, fn, lv, case)
  if in_script then
    error("test() registers a test for the runner; an exec script runs once, top to bottom: "
      .. "put tests in a test_*.lua file and run abx-e2e PATH", lv)
  end
  if running then error("test() cannot be called while tests are running", lv) end
  if fn == nil and type(opts) == "function" then opts, fn = {}, opts end
  if type(name) ~= "string" or name == "" then error("test: name must be a non-empty string", lv) end
  if sfind(name, "\0", 1, true) then error("test: name " .. qstr(name) .. " contains a NUL byte", lv) end
  if not utf8.len(name) then error("test: name " .. qstr(name) .. " is not valid UTF-8", lv) end
  if type(opts) ~= "table" then error("test: opts must be a table", lv) end
  if type(fn) ~= "function" then error("test: missing test function for " .. qstr(name), lv) end
  local parts = {}
  for _, g in ipairs(groups) do parts[#parts + 1] = g end
  parts[#parts + 1] = name
  local nodeid = file_id .. "::" .. tconcat(parts, "::")
  if by_id[nodeid] then error("test: duplicate test name " .. qstr(nodeid), lv) end
  local t = { name = name, groups = { table.unpack(groups) }, fn = fn, params = params_of(fn), case = case,
    nodeid = nodeid, line = caller_line(lv), marks = { "e2e" }, markset = { e2e = true }, requires = {} }
  if case then tremove(t.params, 1) end   -- the case value, not a fixture
  for k in pairs(opts) do
    if k ~= "marks" and k ~= "skip" and k ~= "timeout" and k ~= "known_issue" and k ~= "platform"
        and k ~= "requires" and k ~= "reruns" and k ~= "group" and k ~= "raises" then
      error("test: unknown option " .. qstr(tostring(k)) .. " for " .. qstr(name), lv)
    end
  end
  local function mark(m)
    if type(m) ~= "string" then error("test: marks must be strings", lv + 1) end
    if not markers[m] then
      usage_errors[#usage_errors + 1] = sfmt("%s: unknown marker '%s' (registered: %s)",
        nodeid, m, tconcat(sorted_keys(markers), ", "))
    end
    if not t.markset[m] then t.markset[m] = true; t.marks[#t.marks + 1] = m end
  end
  if opts.marks ~= nil then
    if type(opts.marks) ~= "table" then error("test: marks must be a list of strings", lv) end
    for _, m in ipairs(opts.marks) do mark(m) end
  end
  if opts.skip ~= nil then
    if type(opts.skip) ~= "string" then error("test: skip must be a reason string", lv) end
    t.skip = opts.skip
  end
  if opts.timeout ~= nil then
    local tmo = opts.timeout
    -- NaN or inf would switch off the deadline and the parent's watchdog.
    if type(tmo) ~= "number" or not (tmo > 0 and tmo < math.huge) then
      error("test: timeout must be a positive, finite number of seconds, got " .. repr(tmo), lv)
    end
    t.timeout = opts.timeout
  end
  if opts.known_issue ~= nil then
    local ki = opts.known_issue
    local id = type(ki) == "string" and ki:match("^(KI%-%d%d%d+):%s*%S")
    if not id then
      error("test: known_issue must be \"KI-NNN: reason\" (KI- and three or more digits, a colon, "
        .. "the symptom), got " .. repr(ki), lv)
    end
    local known = known_issue_ids()
    if known and not known.ids[id] then
      error(sfmt("test: known_issue %s has no entry in %s: add one (see its Format section) or fix the id",
        id, known.path), lv)
    end
    t.known_issue = ki
    mark("known_issue")
  end
  if opts.raises ~= nil then
    -- Only the pinned failure is expected: any other one is reported.
    if not t.known_issue then error("test: raises needs known_issue (it narrows the pinned failure)", lv) end
    local r = opts.raises
    t.ki_raises = I.raises_spec(r, nil, "test: raises")
  end
  if t.markset.known_issue and not t.known_issue then
    error("test: the known_issue marker needs opts.known_issue = \"KI-NNN: reason\"", lv)
  end
  t.platform = opts.platform == true
  if opts.reruns ~= nil then
    local n = opts.reruns
    if math.type(n) ~= "integer" or n < 0 or n > 100 then
      error("test: reruns must be an integer from 0 to 100, got " .. repr(n), lv)
    end
    t.reruns = n
  end
  if opts.group ~= nil then
    if type(opts.group) ~= "string" or opts.group == "" or sfind(opts.group, "\0", 1, true) then
      error("test: group must be a non-empty name, got " .. repr(opts.group), lv)
    end
    t.group = opts.group
  end
  local seen = {}
  local function need(n) if not seen[n] then seen[n] = true; t.requires[#t.requires + 1] = n end end
  for _, list in ipairs(group_requires) do for _, n in ipairs(list) do need(n) end end
  if opts.requires ~= nil then
    for _, n in ipairs(cap_list(opts.requires, "test " .. qstr(name), lv)) do need(n) end
  end
  tests[#tests + 1] = t
  by_id[nodeid] = t
end

function M.test(name, opts, fn)
  register(name, opts, fn, 3)   -- not a tail call: levels count this frame
end

-- The id of a parametrised case, as pytest makes it: strings, numbers,
-- booleans as they read (control bytes escaped), anything else
-- <first parameter name><index from 0>.
local function case_id(v, argname, i)
  local tv = type(v)
  if tv == "string" then
    return (v:gsub("[%c\\]", function(c) return sfmt("\\x%02x", c:byte()) end))
  elseif tv == "number" or tv == "boolean" then
    return tostring(v)
  end
  return argname .. (i - 1)
end

-- e2e.parametrize(name, cases, [opts], fn): one test per case, named
-- name[id] (pytest's ids; opts.ids = {...} or function(value, index) sets
-- them), selectable by -k and by node id. fn(value, fixtures...).
function M.parametrize(name, cases, opts, fn)
  if running then error("parametrize() cannot be called while tests are running", 2) end
  if fn == nil and type(opts) == "function" then opts, fn = {}, opts end
  if type(cases) ~= "table" or #cases == 0 then
    error("parametrize: cases must be a non-empty list", 2)
  end
  if type(opts) ~= "table" then error("parametrize: opts must be a table", 2) end
  if type(fn) ~= "function" then error("parametrize: missing test function for " .. qstr(tostring(name)), 2) end
  local ids, topts = opts.ids, {}
  if ids ~= nil and type(ids) ~= "table" and type(ids) ~= "function" then
    error("parametrize: ids must be a list of strings or a function(value, index)", 2)
  end
  for k, v in pairs(opts) do if k ~= "ids" then topts[k] = v end end
  local argname = params_of(fn)[1] or "case"
  local made, seen, dup = {}, {}, {}
  for i, v in ipairs(cases) do
    local id = type(ids) == "table" and ids[i] or type(ids) == "function" and ids(v, i) or case_id(v, argname, i)
    if type(id) ~= "string" or id == "" or sfind(id, "::", 1, true) then
      error(sfmt("parametrize: case %d of %s has no usable id (%s): give ids = {...} (non-empty, no '::')",
        i, qstr(tostring(name)), repr(id)), 2)
    end
    made[i] = id
    if seen[id] then dup[id] = true end
    seen[id] = true
  end
  local count = {}
  for i, v in ipairs(cases) do
    local id = made[i]
    if dup[id] then  -- pytest: a repeated id gets its own running index
      count[id] = (count[id] or -1) + 1
      id = id .. count[id]
    end
    register(name .. "[" .. id .. "]", topts, fn, 3, { value = v })
  end
end


function M.describe(name, opts, fn)
  if running then error("describe() cannot be called while tests are running", 2) end
  if type(name) ~= "string" or name == "" then error("describe: name must be a non-empty string", 2) end
  if sfind(name, "\0", 1, true) then error("describe: name " .. qstr(name) .. " contains a NUL byte", 2) end
  if not utf8.len(name) then error("describe: name " .. qstr(name) .. " is not valid UTF-8", 2) end
  if fn == nil then opts, fn = {}, opts end
  if type(fn) ~= "function" then error("describe: missing function for " .. qstr(name), 2) end
  if type(opts) ~= "table" then error("describe: opts must be a table", 2) end
  for k in pairs(opts) do
    if k ~= "requires" then error("describe: unknown option " .. qstr(tostring(k)) .. " for " .. qstr(name), 2) end
  end
  local req = opts.requires ~= nil and cap_list(opts.requires, "describe " .. qstr(name), 2) or {}
  groups[#groups + 1] = name
  group_requires[#group_requires + 1] = req
  local ok, err = pcall(fn)
  groups[#groups] = nil
  group_requires[#group_requires] = nil
  if not ok then error(err, 0) end
end

local SCOPES = { test = 1, file = 2, session = 3 }

-- Names a parameter can never carry (keywords), or must not (_ENV would
-- replace the test's globals with the fixture's value).
local RESERVED = {}
for w in ([[and break do else elseif end false for function goto if in
  local nil not or repeat return then true until while _ENV]]):gmatch("%S+") do
  RESERVED[w] = true
end

function M.fixture(name, opts, fn)
  if running then error("fixture() cannot be called while tests are running", 2) end
  if fn == nil and type(opts) == "function" then opts, fn = {}, opts end
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error("fixture: name must be an identifier, got " .. repr(name), 2)
  end
  if RESERVED[name] then
    error("fixture: " .. qstr(name) .. " is reserved in Lua and cannot name a parameter", 2)
  end
  local prev = fixtures[name]
  -- A test file may override a conftest fixture (pytest); defining one
  -- twice in the same file is a mistake that would silently pick the last.
  if prev and prev.conftest == loading_conftest then
    error(sfmt("fixture %s defined twice (first at %s)", qstr(name), prev.where or "?"), 2)
  end
  if type(opts) ~= "table" or type(fn) ~= "function" then error("fixture: usage is fixture(name, [opts], fn)", 2) end
  local scope = opts.scope or "test"
  if not SCOPES[scope] then error("fixture: scope must be test, file or session, got " .. repr(scope), 2) end
  if scope == "session" and not loading_conftest and not core.is_session then
    error("fixture " .. qstr(name) .. ": session fixtures belong in conftest.lua (one session per worker)", 2)
  end
  -- Built-in fixtures carry a marker no file compares equal to, so both
  -- conftest.lua and a test file may override them.
  fixtures[name] = { name = name, scope = scope, fn = fn, params = params_of(fn),
    needs_platform = opts.needs_platform == true, where = user_where(2),
    conftest = loading_builtin and "builtin" or loading_conftest }
end

---------------------------------------------------------------------------
-- Fixture resolution and finalizer stacks
---------------------------------------------------------------------------
local stacks = { test = {}, file = {}, session = {} }
local values = { file = {}, session = {} }   -- cached wider-scope values
local current_stack = nil                    -- where e2e.defer adds

function M.defer(fn)
  if type(fn) ~= "function" then error("defer: expected a function", 2) end
  if not current_stack then error("defer: only valid inside a test or fixture", 2) end
  tinsert(current_stack, { fn = fn, what = user_where(2) or "?" })
end

-- Sandboxes belong to the scope that created them: one tracking group per
-- finalizer stack, created with the first sandbox, whose finalizer kills
-- the whole group concurrently when the scope ends (and, being pushed
-- first, after every finalizer added later that may still use them). The
-- group is then forgotten, so a reused stack (the next test) gets a new one.
local sandbox_groups = setmetatable({}, { __mode = "k" })
core.set_sandbox_scope(function()
  local stack = current_stack
  if not stack then return nil end
  local g = sandbox_groups[stack]
  if not g then
    g = core.track_group_new()
    sandbox_groups[stack] = g
    tinsert(stack, { fn = function()
      if sandbox_groups[stack] == g then sandbox_groups[stack] = nil end
      core.track_kill_group(g)
    end, what = "sandboxes of this scope" })
  end
  return g
end)

local function fixture_def(name)
  local def = fixtures[name]
  if def then return def end
  local info = core.cfixture_info(name)
  if info then
    return { name = name, scope = info.scope, needs_platform = info.needs_platform, c = true, params = {} }
  end
  return nil
end

local resolve

local function setup_fixture(def, chain)
  core.trace("fixture_setup", def.name, def.scope)
  local stack = stacks[def.scope]
  local saved = current_stack
  current_stack = stack
  local args = {}
  for i, p in ipairs(def.params) do args[i] = resolve(p, chain, def) end
  local value
  if def.c then
    local handle
    value, handle = core.cfixture_setup(def.name)
    if handle then
      tinsert(stack, { fn = function() core.cfixture_teardown(handle) end, what = "fixture " .. def.name })
    end
  else
    local v, td = def.fn(table.unpack(args, 1, #def.params))
    if td ~= nil then
      if type(td) ~= "function" then
        error(sfmt("fixture '%s' returned a non-function teardown (%s)", def.name, type(td)), 0)
      end
      tinsert(stack, { fn = td, what = "fixture " .. def.name })
    end
    value = v
  end
  current_stack = saved
  core.trace("fixture_ready", def.name)
  return value
end

resolve = function(name, chain, requester)
  local def = fixture_def(name)
  if not def then
    local known = sorted_keys(fixtures)
    error(mkerr("Error", sfmt("fixture '%s' not found%s (available: %s)", name,
      requester and (" (requested by fixture '" .. requester.name .. "')") or "",
      #known > 0 and tconcat(known, ", ") or "none")), 0)
  end
  if requester and SCOPES[def.scope] < SCOPES[requester.scope] then
    error(mkerr("Error", sfmt("scope mismatch: %s fixture '%s' requests %s fixture '%s'",
      requester.scope, requester.name, def.scope, name)), 0)
  end
  if chain[name] then error(mkerr("Error", "fixture dependency cycle through '" .. name .. "'"), 0) end
  if def.scope ~= "test" then
    local cached = values[def.scope][name]
    if cached ~= nil then
      if cached.err ~= nil then error(cached.err, 0) end
      return cached.v
    end
  end
  chain[name] = true
  -- A nested region (keeping the test's deadline) turns an error into a
  -- typed one with its traceback where it happened, kept when re-raised.
  local ok, v
  if def.scope == "session" and not core.is_session and not def.c then
    ok, v = core.region(nil, true, core.session_fixture, name)
  else
    ok, v = core.region(nil, true, setup_fixture, def, chain)
  end
  chain[name] = nil
  if not ok then
    -- As pytest: a wider-scope fixture that failed (or skipped) fails the
    -- same way for every test of its scope, without a second attempt (one
    -- missing template is one create, not one per test). A deadline or an
    -- interrupt belongs to the test that met it and is not kept.
    local class = type(v) == "table" and v.class
    -- Its skip has one location for all of them (the fixture's, or the
    -- file's for a built-in one), so -r s counts them as one line.
    if class == "Skipped" and def.scope ~= "test" and not v.where then
      v.where = def.where or sfmt("%s (fixture %s)", file_id, name)
    end
    if def.scope ~= "test" and class ~= "TestTimeout" and class ~= "Interrupted" then
      values[def.scope][name] = { err = v }
      -- the same failure for the rest of its scope: a rerun cannot pass
      if type(v) == "table" then v.fixture_scope = def.scope end
    end
    error(v, 0)
  end
  if def.scope ~= "test" then values[def.scope][name] = { v = v } end
  return v
end

-- Does the test (through its fixture closure) need the platform?
local function needs_platform(t)
  if t.platform then return true end
  local seen = {}
  local function walk(name)
    if seen[name] then return false end
    seen[name] = true
    local def = fixture_def(name)
    if not def then return false end
    if def.needs_platform then return true end
    for _, p in ipairs(def.params or {}) do if walk(p) then return true end end
    return false
  end
  for _, p in ipairs(t.params) do if walk(p) then return true end end
  return false
end

local function run_stack(stack, budget, errors)
  while #stack > 0 do
    local fin = tremove(stack)
    local saved = current_stack
    current_stack = stack   -- a finalizer may defer more work
    core.trace("teardown", fin.what or "finalizer")
    local ok, err = core.region(budget, false, fin.fn)
    current_stack = saved
    if not ok then
      errors[#errors + 1] = { message = core.error_text(err), traceback = err.traceback, class = err.class }
      core.trace("teardown_error", fin.what or "finalizer", errors[#errors].message)
    end
  end
end

local function teardown_budget(t)
  local tmo = (t and t.timeout) or core.config.timeout
  if tmo and tmo > 0 and tmo < core.config.teardown_budget then return tmo end
  return core.config.teardown_budget
end

---------------------------------------------------------------------------
-- Output capture
---------------------------------------------------------------------------
local captured, captured_len = {}, 0
local CAPTURE_MAX = 1024 * 1024
local function out(s)
  if not core.config.capture then core.emit(s); return end
  if captured_len >= CAPTURE_MAX then return end
  if captured_len + #s > CAPTURE_MAX then
    s = ssub(s, 1, CAPTURE_MAX - captured_len) .. "\n[captured output truncated at 1 MiB]\n"
  end
  captured[#captured + 1] = s
  captured_len = captured_len + #s
end
local function take_captured()
  local s = tconcat(captured)
  captured, captured_len = {}, 0
  return s
end

local function to_text(...)
  local n, parts = select("#", ...), {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  return parts
end

local stream = {}
stream.__index = stream
function stream:write(...)
  for _, s in ipairs(to_text(...)) do out(s) end
  return self
end
function stream:flush() return self end
-- Called as methods too; these ignore the stream (no self).
function stream.setvbuf() return true end
function stream.close() return nil, "cannot close standard file" end
function stream.lines() error("cannot read from a captured output stream", 2) end
function stream.read() return nil, "captured output stream is write-only" end
stream.__name = "e2e.CapturedStream"
stream.__tostring = function() return "file (captured)" end

function M._install_capture(G)
  G.print = function(...) out(tconcat(to_text(...), "\t") .. "\n") end
  local so, se = setmetatable({}, stream), setmetatable({}, stream)
  G.io.stdout, G.io.stderr = so, se
  G.io.write = function(...) return so:write(...) end
end

---------------------------------------------------------------------------
-- The runner side (called by the host)
---------------------------------------------------------------------------
function M._begin_file(id) file_id = id end
function M._conftest(on) loading_conftest = on end
function M._builtin(on) loading_builtin = on end

function M._collected()
  local list = {}
  for i, t in ipairs(tests) do
    list[i] = { nodeid = t.nodeid, name = t.name, groups = t.groups, marks = t.marks, line = t.line,
      skip = t.skip, known_issue = t.known_issue, timeout = t.timeout, platform = needs_platform(t),
      requires = t.requires, reruns = t.reruns, group = t.group }
  end
  return list
end

function M._usage_errors() return usage_errors end

-- Tracebacks without the runner's own frames.
local function clean_tb(tb)
  if type(tb) ~= "string" then return nil end
  local kept = {}
  for line in (tb .. "\n"):gmatch("(.-)\n") do
    if not (sfind(line, "[e2e", 1, true) or sfind(line, "in field 'region'", 1, true)
        or sfind(line, "[C]: in function 'error'", 1, true)) then
      kept[#kept + 1] = line
    end
  end
  if kept[#kept] == "stack traceback:" then kept[#kept] = nil end
  return tconcat(kept, "\n")
end

local function errtext(e)
  local text = core.error_text(e)
  return text, clean_tb(e.traceback) or text
end

-- Runs tests[i]; returns the main result and, when finalizers failed, a
-- separate teardown record (pytest's "ERROR at teardown of").
function M._run(i)
  local t = tests[i]
  if not t then error("no collected test #" .. tostring(i)) end
  running = true
  core.track_begin_test(t.nodeid)
  local r = { nodeid = t.nodeid, setup = 0, call = 0, teardown = 0 }
  if t.skip then
    r.outcome, r.message, r.reason, r.when = "skipped", t.skip, t.skip, "setup"
    r.output = take_captured()
    return r
  end
  if not core.config.has_credentials and needs_platform(t) then
    r.outcome, r.when = "skipped", "setup"
    r.message = "E2E skipped: missing credentials [" .. core.config.missing_credentials .. "]"
    r.reason = r.message
    r.output = take_captured()
    return r
  end
  local miss = missing_caps(t.requires)
  if #miss > 0 then
    r.outcome, r.when = "skipped", "setup"
    r.message = caps_reason(miss)
    r.reason = r.message
    r.output = take_captured()
    return r
  end
  local phase, t0 = "setup", core.clock()
  local tphase = t0
  local stack = stacks.test
  local function body()
    current_stack = stack
    -- Wider scopes first (pytest), then parameter order.
    local order = {}
    for k, p in ipairs(t.params) do
      local def = fixture_def(p)
      order[k] = { k = k, p = p, s = def and SCOPES[def.scope] or 0 }
    end
    tsort(order, function(x, y) if x.s ~= y.s then return x.s > y.s end return x.k < y.k end)
    local args = {}
    for _, o in ipairs(order) do args[o.k] = resolve(o.p, {}, nil) end
    local now = core.clock()
    r.setup, phase, tphase = now - t0, "call", now
    if t.case then
      t.fn(t.case.value, table.unpack(args, 1, #t.params))
    else
      t.fn(table.unpack(args, 1, #t.params))
    end
  end
  local ok, err = core.region(t.timeout or core.config.timeout, true, body)
  current_stack = nil
  local t1 = core.clock()
  if phase == "setup" then r.setup = t1 - t0 else r.call = t1 - tphase end
  r.when = phase
  if ok then
    if t.known_issue then
      r.outcome, r.message = "failed", "[XPASS(strict)] " .. t.known_issue
      r.xpass_strict, r.reason = true, t.known_issue
    else
      r.outcome = "passed"
    end
  else
    r.message, r.longrepr = errtext(err)
    r.no_rerun = err.fixture_scope ~= nil or nil
    if err.class == "Interrupted" then
      r.outcome = "interrupted"
    elseif err.class == "Skipped" and not err.declared and not core.config.allow_skips then
      -- Green means ran: a skip the declared capabilities (requires), the
      -- credentials or the test's own skip = "why" do not explain fails.
      r.outcome = "failed"
      r.message = sfmt("skipped for a reason no declared capability explains: %s "
        .. "(declare it: requires = {...} or skip = \"why\"; --allow-skips keeps it a skip)",
        err.message)
      r.longrepr = (err.where and (err.where .. ": ") or "") .. r.message
    elseif err.class == "Skipped" then
      r.outcome, r.reason, r.skip_loc = "skipped", err.message, err.where
      r.longrepr = nil
    elseif phase == "call" and t.known_issue and not (t.ki_raises
        and I.raises_mismatch(t.ki_raises, err.value ~= nil and err.value or err)) then
      r.outcome, r.reason = "xfailed", t.known_issue
    elseif phase == "setup" then
      r.outcome = "error"
    elseif err.class == "Failed" or err.class == "TestTimeout" then
      r.outcome = "failed"
    else
      r.outcome = "error"
    end
  end
  -- Sandboxes the failed test used are named in its report (and kept
  -- alive with --keep-failed): marked before its finalizers kill them.
  if r.outcome == "failed" or r.outcome == "error" then
    core.trace("failure", phase, { class = not ok and err.class or "Failed", message = r.message,
      traceback = r.longrepr })
    local ids = core.track_test_failed()
    if #ids > 0 then r.sandboxes = ids end
  end
  -- Test-scope finalizers always run, each with its own budget.
  local terrs, t2 = {}, core.clock()
  run_stack(stack, teardown_budget(t), terrs)
  r.teardown = core.clock() - t2
  running = false
  r.output = take_captured()
  if #terrs > 0 then
    local msgs, tbs = {}, {}
    for _, e in ipairs(terrs) do
      msgs[#msgs + 1] = e.message
      tbs[#tbs + 1] = clean_tb(e.traceback) or e.message
    end
    r.teardown_message, r.teardown_longrepr = tconcat(msgs, "\n"), tconcat(tbs, "\n")
  end
  return r
end

-- Tears down a wider scope; returns a list of error messages.
local function finish_scope(scope)
  local errs = {}
  run_stack(stacks[scope], core.config.teardown_budget, errs)
  values[scope] = {}
  local msgs = {}
  for _, e in ipairs(errs) do msgs[#msgs + 1] = e.message end
  return msgs, take_captured()
end
function M._finish_file() return finish_scope("file") end
function M._finish_session() return finish_scope("session") end
-- exec SCRIPT: the script is one scope (the session stack): sandbox.create
-- and e2e.defer work at its top level and are undone when it ends.
function M._begin_script() current_stack, in_script = stacks.session, true end
function M._finish_script() current_stack = nil; return finish_scope("session") end

-- Session state side: resolve (once) and return a session fixture's value.
function M._session_get(name)
  local def = fixtures[name]
  if not def or def.scope ~= "session" then error(mkerr("Error", "no session fixture '" .. name .. "'"), 0) end
  local v = resolve(name, {}, nil)
  return v
end

-- Quick look-ups used by the host.
function M._has_tests() return #tests > 0 end

-- Undeclared global reads are errors in test files (they are typos).
function M._strict_globals(G)
  setmetatable(G, {
    __index = function(_, k)
      error(sfmt("undefined global '%s'", tostring(k)), 2)
    end,
  })
end

if core.selftest then M._crash_for_tests = core.crash end

return M
