-- The public names of the Lua API as the built binary has them, for
-- tests/lint/test_types.py (ctest lint.types):
--   abx-e2e exec types_api.lua SANDBOX_ID
-- prints one "KIND<TAB>CLASS<TAB>NAME" line per name, CLASS being the
-- class of types/*.lua that must declare it. Names starting with "_" are
-- the runner's internals and self-test hooks, not API.
--
-- Module tables and metatables are read directly (the registry, by their
-- luaL_newmetatable names); the Lua-side classes through the upvalues of
-- the functions that use them. e2e.CommandHandle and e2e.Watcher are made
-- on first use only: the script connects to SANDBOX_ID on the fake
-- platform test_types.py serves, whose envd answers nothing, and calls
-- commands:connect and files:watch_dir, which make the metatable before
-- their request fails.
local sandbox_id = ...
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local remote = require "e2e.remote"

local function out(kind, class, name)
  io.write(kind, "\t", class, "\t", name, "\n")
end

local function public(k)
  return type(k) == "string" and k:sub(1, 1) ~= "_"
end

local function members(class, t)
  if type(t) ~= "table" then error("types_api: no table for " .. class, 0) end
  for k in pairs(t) do
    if public(k) then out("member", class, k) end
  end
end

-- The upvalue called name of the Lua function fn (what says the
-- implementation changed shape when it is gone).
local function upvalue(fn, name, what)
  for i = 1, 255 do
    local n, v = debug.getupvalue(fn, i)
    if n == nil then break end
    if n == name then return v end
  end
  error("types_api: " .. what .. " has no upvalue '" .. name .. "'", 0)
end

-- The methods of a metatable: __index itself, or the table a C __index
-- closure keeps as its first upvalue (fields are handled by the closure).
local function methods(mtname)
  local mt = debug.getregistry()[mtname]
  if type(mt) ~= "table" then error("types_api: no metatable " .. mtname, 0) end
  local idx = mt.__index
  if type(idx) == "function" then
    local _, t = debug.getupvalue(idx, 1)
    idx = t
  end
  members(mtname, idx)
end

-- Modules: every require name the bindings preload.
for name in pairs(package.preload) do
  if name == "e2e" or name:sub(1, 4) == "e2e." then out("module", "-", name) end
end

members("e2e", e2e)
members("e2e.sandbox", sandbox)
members("e2e.http", require "e2e.http")
members("e2e.json", require "e2e.json")
members("e2e.remote", remote)
members("e2e.Commands", require "e2e.commands")
members("e2e.Files", require "e2e.files")

local sbx = sandbox.connect(sandbox_id)
pcall(sbx.commands.connect, sbx.commands, 1)
pcall(sbx.files.watch_dir, sbx.files, "/")
for _, mt in ipairs { "e2e.Sandbox", "e2e.Commands", "e2e.Files", "e2e.CommandHandle",
  "e2e.Watcher" } do
  methods(mt)
end

-- Lua-side classes.
members("e2e.Expect", getmetatable(e2e.expect(nil)).__index)
local fn = remote.fn { python = "def main():\n    pass\n" }
members("e2e.remote.Function", getmetatable(fn).__index)
members("e2e.remote.Call", upvalue(remote.gather, "Call", "remote.gather"))
local check_spec = upvalue(remote.fn, "check_spec", "remote.fn")
for k in pairs(upvalue(check_spec, "OPTIONS", "remote.fn's check_spec")) do
  out("option", "e2e.remote.FnOpts", k)
end

-- Built-in fixtures, and the capability names a test may require.
for name, def in pairs(upvalue(e2e.fixture, "fixtures", "e2e.fixture")) do
  if def.conftest == "builtin" then out("fixture", "e2e.BuiltinFixtures", name) end
end
local core = upvalue(e2e.fixture, "core", "e2e.fixture")
for _, name in ipairs(core.config.cap_names) do out("alias", "e2e.Capability", name) end
