-- Run by `abx-e2e exec` (scenario "exec"): the script is one scope, so
-- sandbox.create and e2e.defer work at its top level; its sandboxes are
-- tracked, tagged and deleted when it ends, also when it fails.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"

local mode = arg[1]
local a = sandbox.create {}
local b = sandbox.create { metadata = { e2e = "forged" } }
print("ids " .. a.id .. " " .. b.id)
print("tag " .. b:info().metadata.e2e)
print("out " .. a.commands:run("echo hi").stdout:match("^(.-)%s*$"))
e2e.defer(function() print("deferred " .. tostring(a:is_running())) end)
if mode == "fail" then error("script failed on purpose") end
if mode == "exit" then os.exit(7) end
