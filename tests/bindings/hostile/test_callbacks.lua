-- What a careless test does with callbacks and handles (held up when
-- tried; kept as guards): yields across the C boundary, re-entrant calls,
-- odd error values, handles used after their scope, __close and __gc.
local e2e = require "e2e"
local expect = e2e.expect

local function test(name, fn) e2e.test(name, { platform = true }, fn) end
local commands = require "e2e.commands"

local function streams() return commands._open_streams and commands._open_streams() or 0 end

test("yield from a callback is an error, not a hang", function(base_sandbox)
  local co = coroutine.wrap(function()
    return base_sandbox.commands:run("echo hi", { on_stdout = function(c) coroutine.yield(c) end })
  end)
  local ok, err = pcall(co)
  expect(ok):eq(false)
  expect(tostring(err)):match("yield across")
  expect(streams()):eq(0)
end)

test("callbacks re-enter and raise any value", function(base_sandbox)
  local c = base_sandbox.commands
  local inner
  c:run("echo x", { on_stdout = function() inner = c:run("echo inner").stdout end })
  expect(inner):eq("inner\n")
  local t = {}
  for _, v in ipairs { t, 42, false } do
    local ok, err = pcall(c.run, c, "echo x", { on_stdout = function() error(v) end })
    expect(ok):eq(false)
    expect(rawequal(err, v)):eq(true)
  end
  expect(streams()):eq(0)
end)

local kept, kept_handle, kept_watcher
test("keep a sandbox and a handle past the test", function(sandbox_factory)
  kept = sandbox_factory {}
  kept_handle = kept.commands:run("sleep 30", { background = true })
  kept_watcher = kept.files:watch_dir("/tmp")
end)

test("use after the scope raises 'was killed'", function()
  local msg = "sandbox " .. kept.id .. " was killed"
  for _, f in ipairs {
    function() kept:info() end, function() kept.files:read("/etc/hostname") end,
    function() kept.commands:run("true") end, function() kept_handle:wait() end,
    function() kept_watcher:next(0) end,
  } do
    local ok, err = pcall(f)
    expect(ok):eq(false)
    expect(tostring(err)):match(msg)
  end
  expect(kept:kill()):eq(false)
  expect(kept:is_running()):eq(false)
  -- Their streams went with that first use, not at some later __gc.
  expect(streams()):eq(0)
  expect(require("e2e.files")._open_watchers()):eq(0)
end)

test("close, collect and kill under open handles", function(sandbox_factory)
  local s = sandbox_factory {}
  -- In a function of its own: temporaries left in this frame's registers
  -- would keep a handle reachable until it returns.
  local function work()
    do
      -- luacheck: push ignore 211 (held only to be closed at the end of the block)
      local h <close> = s.commands:run("sleep 5", { background = true })
      local w <close> = s.files:watch_dir("/tmp")
      -- luacheck: pop
    end
    local h = s.commands:run("sleep 0.2; echo done", { background = true })
    expect(h:wait { on_stdout = function() collectgarbage() end }.stdout):eq("done\n")
    s.commands:run("sleep 30", { background = true })
    s:kill()
  end
  work()
  collectgarbage(); collectgarbage()
  expect(streams()):eq(0)
end)

-- __gc called by hand (getmetatable is open to tests): before the fix a
-- sandbox handle stayed usable with its endpoint freed, and every call
-- failed as "Authentication: ... unauthorized access".
test("__gc by hand closes the handle", function(sandbox_factory)
  local s = sandbox_factory {}
  local h = s.commands:run("sleep 30", { background = true })
  local w = s.files:watch_dir("/tmp")
  for _, o in ipairs { h, w, s } do
    local gc = getmetatable(o).__gc
    gc(o); gc(o)  -- idempotent
  end
  for _, f in ipairs {
    function() s:info() end, function() s.commands:run("true") end,
    function() s.files:exists("/tmp") end, function() s:kill() end,
  } do
    local ok, err = pcall(f)
    expect(ok):eq(false)
    expect(tostring(err)):match("sandbox handle is closed")
  end
  expect(select(2, pcall(h.wait, h))):match("command handle is closed")
  expect(select(2, pcall(w.next, w, 0))):match("watcher is stopped")
  expect(tostring(s)):eq("Sandbox(" .. s.id .. ")")
  expect(streams()):eq(0)
end)

-- A callback that kills its own sandbox: the call used to fail with
-- "Protocol: ... stream truncated before its end"; it now says what
-- happened, as every later call does.
test("a callback kills its own sandbox", function(sandbox_factory)
  local s = sandbox_factory {}
  local ok, err = pcall(s.commands.run, s.commands, "echo x; sleep 2; echo y",
    { on_stdout = function() s:kill() end })
  expect(ok):eq(false)
  expect(tostring(err)):match("sandbox " .. s.id .. " was killed")
  local c = sandbox_factory { template = "code-interpreter-v1" }
  ok, err = pcall(c.run_code, c, "import time\nprint(1, flush=True)\ntime.sleep(2)",
    { on_stdout = function() c:kill() end })
  expect(ok):eq(false)
  expect(tostring(err)):match("sandbox " .. c.id .. " was killed")
  expect(streams()):eq(0)
end)
