-- Commands in a sandbox: commands.run and run_code; exit codes and the
-- CommandExit error; stdout/stderr separation and large output; special
-- characters and invalid UTF-8; cwd, envs, user; command timeout;
-- background processes (wait, kill, stdin, close stdin); process list;
-- connect by pid; signals. Depth: that of E2B's own SDK tests of commands.
-- Fixtures: base_sandbox (+ workdir), code_sandbox, sandbox_factory (envs
-- at create).
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local suite = require "suite"
local sandbox = require "e2e.sandbox"

local q = suite.sh_quote

-- A pid no process in a sandbox has (its pid namespace counts from 1).
local NO_PID = 999999

-- Runs cmd in sbx and returns the CommandExit error it must raise.
local function run_fails(sbx, cmd, opts)
  return expect(function() return sbx.commands:run(cmd, opts) end):raises("CommandExit")
end

-- The running process with this pid in commands:list(), or nil.
-- A command ended by signal `sig` (a number): envd says so by its exit
-- code, -1 (upstream's Go envd) or 128+sig (a shell's convention); the
-- words of its status are upstream's only where e2b-messages is declared.
local function ended_by_signal(e, sig, text)
  expect(e.exit_code == -1 or e.exit_code == 128 + sig,
    string.format("exit code -1 or %d for signal %d, got %s", 128 + sig, sig,
      tostring(e.exit_code))):eq(true)
  if text and e2e.has("e2b-messages") then expect(e.error):eq(text) end
end

local function listed(sbx, pid)
  for _, p in ipairs(sbx.commands:list()) do
    if p.pid == pid then return p end
  end
end

