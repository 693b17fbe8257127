---@meta e2e.commands
-- LuaLS definitions (never run) of sbx.commands and command handles
-- (bindings/sdk/lua_commands.c, lua_cmdhandle.c; docs/lua-api.md
-- "sbx.commands"). `require "e2e.commands"` gives the methods table.
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- sbx.commands: run and manage processes in the sandbox. Every call checks the sandbox is alive.
---@class e2e.Commands
local Commands = {}

--- Runs `/bin/bash -l -c cmd`. Foreground: the result, CommandExit on a non-zero exit, Timeout on timeout.
--- background = true: a handle at once.
---@param cmd string
---@param opts? e2e.Commands.RunOpts
---@return e2e.CommandResult|e2e.CommandHandle
function Commands:run(cmd, opts) end

--- The running processes.
---@return e2e.ProcessInfo[]
function Commands:list() end

--- SIGKILLs a process; false if there is no such process.
---@param pid integer
---@return boolean
function Commands:kill(pid) end

--- Connects to a running process: a handle to wait on.
---@param pid integer
---@param opts? e2e.Commands.ConnectOpts
---@return e2e.CommandHandle
function Commands:connect(pid, opts) end

--- Sends data to a process's stdin (any size, in 4 MiB requests, in order).
---@param pid integer
---@param data string
function Commands:send_stdin(pid, data) end

--- Closes a process's stdin (Sandbox error below envd 0.5.2).
---@param pid integer
function Commands:close_stdin(pid) end

--- The options of commands:run.
---@class e2e.Commands.RunOpts
---@field background? boolean Return a handle at once instead of waiting (default false).
---@field envs? table<string, string> Environment variables of the process.
---@field cwd? string The working directory.
---@field user? string Who runs it (default: the sandbox's default user).
---@field timeout? number The process lifetime in s: envd kills it then (default 60; 0 = none).
---@field on_stdout? fun(chunk: string) Called with raw stdout chunks as they arrive (background: during wait).
---@field on_stderr? fun(chunk: string) Called with raw stderr chunks as they arrive (background: during wait).
---@field stdin? boolean false (default): the process gets /dev/null; true: send_stdin feeds it.

--- The options of commands:connect.
---@class e2e.Commands.ConnectOpts
---@field timeout? number How long its stream may stay open, in s (default 60).

--- A foreground command's result (also handle:wait()).
---@class e2e.CommandResult
---@field stdout string Everything written to stdout (up to 64 MiB).
---@field stderr string Everything written to stderr (up to 64 MiB).
---@field exit_code integer
---@field error? string envd's end error, nil on success.

--- A running process (commands:list()).
---@class e2e.ProcessInfo
---@field pid integer
---@field tag? string
---@field cmd? string
---@field args string[]
---@field envs table<string, string>
---@field cwd? string

--- A background command (commands:run{background = true}, commands:connect); __close disconnects, never kills.
---@class e2e.CommandHandle
---@field pid integer The process id.
---@field stdout string Stdout received so far (takes what has arrived, never waits).
---@field stderr string Stderr received so far (takes what has arrived, never waits).
local CommandHandle = {}

--- Waits for the end: the result, or raises CommandExit; after the end it gives the same outcome again.
---@param opts? e2e.CommandHandle.WaitOpts
---@return e2e.CommandResult
function CommandHandle:wait(opts) end

--- SIGKILLs the process; false if there is no such process.
---@return boolean
function CommandHandle:kill() end

--- Sends data to the process's stdin.
---@param data string
function CommandHandle:send_stdin(data) end

--- Closes the process's stdin.
function CommandHandle:close_stdin() end

--- Lets the stream go; the process keeps running (kill/send_stdin/close_stdin still work).
function CommandHandle:disconnect() end

--- The options of handle:wait.
---@class e2e.CommandHandle.WaitOpts
---@field on_stdout? fun(chunk: string) Called with raw stdout chunks as they arrive.
---@field on_stderr? fun(chunk: string) Called with raw stderr chunks as they arrive.

return Commands
