---@meta e2e.remote
-- LuaLS definitions (never run) of `require "e2e.remote"`
-- (bindings/sdk/remote.lua; docs/lua-api.md "e2e.remote").
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- Declarative remote execution: each call of a remote function runs Python in a fresh sandbox.
---@class e2e.remote
---@field null lightuserdata A None inside a list or dict (= json.null).
local remote = {}

--- Declares a remote function; misuse raises at once.
---@param opts e2e.remote.FnOpts
---@return e2e.remote.Function
function remote.fn(opts) end

--- Wraps s to be sent as Python bytes even when it is valid UTF-8.
---@param s string
---@return e2e.remote.Bytes
function remote.bytes(s) end

--- Waits for every call (so every sandbox is killed), then raises the first error if any.
---@param calls e2e.remote.Call[]
---@return any[] results In order.
function remote.gather(calls) end

--- The options of remote.fn.
---@class e2e.remote.FnOpts
---@field python string The source, Python 3 (required).
---@field entry? string The function to call (default "main").
---@field template? string The sandbox template (default "code-interpreter-v1").
---@field envs? table<string, string> Sandbox envs at create.
---@field files? table<string, string|e2e.remote.Bytes> Files written under the call's cwd (relative paths).
---@field timeout? number The call's limit in s, in (0, 86400] (default 60).

--- A remote function: calling it is f:spawn(...):wait().
---@class e2e.remote.Function
---@overload fun(...: any): any
local Function = {}

--- Starts a call in a fresh sandbox and returns at once; arguments that cannot be sent raise first.
---@param ... any
---@return e2e.remote.Call
function Function:spawn(...) end

--- A pending remote call (f:spawn(...)).
---@class e2e.remote.Call
---@field sandbox_id string The id of the call's sandbox.
local Call = {}

--- Waits for the runner and returns the result or raises; the sandbox is killed on every path.
--- Waiting again gives the same outcome.
---@return any
function Call:wait() end

--- A string to send as Python bytes (remote.bytes).
---@class e2e.remote.Bytes

return remote