-- Text view of raw output, as E2B's SDKs decode it: every ill-formed UTF-8
-- subsequence becomes one U+FFFD (enough for the single bad bytes here).
local function as_text(s)
  local out, i = {}, 1
  while i <= #s do
    local ok, n = utf8.len(s, i)
    if ok then out[#out + 1] = s:sub(i); break end
    out[#out + 1] = s:sub(i, n - 1) .. "\u{FFFD}"
    i = n + 1
  end
  return table.concat(out)
end

-- SHA-256 of s, computed here (coreutils' sha256sum on a temporary
-- file), to compare a large output with the sum the sandbox computed on
-- the bytes it sent: both sides use tools every base has (no perl).
local function sha256_of(s)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  assert(f:write(s)); f:close()
  local p = assert(io.popen("sha256sum " .. q(path)))
  local out = p:read("a"); p:close()
  os.remove(path)
  return out:match("^(%x+)")
end

describe("run", function()
  test("echo prints its text and exits 0", function(base_sandbox)
    local r = base_sandbox.commands:run('echo "Hello, World!"')
    expect(r.stdout):eq("Hello, World!\n")
    expect(r.stderr):eq("")
    expect(r.exit_code):eq(0)
    expect(r.error):is_nil()
  end)

  test("stdout and stderr are kept apart", function(base_sandbox)
    local r = base_sandbox.commands:run(
      "echo out1; echo err1 >&2; echo out2; echo err2 >&2")
    expect(r.stdout):eq("out1\nout2\n")
    expect(r.stderr):eq("err1\nerr2\n")
  end)

  test("several MiB of output arrive whole on both streams", function(base_sandbox, workdir)
    local n_out, n_err = 6 * 1024 * 1024 + 7, 3 * 1024 * 1024
    -- stdout: random bytes (every value), also kept in a file for the
    -- sandbox-side checksum; stderr: a pattern we can rebuild here.
    local f = workdir .. "/big.bin"
    local r = base_sandbox.commands:run(("head -c %d /dev/urandom | tee %s; "
      .. "yes 0123456789abcde | head -n %d >&2")
      :format(n_out, q(f), n_err // 16), { timeout = 120 })
    expect(#r.stdout):eq(n_out)
    expect(#r.stderr):eq(n_err)
    expect(r.stderr == string.rep("0123456789abcde\n", n_err // 16),
      "stderr content"):eq(true)
    local sum = base_sandbox.commands:run("sha256sum " .. q(f))
    expect(sha256_of(r.stdout)):eq(sum.stdout:match("^(%x+)"))
  end)

  test("callbacks get the chunks in order as they arrive", function(base_sandbox)
    local outs, errs = {}, {}
    local r = base_sandbox.commands:run(
      "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; sleep 0.1; done",
      { on_stdout = function(c) outs[#outs + 1] = c end,
        on_stderr = function(c) errs[#errs + 1] = c end })
    expect(table.concat(outs)):eq("out1\nout2\nout3\nout4\nout5\n")
    expect(table.concat(errs)):eq("err1\nerr2\nerr3\nerr4\nerr5\n")
    -- sleeps between lines: the chunks came one by one, not at the end
    expect(#outs):gt(1)
    expect(r.stdout):eq(table.concat(outs))
    expect(r.stderr):eq(table.concat(errs))
  end)
end)

describe("exit codes", function()
  test("non-zero exit raises CommandExit with its output", function(base_sandbox)
    local e = run_fails(base_sandbox, "echo out; echo 'bad thing' >&2; exit 3")
    expect(e.exit_code):eq(3)
    expect(e.stdout):eq("out\n")
    expect(e.stderr):eq("bad thing\n")
    -- envd's status text is its own; the message is the client's
    if e2e.has("e2b-messages") then expect(e.error):eq("exit status 3") end
    expect(e.error):type("string")
    expect(e.message):eq("Command exited with code 3 and error:\nbad thing\n")
  end)

  test("each exit status is reported exactly", function(base_sandbox)
    for _, code in ipairs({ 1, 2, 42, 126, 255 }) do
      expect(run_fails(base_sandbox, "exit " .. code).exit_code, "exit " .. code)
        :eq(code)
    end
    expect(base_sandbox.commands:run("exit 0").exit_code):eq(0)
    expect(base_sandbox.commands:run("false || true").exit_code):eq(0)
  end)

  test("an unknown command exits 127 naming it", function(base_sandbox)
    local e = run_fails(base_sandbox, "no_such_cmd_e2e")
    expect(e.exit_code):eq(127)
    expect(e.stderr):contains("no_such_cmd_e2e")
    expect(e.stderr):contains("not found")
  end)
end)

describe("special characters", function()
  test("special characters round-trip through echo", function(base_sandbox)
    expect(base_sandbox.commands:run('echo "!@#$%^&*()_+"').stdout)
      :eq("!@#$%^&*()_+\n")
    for _, s in ipairs({ "!@#$%^&*()_+", [[it's "quoted" `x` $HOME \n]],
                         "héllo wörld 世界 🚀", "tab\there", "line1\nline2\n\nline4" }) do
      expect(base_sandbox.commands:run("printf '%s' " .. q(s)).stdout):eq(s)
    end
  end)

  test("a multiline command runs every line", function(base_sandbox)
    local r = base_sandbox.commands:run("echo one\necho 'two\nthree'\necho four")
    expect(r.stdout):eq("one\ntwo\nthree\nfour\n")
  end)

  test("invalid UTF-8 arrives as raw bytes and reads as U+FFFD", function(base_sandbox)
    local chunks = {}
    local r = base_sandbox.commands:run([[printf 'a%.0s' {1..8191}; printf '\xe2']],
      { on_stdout = function(c) chunks[#chunks + 1] = c end })
    expect(r.exit_code):eq(0)
    local raw = string.rep("a", 8191) .. "\xE2"
    expect(r.stdout == raw, "raw stdout is 8191 'a' and 0xE2"):eq(true)
    expect(table.concat(chunks) == raw, "callback bytes"):eq(true)
    expect(as_text(r.stdout) == string.rep("a", 8191) .. "\u{FFFD}", "text view")
      :eq(true)
  end)

  test("a character split at a chunk boundary stays whole", function(base_sandbox)
    local r = base_sandbox.commands:run(
      [[printf 'a%.0s' {1..8191}; printf 'é世z'; printf 'b%.0s' {1..40000}]])
    local want = string.rep("a", 8191) .. "é世z" .. string.rep("b", 40000)
    expect(#r.stdout):eq(#want)
    expect(r.stdout == want, "stdout bytes"):eq(true)
    expect(utf8.len(r.stdout)):eq(8191 + 3 + 40000)
  end)
end)

describe("cwd, envs and user", function()
  test("cwd sets the working directory", function(base_sandbox, workdir)
    local r = base_sandbox.commands:run("pwd; echo hi > here.txt", { cwd = workdir })
    expect(r.stdout):eq(workdir .. "\n")
    expect(base_sandbox.files:read(workdir .. "/here.txt")):eq("hi\n")
  end)

  test("a missing cwd is an error naming it", function(base_sandbox, workdir)
    local missing = workdir .. "/no/such/dir"
    local e = expect(function()
      return base_sandbox.commands:run("pwd", { cwd = missing })
    end):raises("InvalidArgument")
    expect(e.message):contains(missing)
    if e2e.has("e2b-messages") then expect(e.message):contains("does not exist") end
  end)

  test("per-command envs reach the command", function(base_sandbox)
    local envs = { FOO = "bar", E2E_SPACES = "a b  c", E2E_UNI = "wörld 🚀" }
    local r = base_sandbox.commands:run(
      'printf "%s|%s|%s" "$FOO" "$E2E_SPACES" "$E2E_UNI"', { envs = envs })
    expect(r.stdout):eq("bar|a b  c|wörld 🚀")
    r = base_sandbox.commands:run("printenv FOO", { envs = envs })
    expect(r.stdout):eq("bar\n")
  end)

  test("a per-command env is not leaked to a later command", function(base_sandbox)
    local r = base_sandbox.commands:run('echo "$E2E_SCOPED"',
      { envs = { E2E_SCOPED = "only-once" } })
    expect(r.stdout):eq("only-once\n")
    r = base_sandbox.commands:run('echo "${E2E_SCOPED-unset}"')
    expect(r.stdout):eq("unset\n")
    r = base_sandbox.commands:run('echo "${E2E_SCOPED-unset}"', { user = "root" })
    expect(r.stdout):eq("unset\n")
  end)

  test("envs given at create reach every command", function(sandbox_factory)
    local sbx = sandbox_factory { timeout = 120,
      envs = { E2E_GLOBAL = "from-create", E2E_BOTH = "create" } }
    local r = sbx.commands:run('echo "$E2E_GLOBAL|$E2E_BOTH"')
    expect(r.stdout):eq("from-create|create\n")
    -- a per-command value wins for that command only
    r = sbx.commands:run('echo "$E2E_GLOBAL|$E2E_BOTH"', { envs = { E2E_BOTH = "cmd" } })
    expect(r.stdout):eq("from-create|cmd\n")
    r = sbx.commands:run('echo "$E2E_BOTH"', { user = "root" })
    expect(r.stdout):eq("create\n")
  end)

  -- Which user is the default is the platform's (E2B: user; FC does not
  -- say): read it, then hold it to the contract, HOME is that user's home
  -- in /etc/passwd and the command starts there. E2E_DEFAULT_USER, when
  -- set, is the operator's word for it and is held to as well.
  test("the default user runs in its own home", function(base_sandbox)
    local r = base_sandbox.commands:run('whoami; echo "$HOME"; pwd; getent passwd "$(whoami)"')
    local user, home, cwd, pw = r.stdout:match("^([^\n]+)\n([^\n]+)\n([^\n]+)\n([^\n]+)\n$")
    expect(user, "whoami, $HOME, pwd, passwd line in " .. r.stdout):truthy()
    expect(home):eq(pw:match("^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:([^:]*):"))
    expect(cwd):eq(home)
    if os.getenv("E2E_DEFAULT_USER") then expect(user):eq(sandbox.default_user) end
  end)

  test("user root runs as root with its home", function(base_sandbox)
    local r = base_sandbox.commands:run('whoami; id -u; echo "$HOME"; pwd',
      { user = "root" })
    expect(r.stdout):eq("root\n0\n/root\n/root\n")
  end)

  test("an unknown user is refused naming it", function(base_sandbox)
    local e = expect(function()
      return base_sandbox.commands:run("whoami", { user = "nobody_e2e" })
    end):raises("Authentication")
    expect(e.message):contains("nobody_e2e")
  end)
end)

describe("timeout", function()
  test("a command longer than its timeout raises Timeout", function(base_sandbox)
    local m = suite.unique("to")
    expect(function() return base_sandbox.commands:run(
      "sleep 30 # " .. m, { timeout = 2 }) end):raises("Timeout")
    -- envd ends it at the deadline (the client may give up first)
    e2e.eventually(function()
      for _, p in ipairs(base_sandbox.commands:list()) do
        if p.args and p.args[3] == "sleep 30 # " .. m then return false end
      end
      return true
    end, { timeout = 10 })
  end)

  test("a fast command with a timeout succeeds", function(base_sandbox)
    local r = base_sandbox.commands:run("echo quick", { timeout = 10 })
    expect(r.stdout):eq("quick\n")
  end)

  test("a background command is killed at its timeout", function(base_sandbox)
    local h = base_sandbox.commands:run("echo started; sleep 30",
      { background = true, timeout = 2 })
    expect(function() return h:wait() end):raises("Timeout")
    e2e.eventually(function() return listed(base_sandbox, h.pid) == nil end,
      { timeout = 10 })
    expect(base_sandbox.commands:kill(h.pid)):eq(false)
  end)
end)

-- envd ends a command when its output is closed, not when its shell
-- exits: children left behind that still hold stdout keep it running
-- (E2B's envd; `cmd &` needs its output redirected to detach).
describe("children holding the output", function()
  test("the end waits for output of a child left behind", function(base_sandbox)
    local r = base_sandbox.commands:run("(sleep 1; echo late) & echo early",
      { timeout = 30 })
    expect(r.stdout):eq("early\nlate\n")
  end)

  test("a child holding stdout keeps the command until its timeout", function(base_sandbox, workdir)
    local pidfile = workdir .. "/holder.pid"
    expect(function()
      return base_sandbox.commands:run(
        "sleep 30 & echo $! > " .. q(pidfile) .. "; echo started", { timeout = 3 })
    end):raises("Timeout")
    local child = base_sandbox.files:read(pidfile):match("^(%d+)\n$")
    expect(child, "child pid"):truthy()
    -- the deadline ends the whole group, the child included
    e2e.eventually(function()
      return base_sandbox.commands:run("kill -0 " .. child .. " 2>/dev/null && echo alive || true")
        .stdout == ""
    end, { timeout = 10 })
  end)

  test("a child with its output redirected does not hold the command", function(base_sandbox)
    local r = base_sandbox.commands:run("sleep 30 >/dev/null 2>&1 & echo $!",
      { timeout = 30 })
    local child = r.stdout:match("^(%d+)\n$")
    expect(child, "child pid in " .. r.stdout):truthy()
    base_sandbox.commands:run("kill -9 " .. child)
  end)
end)

describe("background processes", function()
  test("wait returns the outcome of a background command", function(base_sandbox)
    local h = base_sandbox.commands:run("sleep 0.3; echo bg; echo bgerr >&2",
      { background = true })
    expect(math.type(h.pid)):eq("integer")
    local r = h:wait()
    expect(r.exit_code):eq(0)
    expect(r.stdout):eq("bg\n")
    expect(r.stderr):eq("bgerr\n")
    h = base_sandbox.commands:run("echo partial; exit 7", { background = true })
    local e = expect(function() return h:wait() end):raises("CommandExit")
    expect(e.exit_code):eq(7)
    expect(e.stdout):eq("partial\n")
    -- after the end, wait gives the same outcome again
    expect(expect(function() return h:wait() end):raises("CommandExit").exit_code):eq(7)
  end)

  test("kill ends a background process", function(base_sandbox)
    local h = base_sandbox.commands:run("sleep 30", { background = true })
    expect(base_sandbox.commands:kill(h.pid)):eq(true)
    local e = expect(function() return h:wait() end):raises("CommandExit")
    ended_by_signal(e, 9, "signal: killed")
    expect(run_fails(base_sandbox, "kill -0 " .. h.pid).exit_code):eq(1)
    expect(base_sandbox.commands:kill(h.pid), "already gone"):eq(false)
  end)

  test("kill through the handle ends a process that ignores TERM", function(base_sandbox)
    local h = base_sandbox.commands:run("trap '' TERM; echo ready; sleep 60",
      { background = true, timeout = 30 })
    e2e.eventually(function() return h.stdout == "ready\n" end, { timeout = 10 })
    expect(h:kill()):eq(true)
    local e = expect(function() return h:wait() end):raises("CommandExit")
    ended_by_signal(e, 9)
    expect(e.stdout):eq("ready\n")
    expect(h:kill()):eq(false)
  end)

  test("kill of a non-existing pid returns false", function(base_sandbox)
    expect(base_sandbox.commands:kill(NO_PID)):eq(false)
  end)

  test("stdin: cat echoes what is sent", function(base_sandbox)
    local h = base_sandbox.commands:run("cat",
      { background = true, stdin = true, timeout = 30 })
    base_sandbox.commands:send_stdin(h.pid, "hello\n")
    e2e.eventually(function() return h.stdout == "hello\n" end, { timeout = 10 })
    h:send_stdin("again\n")
    h:close_stdin()
    local r = h:wait()
    expect(r.exit_code):eq(0)
    expect(r.stdout):eq("hello\nagain\n")
  end)

  test("close_stdin gives EOF: cat exits 0 with all its input", function(base_sandbox)
    local h = base_sandbox.commands:run("cat; echo end",
      { background = true, stdin = true, timeout = 30 })
    h:send_stdin("part1 ")
    h:send_stdin("part2\n")
    h:close_stdin()
    local r = h:wait()
    expect(r.exit_code):eq(0)
    expect(r.stdout):eq("part1 part2\nend\n")
  end)

  test("special characters and lines pass through stdin", function(base_sandbox)
    local data = "!@#$%^&*()_+\n'\"`$HOME\\n\nhéllo 世界 🚀\n\nlast line"
    local h = base_sandbox.commands:run("cat",
      { background = true, stdin = true, timeout = 30 })
    h:send_stdin(data)
    base_sandbox.commands:close_stdin(h.pid)
    expect(h:wait().stdout):eq(data)
  end)

  test("empty stdin is accepted", function(base_sandbox)
    local h = base_sandbox.commands:run("cat",
      { background = true, stdin = true, timeout = 30 })
    h:send_stdin("")
    h:close_stdin()
    local r = h:wait()
    expect(r.exit_code):eq(0)
    expect(r.stdout):eq("")
  end)

  test("stdin to a process started without stdin is refused", function(base_sandbox)
    local h = base_sandbox.commands:run("sleep 30", { background = true })
    e2e.defer(function() h:kill() end)
    -- E2B's envd answers internal (SandboxError); which code is not promised.
    local e = expect(function() return h:send_stdin("x") end):raises()
    expect({ "Sandbox", "InvalidArgument" }, tostring(e)):contains(type(e) == "table" and e.class)
    if e2e.has("e2b-messages") then expect(e.message):contains("stdin not enabled") end
  end)

  test("without stdin the process reads end of input", function(base_sandbox)
    local r = base_sandbox.commands:run("cat; echo end", { timeout = 20 })
    expect(r.stdout):eq("end\n")
  end)

  test("wait callbacks of a background command get its chunks in order", function(base_sandbox)
    local h = base_sandbox.commands:run(
      "for i in 1 2 3; do echo o$i; echo e$i >&2; sleep 0.1; done", { background = true })
    local outs, errs = {}, {}
    local r = h:wait { on_stdout = function(c) outs[#outs + 1] = c end,
                       on_stderr = function(c) errs[#errs + 1] = c end }
    expect(table.concat(outs)):eq("o1\no2\no3\n")
    expect(table.concat(errs)):eq("e1\ne2\ne3\n")
    expect(r.stdout):eq("o1\no2\no3\n")
  end)
end)

describe("process list and connect", function()
  test("list shows two background sleeps with cmd, args and cwd", function(base_sandbox, workdir)
    local m = suite.unique("list")
    local c1, c2 = "sleep 30 # " .. m .. "-1", "sleep 31 # " .. m .. "-2"
    local h1 = base_sandbox.commands:run(c1,
      { background = true, cwd = workdir, envs = { E2E_LIST = m } })
    e2e.defer(function() h1:kill() end)
    local h2 = base_sandbox.commands:run(c2, { background = true, cwd = workdir })
    e2e.defer(function() h2:kill() end)
    local procs = base_sandbox.commands:list()
    expect(#procs):ge(2)
    local p1, p2 = listed(base_sandbox, h1.pid), listed(base_sandbox, h2.pid)
    expect(p1, "first sleep listed"):truthy()
    expect(p2, "second sleep listed"):truthy()
    expect({ p1.cmd, p1.args }):eq({ "/bin/bash", { "-l", "-c", c1 } })
    expect({ p2.cmd, p2.args }):eq({ "/bin/bash", { "-l", "-c", c2 } })
    -- cwd and envs are in upstream envd's entries; FC's envd may leave
    -- them out, never report other values
    if p1.cwd ~= nil then expect({ p1.cwd, p2.cwd }):eq({ workdir, workdir }) end
    if p1.envs ~= nil and next(p1.envs) ~= nil then expect(p1.envs):eq({ E2E_LIST = m }) end
  end)

  test("connect by pid gives the same process and its later output", function(base_sandbox)
    local h = base_sandbox.commands:run("cat",
      { background = true, stdin = true, timeout = 30 })
    local pid = h.pid
    h:disconnect()
    local h2 = base_sandbox.commands:connect(pid)
    expect(h2.pid):eq(pid)
    base_sandbox.commands:send_stdin(pid, "after connect\n")
    h2:close_stdin()
    local r = h2:wait()
    expect(r.exit_code):eq(0)
    expect(r.stdout):eq("after connect\n")
  end)

  test("connect to a non-existing pid raises NotFound", function(base_sandbox)
    local c = base_sandbox.commands
    local e = expect(function() return c:connect(NO_PID) end):raises("NotFound")
    if e2e.has("e2b-messages") then
      expect(e.message):contains("process with pid " .. NO_PID .. " not found")
    end
    expect(function() return c:send_stdin(NO_PID, "x") end):raises("NotFound")
    expect(function() return c:close_stdin(NO_PID) end):raises("NotFound")
  end)
end)

describe("signals", function()
  test("a command ended by a signal reports it", function(base_sandbox)
    local e = run_fails(base_sandbox, "echo before; kill -TERM $$; echo after")
    ended_by_signal(e, 15, "signal: terminated")
    expect(e.stdout):eq("before\n")
  end)

  test("a background command gets TERM sent by another command", function(base_sandbox)
    local h = base_sandbox.commands:run(
      "trap 'echo got TERM; kill $!; exit 42' TERM; echo ready; sleep 60 >/dev/null 2>&1 & wait",
      { background = true, timeout = 30 })
    e2e.eventually(function() return h.stdout == "ready\n" end, { timeout = 10 })
    base_sandbox.commands:run("kill -TERM " .. h.pid)
    local e = expect(function() return h:wait() end):raises("CommandExit")
    expect(e.exit_code):eq(42)
    expect(e.stdout):eq("ready\ngot TERM\n")
  end)

  test("kill ends a command whose child outlives it", function(base_sandbox)
    local h = base_sandbox.commands:run("setsid sleep 300 & echo $!; wait",
      { background = true, timeout = 30 })
    e2e.eventually(function() return h.stdout:find("\n") ~= nil end, { timeout = 10 })
    local child = h.stdout:match("^(%d+)\n$")
    expect(child, "child pid in " .. h.stdout):truthy()
    e2e.defer(function() base_sandbox.commands:run("kill -9 " .. child .. " || true") end)
    expect(h:kill()):eq(true)
    local e = expect(function() return h:wait() end):raises("CommandExit")
    ended_by_signal(e, 9, "signal: killed")
  end)

  test("a command that traps TERM runs its handler", function(base_sandbox)
    local e = run_fails(base_sandbox,
      "trap 'echo got TERM; exit 42' TERM; kill -TERM $$; sleep 5")
    expect(e.exit_code):eq(42)
    expect(e.stdout):eq("got TERM\n")
  end)
end)

describe("run_code", function()
  test("python code gives its result and stdout", function(code_sandbox)
    local x = code_sandbox:run_code("print('hello from code')\n6 * 7")
    expect(x.error):is_nil()
    expect(x.text):eq("42")
    -- how print's output is split into log entries is not fixed
    expect(table.concat(x.logs.stdout)):eq("hello from code\n")
    expect(x.logs.stderr):eq({})
  end)
end)
