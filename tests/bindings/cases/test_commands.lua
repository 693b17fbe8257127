-- sbx.commands and command handles (docs/lua-api.md "sbx.commands"),
-- against abx-local. Run by tests/bindings/run.py (scenario "commands") with
-- ABX_E2E_SELFTEST=1 (e2e.commands._open_streams counts the streams C
-- holds, to prove that no error path strands one).
local e2e = require "e2e"
local commands = require "e2e.commands"
local test, expect = e2e.test, e2e.expect


local function find_proc(sbx, marker)
  for _, p in ipairs(sbx.commands:list()) do
    if p.args and p.args[3] and p.args[3]:find(marker, 1, true) then return p end
  end
end

local function marker() return ("M%d%d"):format(os.time(), math.random(1, 1e9)) end

test("run returns stdout, stderr and exit code", function(base_sandbox)
  local r = base_sandbox.commands:run("echo hello; echo oops >&2")
  expect(r.stdout):eq("hello\n")
  expect(r.stderr):eq("oops\n")
  expect(r.exit_code):eq(0)
  expect(math.type(r.exit_code)):eq("integer")
  expect(r.error):is_nil()
end)

test("run uses bash -l -c with envs, cwd and user", function(base_sandbox)
  local r = base_sandbox.commands:run('echo "$0|$FOO|$(pwd)|$(whoami)|$1"',
    { envs = { FOO = "bar baz" }, cwd = "/tmp", user = "root" })
  expect(r.stdout):eq("/bin/bash|bar baz|/tmp|root|\n")
  r = base_sandbox.commands:run("whoami; pwd")
  expect(r.stdout):eq("user\n/home/user\n")
  r = base_sandbox.commands:run("shopt -q login_shell && echo login")
  expect(r.stdout):eq("login\n")
end)

test("non-zero exit raises CommandExit with its fields", function(base_sandbox)
  local e = expect(function() return base_sandbox.commands:run(
                  "echo out; echo 'bad thing' >&2; exit 3") end):raises("CommandExit")
  expect(e.exit_code):eq(3)
  expect(e.stdout):eq("out\n")
  expect(e.stderr):eq("bad thing\n")
  expect(e.error):eq("exit status 3")
  expect(e.message):eq("Command exited with code 3 and error:\nbad thing\n")
  expect(e.status):is_nil()
  expect(tostring(e)):eq("CommandExit: Command exited with code 3 and error:\nbad thing\n")
end)

test("timeout raises Timeout and 0 means none", function(base_sandbox)
  local t0 = os.time()
  expect(function()
    return base_sandbox.commands:run("sleep 20", { timeout = 1 })
  end):raises("Timeout")
  expect(os.time() - t0):lt(15)
  local r = base_sandbox.commands:run("sleep 1.2; echo done", { timeout = 0 })
  expect(r.stdout):eq("done\n")
end)

test("stdin is closed unless asked for; round trip through a handle", function(base_sandbox)
  -- stdin=false (default): cat sees end of input at once.
  expect(base_sandbox.commands:run("cat; echo end").stdout):eq("end\n")
  local h = base_sandbox.commands:run("cat", { background = true, stdin = true })
  h:send_stdin("hello ")
  base_sandbox.commands:send_stdin(h.pid, "world\n\0bin\255")
  h:close_stdin()
  local r = h:wait()
  expect(r.stdout):eq("hello world\n\0bin\255")
  -- commands:close_stdin(pid) too
  h = base_sandbox.commands:run("wc -c", { background = true, stdin = true })
  h:send_stdin("12345")
  base_sandbox.commands:close_stdin(h.pid)
  expect(h:wait().stdout:match("%d+")):eq("5")
end)

