---@meta e2e.json
-- LuaLS definitions (never run) of `require "e2e.json"`
-- (bindings/lua_json*.c; docs/lua-api.md "e2e.json").
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- A strict JSON codec (RFC 8259) for test code.
---@class e2e.json
---@field null lightuserdata The sentinel for JSON null (equal to itself everywhere).
local json = {}

--- Decodes a JSON text; null becomes json.null, an integer that fits int64 a Lua integer.
--- Bad input raises "json.decode: <reason> at offset N".
---@param s string
---@return any
function json.decode(s) end

--- Encodes a value, compact and deterministic (object keys sorted).
--- Raises "json.encode: <reason> at <path>" for what JSON cannot hold.
---@param v any
---@return string
function json.encode(v) end

--- Marks t (or a new table) to encode as an object even when empty; returns it.
---@param t? table
---@return table
function json.object(t) end

--- Whether v is a table marked as an object (json.object, or an empty {} decoded).
---@param v any
---@return boolean
function json.is_object(v) end

return json
