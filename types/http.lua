---@meta e2e.http
-- LuaLS definitions (never run) of `require "e2e.http"`
-- (bindings/sdk/lua_http.c; docs/lua-api.md "e2e.http").
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- A plain HTTP client for what needs no credential of ours: signed file URLs, a service by its host name.
---@class e2e.http
local http = {}

--- Sends one request with only the caller's headers (plus Host, Accept, User-Agent).
--- Non-2xx is returned; transport failures raise Connection/Timeout; misuse raises a plain error.
---@param opts e2e.http.RequestOpts
---@return e2e.HttpResponse
function http.request(opts) end

--- The options of http.request.
---@class e2e.http.RequestOpts
---@field url string http(s):// with a host.
---@field method? string The HTTP method (default "GET").
---@field body? string The request body.
---@field headers? table<string, string> At most 32 request headers (HTTP-token names, values without CR/LF).
---@field timeout? number The request's timeout in s (default 30; 0 = none).

return http
