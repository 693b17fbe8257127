---@meta e2e.sandbox
-- LuaLS definitions (never run) of `require "e2e.sandbox"` and the sandbox
-- handle (bindings/sdk/lua_sandbox.c, lua_sbxlist.c, lua_sbxhttp.c,
-- lua_code.c; docs/lua-api.md "sandbox module"). ctest lint.types checks
-- every name and option against the built binary and the bindings.
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- Create, connect to, list and kill sandboxes. Shape follows E2B's SDK names.
---@class e2e.sandbox
---@field default_timeout integer The default sandbox lifetime in s (E2E_SANDBOX_TTL).
---@field server_template string The template of the server tests (E2E_SERVER_TEMPLATE).
---@field server_port integer The port the server template listens on (E2E_SERVER_PORT).
---@field short_ttl integer The lifetime used by tests that wait for a TTL to expire (E2E_SHORT_TTL, default 20 s).
---@field default_user string Who a command runs as when no user= is given (E2E_DEFAULT_USER, default "user").
---@field default_home string That user's home: "/root" for root, else "/home/<user>".
local sandbox = {}

--- Creates a sandbox, tagged and recorded in the run ledger; it belongs to the current scope.
--- Outside a test, a fixture or an exec script it raises "sandbox.create: only inside a test or a fixture".
---@param opts? e2e.sandbox.CreateOpts
---@return e2e.Sandbox
function sandbox.create(opts) end

--- Connects to a sandbox by id (POST /connect: resumes a paused one, never shortens its timeout).
--- NotFound when it does not exist.
---@param id string
---@param opts? e2e.sandbox.ConnectOpts
---@return e2e.Sandbox
function sandbox.connect(id, opts) end

--- Lists sandboxes (every page followed), as info tables.
---@param opts? e2e.sandbox.ListOpts
---@return e2e.SandboxInfo[]
function sandbox.list(opts) end

--- Kills a sandbox by id; false when it was already gone.
---@param id string
---@return boolean
function sandbox.kill(id) end

--- The options of sandbox.create.
---@class e2e.sandbox.CreateOpts
---@field template? string The template (default "base").
---@field timeout? integer The sandbox's lifetime in s, 1..2592000 (default E2E_SANDBOX_TTL).
---@field metadata? table<string, string> Metadata; the tags e2e, e2e_test, e2e_nonce are merged over it.
---@field envs? table<string, string> Environment variables of every process (a name must not contain '=').
---@field secure? boolean Envd access token required (default true).
---@field allow_internet_access? boolean Outbound internet access.
---@field network? e2e.sandbox.NetworkOpts The sandbox's network rules (NewSandbox `network`).

--- The `network` option of sandbox.create; only the members given are sent.
---@class e2e.sandbox.NetworkOpts
---@field allow_public_traffic? boolean false: user ports need the traffic access token (sbx:http sends it).
---@field allow_out? string[] Outbound destinations allowed (CIDRs, IPs, host names).
---@field deny_out? string[] Outbound destinations denied (CIDRs, IPs, host names).

--- The options of sandbox.connect and sbx:connect.
---@class e2e.sandbox.ConnectOpts
---@field timeout? integer The sandbox's timeout in s from now (default E2E_SANDBOX_TTL; never shortened).

--- The options of sandbox.list.
---@class e2e.sandbox.ListOpts
---@field metadata? table<string, string> Only sandboxes with this metadata.
---@field state? "running"|"paused"|"running,paused" Only sandboxes in this state.
---@field limit? integer The page size, 1..100.
---@field api_key? string List with another API key instead of the configured one ("" sends none).

--- A sandbox handle. Fields are read-only; after a kill every method raises "sandbox <id> was killed"
--- except kill (false), is_running (false), the fields and tostring ("Sandbox(<id>)").
---@class e2e.Sandbox
---@field id string The sandbox id (= sandbox_id).
---@field sandbox_id string The sandbox id.
---@field template_id string The template it was created from.
---@field envd_version string The version of its envd ("" when the platform reports none).
---@field domain string The domain of its host names.
---@field commands e2e.Commands Run and manage processes in the sandbox.
---@field files e2e.Files Read, write and watch files in the sandbox.
local Sandbox = {}

--- The sandbox's info from the platform.
---@return e2e.SandboxInfo
function Sandbox:info() end

--- Kills the sandbox; false if it was already killed or gone.
---@return boolean
function Sandbox:kill() end