test("callbacks get every chunk; output is raw bytes", function(base_sandbox)
  local outs, errs = {}, {}
  local r = base_sandbox.commands:run(
    "for i in 1 2 3; do echo line$i; echo err$i >&2; sleep 0.1; done",
    { on_stdout = function(c) outs[#outs + 1] = c end,
      on_stderr = function(c) errs[#errs + 1] = c end })
  expect(table.concat(outs)):eq("line1\nline2\nline3\n")
  expect(table.concat(errs)):eq("err1\nerr2\nerr3\n")
  expect(r.stdout):eq(table.concat(outs))
  -- every byte value, and a large output
  r = base_sandbox.commands:run([[perl -e 'print map chr, 0 .. 255']])
  local all = {}
  for i = 0, 255 do all[#all + 1] = string.char(i) end
  expect(r.stdout == table.concat(all), "256 byte values"):eq(true)
  r = base_sandbox.commands:run("head -c 3000000 /dev/zero | tr '\\0' a")
  expect(#r.stdout):eq(3000000)
  expect(r.stdout == string.rep("a", 3000000)):eq(true)
end)

test("output beyond the cap is a clear error, the stream closed", function(base_sandbox)
  local before = commands._open_streams()
  local e = expect(function()
    return base_sandbox.commands:run("head -c 70000000 /dev/zero")
  end):raises("Protocol")
  expect(e.code):eq("output_cap")
  expect(e.message):match("^command stdout exceeded the 64 MiB cap")
  expect(commands._open_streams()):eq(before)
end)

test("a callback that raises closes the stream and propagates", function(base_sandbox)
  local before = commands._open_streams()
  local m = marker()
  local sentinel = setmetatable({}, { __tostring = function() return "sentinel" end })
  local e = expect(function() return base_sandbox.commands:run(
    "echo first; sleep 30 # " .. m,
    { on_stdout = function() error(sentinel) end }) end):raises()
  expect(rawequal(e, sentinel), "the callback's own error value"):eq(true)
  expect(commands._open_streams(), "streams held by C"):eq(before)
  -- disconnecting never kills: the process is still there
  local p = find_proc(base_sandbox, m)
  expect(p, "process still running"):truthy()
  expect(base_sandbox.commands:kill(p.pid)):eq(true)
  -- a string error from a background handle's wait callback
  local h = base_sandbox.commands:run("echo a; sleep 30", { background = true })
  local msg = expect(function()
    return h:wait({ on_stdout = function() error("cb failed", 0) end })
  end):raises()
  expect(msg):eq("cb failed")
  expect(commands._open_streams()):eq(before)
  expect(expect(function() return h:wait() end):raises()):match("command handle is closed")
  expect(h:kill()):eq(true)
end)

test("background handle: pid, list, output so far, kill", function(base_sandbox)
  local before = commands._open_streams()
  local m = marker()
  local cmd = "echo ready; sleep 60 # " .. m
  local h = base_sandbox.commands:run(cmd, { background = true })
  expect(math.type(h.pid)):eq("integer")
  expect(h.pid):gt(0)
  expect(commands._open_streams()):eq(before + 1)
  e2e.eventually(function() return h.stdout == "ready\n" end, { timeout = 10, interval = 0.1 })
  expect(h.stderr):eq("")
  local p = find_proc(base_sandbox, m)
  expect(p, "listed"):truthy()
  expect(p.pid):eq(h.pid)
  expect(p.cmd):eq("/bin/bash")
  expect(p.args):eq({ "-l", "-c", cmd })
  expect(type(p.envs)):eq("table")
  expect(h:kill()):eq(true)
  local e = expect(function() return h:wait() end):raises("CommandExit")
  expect(e.exit_code):eq(-1)
  expect(e.stdout):eq("ready\n")
  expect(e.error):match("killed")
  expect(commands._open_streams()):eq(before)
  expect(h:kill(), "already gone"):eq(false)
  expect(find_proc(base_sandbox, m)):is_nil()
end)

test("wait returns the result again and run's callbacks apply", function(base_sandbox)
  local seen = {}
  local h = base_sandbox.commands:run("echo x; echo y >&2",
    { background = true, on_stdout = function(c) seen[#seen + 1] = c end })
  local r = h:wait()
  expect(r.stdout):eq("x\n")
  expect(r.stderr):eq("y\n")
  expect(table.concat(seen)):eq("x\n")
  expect(h:wait()):eq(r)
  expect(tostring(h)):match("^e2e.CommandHandle %(pid %d+, ended%)$")
  h = base_sandbox.commands:run("exit 7", { background = true })
  expect(expect(function() return h:wait() end):raises().exit_code):eq(7)
  expect(expect(function() return h:wait() end):raises().exit_code):eq(7)
end)

test("connect to a running process; disconnect and __close never kill", function(base_sandbox)
  local before = commands._open_streams()
  local h = base_sandbox.commands:run("echo go; sleep 1; echo tick; sleep 60", { background = true })
  local pid = h.pid
  h:disconnect()
  h:disconnect()  -- idempotent
  expect(expect(function() return h:wait() end):raises()):match("command handle is closed")
  expect(commands._open_streams()):eq(before)
  do
    local c <close> = base_sandbox.commands:connect(pid, { timeout = 30 })
    expect(c.pid):eq(pid)
    e2e.eventually(function() return c.stdout:find("tick", 1, true) end, { timeout = 10, interval = 0.1 })
    expect(commands._open_streams()):eq(before + 1)
  end
  expect(commands._open_streams(), "__close disconnected"):eq(before)
  local c = base_sandbox.commands:connect(pid)
  expect(base_sandbox.commands:kill(pid)):eq(true)
  expect(expect(function() return c:wait() end):raises().exit_code):eq(-1)
  expect(base_sandbox.commands:kill(pid)):eq(false)
  -- a handle dropped without close is closed by __gc
  base_sandbox.commands:run("sleep 5", { background = true })
  collectgarbage(); collectgarbage()
  expect(commands._open_streams(), "__gc disconnected"):eq(before)
end)

test("operational errors are error values", function(base_sandbox)
  expect(function() return base_sandbox.commands:connect(999999) end):raises("NotFound")
  expect(base_sandbox.commands:kill(999999)):eq(false)
  expect(function() return base_sandbox.commands:send_stdin(999999, "x") end):raises("NotFound")
  expect(function() return base_sandbox.commands:close_stdin(999999) end):raises("NotFound")
  expect(function() return base_sandbox.commands:run("true",
                     { cwd = "/no/such/dir" }) end):raises("InvalidArgument")
  expect(function() return base_sandbox.commands:run("true",
                     { user = "nobody-here" }) end):raises("Authentication")
  -- stdin to a process started without it
  local h = base_sandbox.commands:run("sleep 30", { background = true })
  expect(function() return h:send_stdin("x") end):raises("Sandbox")
  h:kill()
end)

test("misuse raises at once with a clear message", function(base_sandbox)
  local c = base_sandbox.commands
  local function m(f) return expect(function() return f() end):raises() end
  expect(m(function() c:run() end)):match("bad argument #1 to 'run' %(string expected, got no value%)")
  expect(m(function() c:run(nil) end)):match("bad argument #1 to 'run' %(string expected, got nil%)")
  expect(m(function() c:run("true", { timout = 1 }) end)):match("unknown option 'timout' to 'run'$")
  expect(m(function() c:run("true", { [1] = true }) end))
    :match("bad option key to 'run' %(string expected, got number%)$")
  expect(m(function() c:run("true", "x") end)):match("bad argument #2 to 'run' %(table expected, got string%)")
  expect(m(function() c:run("true", { cwd = 5 }) end))
    :match("bad argument #2 to 'run' %(option 'cwd': string expected, got number%)")
  expect(m(function() c:run("true", { background = 1 }) end)):match("option 'background': boolean expected, got number")
  expect(m(function() c:run("true", { timeout = -1 }) end)):match("option 'timeout': seconds out of range")
  expect(m(function() c:run("true", { timeout = 0/0 }) end)):match("option 'timeout': seconds out of range")
  expect(m(function() c:run("true", { timeout = "5" }) end)):match("option 'timeout': number expected, got string")
  expect(m(function() c:run("true", { on_stdout = "print" }) end))
    :match("option 'on_stdout': function expected, got string")
  expect(m(function() c:run("true", { envs = { A = 1 } }) end)):match("envs")
  expect(m(function() c:run("true", { envs = "A=1" }) end)):match("option 'envs': table expected, got string")
  expect(m(function() c.run({}, "true") end)):match("e2e.Commands expected, got table")
  expect(m(function() c:kill("x") end)):match("bad argument #1 to 'kill' %(number expected, got string%)")
  expect(m(function() c:kill(-1) end)):match("bad argument #1 to 'kill' %(pid out of range%)")
  expect(m(function() c:kill(2^40) end)):match("pid out of range")
  expect(m(function() c:kill(1.5) end)):match("number has no integer representation")
  expect(m(function() c:connect(1, { time = 1 }) end)):match("unknown option 'time' to 'connect'$")
  expect(m(function() c:send_stdin(1) end)):match("bad argument #2 to 'send_stdin' %(string expected, got no value%)")
  expect(m(function() c:close_stdin() end)):match("bad argument #1 to 'close_stdin' %(number expected, got no value%)")
  local h = c:run("true", { background = true })
  expect(m(function() h:wait { on_stdot = print } end)):match("unknown option 'on_stdot' to 'wait'$")
  expect(m(function() h:send_stdin({}) end)):match("bad argument #1 to 'send_stdin' %(string expected, got table%)")
  expect(m(function() h.wait({}) end)):match("e2e.CommandHandle expected, got table")
  h:wait()
  -- wait from its own callback
  h = c:run("echo a; sleep 0.2; echo b", { background = true })
  local inner
  h:wait { on_stdout = function() inner = inner or select(2, pcall(h.wait, h)) end }
  expect(inner):match("command handle is busy")
end)

test("a killed sandbox refuses every call", function(sandbox_factory)
  local sbx = sandbox_factory {}
  local c = sbx.commands
  local h = c:run("sleep 60", { background = true })
  expect(sbx:kill()):eq(true)
  local want = "sandbox " .. sbx.id .. " was killed"
  expect(expect(function() return c:run("true") end):raises()):contains(want)
  expect(expect(function() return c:list() end):raises()):contains(want)
  expect(expect(function() return c:kill(h.pid) end):raises()):contains(want)
  expect(expect(function() return h:wait() end):raises()):contains(want)
  expect(expect(function() return h:kill() end):raises()):contains(want)
  h:disconnect()  -- closing never needs the sandbox
end)
