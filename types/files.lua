---@meta e2e.files
-- LuaLS definitions (never run) of sbx.files and watchers
-- (bindings/sdk/lua_files.c, lua_watcher.c; docs/lua-api.md "sbx.files").
-- `require "e2e.files"` gives the methods table. Relative paths are
-- resolved by envd against the user's home.
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- sbx.files: read, write, list and watch files in the sandbox.
---@class e2e.Files
local Files = {}

--- Reads a whole file (at most 64 MiB). A directory raises InvalidArgument, a missing file NotFound.
---@param path string
---@param opts? e2e.Files.ReadOpts
---@return string
function Files:read(path, opts) end

--- Writes a file (parents created).
---@param path string
---@param data string
---@param opts? e2e.Files.UserOpts
---@return e2e.WriteInfo
function Files:write(path, data, opts) end

--- Writes several files in one request (an empty list gives {} without one).
---@param entries e2e.WriteEntry[]
---@param opts? e2e.Files.UserOpts
---@return e2e.WriteInfo[]
function Files:write_many(entries, opts) end

--- Lists a directory (depth < 1 raises InvalidArgument).
---@param path string
---@param opts? e2e.Files.ListOpts
---@return e2e.EntryInfo[]
function Files:list(path, opts) end

--- The entry of a path.
---@param path string
---@param opts? e2e.Files.UserOpts
---@return e2e.EntryInfo
function Files:stat(path, opts) end

--- Whether a path exists.
---@param path string
---@param opts? e2e.Files.UserOpts
---@return boolean
function Files:exists(path, opts) end

--- Makes a directory (and its parents); false if it existed.
---@param path string
---@param opts? e2e.Files.UserOpts
---@return boolean
function Files:make_dir(path, opts) end

--- Renames old to new; the entry of new.
---@param old string
---@param new string
---@param opts? e2e.Files.UserOpts
---@return e2e.EntryInfo
function Files:rename(old, new, opts) end

--- Removes a path (a missing path is not an error).
---@param path string
---@param opts? e2e.Files.UserOpts
function Files:remove(path, opts) end

--- Watches a directory: a watcher to take events from.
---@param path string
---@param opts? e2e.Files.WatchOpts
---@return e2e.Watcher
function Files:watch_dir(path, opts) end

--- Uploads a local file, streamed from disk.
---@param local_path string
---@param remote_path string
---@param opts? e2e.Files.UserOpts
---@return e2e.WriteInfo
function Files:upload(local_path, remote_path, opts) end

--- Downloads a file to a local path, streamed to disk through a temporary file (nothing is left on error).
---@param remote_path string
---@param local_path string
---@param opts? e2e.Files.UserOpts
function Files:download(remote_path, local_path, opts) end

--- A URL to download a file, signed when the sandbox has an access token.
---@param path string
---@param opts? e2e.Files.UrlOpts
---@return string
function Files:download_url(path, opts) end

--- A URL to upload a file, signed when the sandbox has an access token.
---@param path string
---@param opts? e2e.Files.UrlOpts
---@return string
function Files:upload_url(path, opts) end

--- The options of the files methods that take only a user.
---@class e2e.Files.UserOpts
---@field user? string Who does it (Basic auth to envd; default: the sandbox's default user).

--- The options of files:read.
---@class e2e.Files.ReadOpts
---@field format? "text"|"bytes" "text" (default) replaces ill-formed UTF-8 by U+FFFD; "bytes" is exact.
---@field user? string Who reads it.

--- The options of files:list.
---@class e2e.Files.ListOpts
---@field depth? integer How deep to list (default 1).
---@field user? string Who lists it.

--- The options of files:watch_dir.
---@class e2e.Files.WatchOpts
---@field recursive? boolean Watch subdirectories too (default false; Template below envd 0.1.4).
---@field timeout? number The watch's lifetime in s (default 60).
---@field user? string Who watches.

--- The options of files:download_url and files:upload_url.
---@class e2e.Files.UrlOpts
---@field user? string Who the URL acts as.
---@field expires? integer Seconds the signature is valid, 1 s to 100 years (InvalidArgument on an unsigned sandbox).

--- One file to write (files:write_many).
---@class e2e.WriteEntry
---@field path string
---@field data string

--- What a write or upload made.
---@class e2e.WriteInfo
---@field name string
---@field type "file"|"dir"|"symlink"
---@field path string

--- A filesystem entry (files:list, stat, rename).
---@class e2e.EntryInfo
---@field name string
---@field type "file"|"dir"|"symlink" A live symlink has its target's type and symlink_target set.
---@field path string
---@field size integer
---@field mode integer The permission bits.
---@field permissions string
---@field owner string
---@field group string
---@field modified_time string RFC 3339.
---@field symlink_target? string

--- A directory watch (files:watch_dir); __close stops it.
---@class e2e.Watcher
local Watcher = {}

--- The next event, or nil after wait_s (0 polls; nil waits until an event or the watch's timeout).
--- A stream that ended raises its error (Timeout at the watch's timeout), then "watcher is stopped".
---@param wait_s? number
---@return e2e.FilesystemEvent?
function Watcher:next(wait_s) end

--- Stops the watch.
function Watcher:stop() end

--- A filesystem event of a watcher.
---@class e2e.FilesystemEvent
---@field name string Relative to the watched directory.
---@field type "create"|"write"|"remove"|"rename"|"chmod"

return Files
