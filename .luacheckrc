-- luacheck configuration (Debian package lua-check). Run `luacheck .` at
-- the repository root; ctest lint.luacheck keeps it at zero warnings.
--
-- Every Lua state abx-e2e opens is plain Lua 5.4 with strict globals
-- (prelude.lua, M._strict_globals: reading an undeclared global is an
-- error). The test DSL adds no globals: a test file writes
-- `local e2e = require "e2e"` and takes test, describe, expect, fixture...
-- from that table. Only `abx-e2e exec` sets one global, `arg`.
--
-- Fixtures come by parameter name: a test that names one only to have it
-- set up (or, in tests/, to see it fail) does not use the value; such a
-- line says so with `-- luacheck: ignore 212 (used for its effect)`.
std = "lua54"
not_globals = { "arg" }
max_line_length = 120

-- `luacheck .` checks only these (directories, so new files count).
include_files = {
  "bindings/*.lua",   -- embedded modules: prelude, expect, fixtures, remote
  "tests-lua/**/*.lua",
  "tests/**/*.lua",
  "types/**/*.lua",
  "bench/**/*.lua",
}
exclude_files = {
  -- Deliberately not Lua: the runner's report of a file that does not
  -- compile (tests/runner/harness.py).
  "tests/runner/cases/test_syntax_error.lua",
}

-- `abx-e2e exec SCRIPT args...` passes its arguments in the global `arg`
-- (host/exec.c).
files["tests/bindings/cases/exec_script.lua"] = { read_globals = { "arg" } }

-- LuaLS definition files (`---@meta`, never run): stubs with unused
-- parameters and empty bodies, class tables only filled with stubs, and
-- the globals they declare for editors.
files["types/"] = {
  allow_defined_top = true,
  unused_args = false,
  ignore = {
    "131",   -- a declared global is never used
    "241",   -- `local Class = {}` gets method stubs and is never read
  },
}