--- Sets the sandbox's timeout to seconds from now (1..2592000).
---@param seconds integer
function Sandbox:set_timeout(seconds) end

--- Whether envd answers /health (false when the data plane says the sandbox is gone).
---@return boolean
function Sandbox:is_running() end

--- Connects again (same id): resumes a paused sandbox, refreshes the tokens.
---@param opts? e2e.sandbox.ConnectOpts
---@return e2e.Sandbox
function Sandbox:connect(opts) end

--- Pauses the sandbox; false when it was already paused.
---@param opts? e2e.Sandbox.PauseOpts
---@return boolean
function Sandbox:pause(opts) end

--- The platform's metrics of the sandbox (Template below envd 0.1.5).
---@return table[] metrics As the platform sends them (cpuCount, cpuUsedPct, memUsed, memTotal, ...).
function Sandbox:metrics() end

--- The host name of a port: "<port>-<id>.<domain>".
---@param port integer
---@return string
function Sandbox:get_host(port) end

--- A URL of a port that works as is in any client: http(s)://<port>-<id>.<domain><path>.
---@param port integer
---@param path? string Starts with '/' (default "/").
---@return string
function Sandbox:url(port, path) end

--- An HTTP request to a port of the sandbox, routing headers added; non-2xx is returned, not raised.
---@param port integer
---@param opts? e2e.Sandbox.HttpOpts
---@return e2e.HttpResponse
function Sandbox:http(port, opts) end

--- Runs code in the code interpreter; an error of the code itself is in `error`, not raised.
---@param code string
---@param opts? e2e.Sandbox.RunCodeOpts
---@return e2e.Execution
function Sandbox:run_code(code, opts) end

--- Creates a code interpreter context.
---@param opts? e2e.Sandbox.CodeContextOpts
---@return e2e.CodeContext
function Sandbox:create_code_context(opts) end

--- The options of sbx:pause.
---@class e2e.Sandbox.PauseOpts
---@field keep_memory? boolean Keep the memory snapshot (default true; the body is {"memory": keep_memory}).

--- The options of sbx:http.
---@class e2e.Sandbox.HttpOpts
---@field method? string The HTTP method (default "GET").
---@field path? string The request path (default "/").
---@field body? string The request body.
---@field headers? table<string, string> At most 12 request headers (HTTP-token names, values without CR/LF).
---@field timeout? number The request's timeout in s (default 30).

--- The options of sbx:run_code.
---@class e2e.Sandbox.RunCodeOpts
---@field language? string The language (exclusive with context).
---@field context? e2e.CodeContext|string A context from create_code_context, or its id.
---@field timeout? number The execution's timeout in s (default 300).
---@field envs? table<string, string> Environment variables of the execution.
---@field on_stdout? fun(text: string) Called with each stdout text as it arrives.
---@field on_stderr? fun(text: string) Called with each stderr text as it arrives.

--- The options of sbx:create_code_context.
---@class e2e.Sandbox.CodeContextOpts
---@field language? string The context's language.
---@field cwd? string The context's working directory.

--- A sandbox's info (sbx:info(), sandbox.list); string fields the platform leaves empty are nil.
---@class e2e.SandboxInfo
---@field sandbox_id string
---@field template_id? string
---@field name? string The template's alias.
---@field client_id? string
---@field metadata table<string, string>
---@field started_at? string RFC 3339.
---@field end_at? string RFC 3339.
---@field state? "running"|"paused"
---@field cpu_count integer
---@field memory_mb integer
---@field disk_size_mb integer
---@field envd_version? string
---@field network? table The platform's network object, in the create option's names (allow_public_traffic, ...).

--- The reply of sbx:http and http.request: headers lower-case, a repeated header's values joined with ", ".
---@class e2e.HttpResponse
---@field status integer
---@field body string
---@field headers table<string, string>

--- The outcome of sbx:run_code.
---@class e2e.Execution
---@field results e2e.ExecutionResult[]
---@field logs {stdout: string[], stderr: string[]}
---@field error? e2e.ExecutionError The code's own error, nil when none.
---@field text? string The main result's text.
---@field execution_count? integer

--- One result of an execution (the interpreter's formats: text, html, png, json, ...).
---@class e2e.ExecutionResult
---@field text? string
---@field is_main_result? boolean
---@field [string] any

--- An error of the executed code.
---@class e2e.ExecutionError
---@field name string
---@field value string
---@field traceback string

--- A code interpreter context.
---@class e2e.CodeContext
---@field id string
---@field language string
---@field cwd string

return sandbox
