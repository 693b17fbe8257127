-- agent-sandbox-server inside a real sandbox (E2E_SERVER_TEMPLATE, port
-- sandbox.server_port), driven through the data plane: /health, /hello,
-- /capabilities, /system/info, /commands, /files/, /process/, /env
-- (secrets masked), /ports, and the JSON errors (400, 404, 405, 409, 411,
-- 413). The contract is abx-local/templates/python-hello/CONTRACT.md.
-- Fixtures: server_sandbox.
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local sandbox = require "e2e.sandbox"
local suite = require "suite"
local json = require "e2e.json"
local http = require "e2e.http"

local PORT = sandbox.server_port
local RFC3339 = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d"

-- One request to the server (on port, default PORT). A table body is sent
-- as JSON. Returns the status, the decoded JSON body (or the raw body when
-- it is not JSON) and the whole reply.
local function api(sbx, method, path, body, headers, port)
  if type(body) == "table" then
    body = json.encode(body)
    headers = headers or {}
    headers["Content-Type"] = "application/json"
  end
  local r = sbx:http(port or PORT, { method = method, path = path, body = body,
    headers = headers, timeout = 90 })
  local ctype = r.headers["content-type"] or ""
  local data = r.body
  if ctype:find("application/json", 1, true) and r.body ~= "" then data = json.decode(r.body) end
  return r.status, data, r
end

-- The contract's error shape: JSON {"error": {"code", "message"}}.
local function expect_error(status, data, r, want_status, want_code, fragment)
  expect(status, "status of: " .. tostring(r.body)):eq(want_status)
  expect(r.headers["content-type"]):match("^application/json")
  expect(type(data)):eq("table")
  expect(data.error.code):eq(want_code)
  expect(data.error.message):type("string")
  if fragment then expect(data.error.message):contains(fragment) end
end

-- A fresh directory for one test in the file's server sandbox.
local function scratch_dir(sbx)
  local dir = "/tmp/e2e-server/" .. suite.unique("t")
  local st = api(sbx, "PUT", "/files" .. dir .. "/.keep", "")
  expect(st):eq(201)
  return dir
end

-- Waits for a server on port (default PORT) to answer /health.
local function wait_server(sbx, port)
  e2e.eventually(function()
    local ok, r = pcall(sbx.http, sbx, port or PORT, { path = "/health", timeout = 5 })
    return ok and r.status == 200
  end, { timeout = 60, interval = 0.5, message = "agent-sandbox-server start-up" })
end

local function set_of(list, key)
  local s = {}
  for _, v in ipairs(list) do s[key and v[key] or v] = true end
  return s
end

-- Calls api(...) and checks the error shape (see expect_error).
local function api_error(sbx, method, path, body, want_status, want_code, fragment, headers,
                         port)
  local st, data, r = api(sbx, method, path, body, headers, port)
  expect_error(st, data, r, want_status, want_code, fragment)
  return data, r
end

-- A chunked upload needs a request without Content-Length, which sbx:http
-- never sends: e2e.http, by host name "<port>-<id>.<domain>".
local function post_chunked(sbx, path, data)
  local r = http.request { url = sbx:url(PORT, path), method = "POST",
    body = data, headers = { ["Transfer-Encoding"] = "chunked",
      ["Content-Type"] = "application/json" }, timeout = 60 }
  return r.status, r.body
end

describe("service", function()
  test("health and the custom hello route", function(server_sandbox)
    local st, b = api(server_sandbox, "GET", "/health")
    expect(st):eq(200)
    expect(b):eq({ status = "ok" })
    st, b = api(server_sandbox, "GET", "/hello")
    expect(st):eq(200)
    expect(b):eq({ message = "Hello, world!", server = "agent-sandbox-server" })
    st, b = api(server_sandbox, "GET", "/hello?name=Lua%20E2E")
    expect(st):eq(200)
    expect(b.message):eq("Hello, Lua E2E!")
    api_error(server_sandbox, "GET", "/hello?name=" .. ("x"):rep(101), nil, 400,
      "invalid_request", "name")
  end)

  test("capabilities list the features and routes", function(server_sandbox)
    local st, b = api(server_sandbox, "GET", "/capabilities")
    expect(st):eq(200)
    expect(b.name):eq("agent-sandbox-server")
    expect(b.version):type("string")
    expect(b.features):eq({ "commands", "files", "process", "env", "ports", "system", "hello" })
    local routes = {}
    for _, r in ipairs(b.routes) do routes[r.method .. " " .. r.path] = true end
    for _, want in ipairs({ "GET /health", "GET /hello", "GET /capabilities", "GET /system/info",
      "POST /commands", "GET /files/*", "PUT /files/*", "DELETE /files/*", "GET /process/",
      "POST /process/", "GET /process/{id}", "DELETE /process/{id}",
      "POST /process/{id}/stdin", "GET /env", "GET /ports" }) do
      expect(routes[want], "route " .. want):eq(true)
    end
  end)

  test("system info has its fields and types", function(server_sandbox)
    local st, b = api(server_sandbox, "GET", "/system/info")
    expect(st):eq(200)
    -- $E2B_SANDBOX_ID where the platform sets it, else null (CONTRACT.md)
    if type(b.sandboxId) == "string" then expect(b.sandboxId):eq(server_sandbox.id)
    else expect(b.sandboxId):eq(json.null) end
    expect(b.port):eq(PORT)
    expect(b.os):eq("Linux")
    -- the server runs as the template's user (E2E_DEFAULT_USER) in its home
    expect(b.user):eq(sandbox.default_user)
    expect(b.home):eq(sandbox.default_home)
    expect(b.cwd):eq(sandbox.default_home)
    local _, id = api(server_sandbox, "POST", "/commands", { cmd = "id -u" })
    expect(b.uid):eq(math.tointeger(tonumber(id.stdout)))
    for _, k in ipairs({ "hostname", "kernel", "arch", "python" }) do
      expect(type(b[k]), k):eq("string")
      expect(#b[k], k):gt(0)
    end
    for _, k in ipairs({ "pid", "uid", "gid", "cpuCount", "memoryTotalBytes" }) do
      expect(math.type(b[k]), k):eq("integer")
    end
    expect(b.cpuCount):ge(1)
    expect(b.memoryTotalBytes):gt(0)
    expect(type(b.uptimeSeconds)):eq("number")
    expect(b.uptimeSeconds):ge(0)
    expect(b.templateId == json.null or type(b.templateId) == "string", "templateId"):eq(true)
  end)
end)

describe("commands", function()
  test("exit code, stdout and stderr", function(server_sandbox)
    local st, b = api(server_sandbox, "POST", "/commands",
      { cmd = "echo out; echo err >&2; exit 3" })
    expect(st):eq(200)
    expect(b.exitCode):eq(3)
    expect(b.stdout):eq("out\n")
    expect(b.stderr):eq("err\n")
    expect(b.timedOut):eq(false)
    expect(b.truncated):eq(false)
    expect(math.type(b.durationMs)):eq("integer")
    b = select(2, api(server_sandbox, "POST", "/commands", { cmd = "kill -9 $$" }))
    expect(b.exitCode):eq(-9)
  end)

  test("cwd, env and stdin reach the command", function(server_sandbox)
    local dir = scratch_dir(server_sandbox)
    local _, b = api(server_sandbox, "POST", "/commands", { cmd = "pwd", cwd = dir })
    expect(b.stdout):eq(dir .. "\n")
    _, b = api(server_sandbox, "POST", "/commands", { cmd = "pwd" })
    expect(b.stdout):eq(sandbox.default_home .. "\n")
    _, b = api(server_sandbox, "POST", "/commands",
      { cmd = 'printf "%s|%s" "$E2E_A" "$E2E_B"', env = { E2E_A = "value a", E2E_B = "b=c" } })
    expect(b.stdout):eq("value a|b=c")
    _, b = api(server_sandbox, "POST", "/commands", { cmd = "cat; echo END", stdin = "one\ntwo\n" })
    expect(b.stdout):eq("one\ntwo\nEND\n")
    api_error(server_sandbox, "POST", "/commands", { cmd = "pwd", cwd = dir .. "/missing" },
      400, "invalid_request", "cwd")
  end)

  test("a timeout kills the command and reports timedOut", function(server_sandbox)
    local st, b = api(server_sandbox, "POST", "/commands", { cmd = "echo started; sleep 60", timeout = 1 })
    expect(st):eq(200)
    expect(b.timedOut):eq(true)
    expect(b.exitCode):eq(json.null)
    expect(b.stdout):eq("started\n")
  end)
end)

describe("files", function()
  test("put creates then replaces, get returns the bytes", function(server_sandbox)
    local dir = scratch_dir(server_sandbox)
    local bytes = {}
    for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
    local data = table.concat(bytes)
    local st, b = api(server_sandbox, "PUT", "/files" .. dir .. "/sub/bin.dat", data)
    expect(st):eq(201)
    expect(b):eq({ path = dir .. "/sub/bin.dat", size = 256, created = true })
    st, b = api(server_sandbox, "PUT", "/files" .. dir .. "/sub/bin.dat", "new")
    expect(st):eq(200)
    expect(b):eq({ path = dir .. "/sub/bin.dat", size = 3, created = false })
    local _, _, r = api(server_sandbox, "GET", "/files" .. dir .. "/sub/bin.dat")
    expect(r.status):eq(200)
    expect(r.body):eq("new")
    expect(r.headers["content-type"]):eq("application/octet-stream")
    st = api(server_sandbox, "PUT", "/files" .. dir .. "/with%20space.txt", data)
    expect(st):eq(201)
    _, _, r = api(server_sandbox, "GET", "/files" .. dir .. "/with%20space.txt")
    expect(r.body):eq(data)
    api_error(server_sandbox, "PUT", "/files" .. dir .. "/sub", "x", 400, "invalid_request", "directory")
  end)

  test("listing and stat describe entries", function(server_sandbox)
    local dir = scratch_dir(server_sandbox)
    api(server_sandbox, "PUT", "/files" .. dir .. "/b.txt", "12345")
    api(server_sandbox, "PUT", "/files" .. dir .. "/a/inner.txt", "x")
    local st, b = api(server_sandbox, "GET", "/files" .. dir)
    expect(st):eq(200)
    expect(b.path):eq(dir)
    expect(b.type):eq("directory")
    local names = {}
    for _, e in ipairs(b.entries) do names[#names + 1] = e.name end
    expect(names):eq({ ".keep", "a", "b.txt" })
    local file = b.entries[3]
    expect(file.path):eq(dir .. "/b.txt")
    expect(file.type):eq("file")
    expect(file.size):eq(5)
    expect(file.mode):match("^0[0-7][0-7][0-7]$")
    expect(file.modifiedAt):match(RFC3339)
    expect(b.entries[2].type):eq("directory")
    st, b = api(server_sandbox, "GET", "/files" .. dir .. "/b.txt?stat=1")
    expect(st):eq(200)
    expect(b.name):eq("b.txt")
    expect(b.size):eq(5)
    expect(b.type):eq("file")
    server_sandbox.commands:run("ln -s b.txt " .. suite.sh_quote(dir .. "/link"))
    b = select(2, api(server_sandbox, "GET", "/files" .. dir .. "/link?stat=1"))
    expect(b.type):eq("symlink")
    api_error(server_sandbox, "GET", "/files" .. dir .. "/missing.txt", nil, 404, "not_found", "missing.txt")
  end)

  test("delete removes files and refuses non-empty dirs", function(server_sandbox)
    local dir = scratch_dir(server_sandbox)
    api(server_sandbox, "PUT", "/files" .. dir .. "/d/f.txt", "x")
    local st, _, r = api(server_sandbox, "DELETE", "/files" .. dir .. "/d/f.txt")
    expect(st):eq(204)
    expect(r.body):eq("")
    api_error(server_sandbox, "GET", "/files" .. dir .. "/d/f.txt", nil, 404, "not_found")
    api_error(server_sandbox, "DELETE", "/files" .. dir .. "/d/f.txt", nil, 404, "not_found")
    api(server_sandbox, "PUT", "/files" .. dir .. "/d/g.txt", "x")
    api_error(server_sandbox, "DELETE", "/files" .. dir .. "/d", nil, 409, "not_empty")
    st = api(server_sandbox, "DELETE", "/files" .. dir .. "/d?recursive=1")
    expect(st):eq(204)
    expect(server_sandbox.files:exists(dir .. "/d")):eq(false)
    api_error(server_sandbox, "DELETE", "/files/", nil, 400, "invalid_request")
  end)
end)

describe("process", function()
  test("start, list, stdin, output and exit", function(server_sandbox)
    local st, p = api(server_sandbox, "POST", "/process/", { cmd = "cat; echo done >&2" })
    expect(st):eq(201)
    expect(p.id):match("^p%d+$")
    expect(math.type(p.pid)):eq("integer")
    expect(p.cmd):eq("cat; echo done >&2")
    expect(p.status):eq("running")
    expect(p.exitCode):eq(json.null)
    expect(p.startedAt):match(RFC3339)
    local _, l = api(server_sandbox, "GET", "/process/")
    expect(set_of(l.processes, "id")[p.id]):eq(true)
    local _, w = api(server_sandbox, "POST", "/process/" .. p.id .. "/stdin", { data = "hé\n" })
    expect(w):eq({ id = p.id, written = 4, closed = false })
    _, w = api(server_sandbox, "POST", "/process/" .. p.id .. "/stdin", { data = "bye\n", close = true })
    expect(w.closed):eq(true)
    local final = e2e.eventually(function()
      local _, g = api(server_sandbox, "GET", "/process/" .. p.id)
      return g.status == "exited" and g
    end, { timeout = 30, message = "process exit" })
    expect(final.exitCode):eq(0)
    expect(final.stdout):eq("hé\nbye\n")
    expect(final.stderr):eq("done\n")
    api_error(server_sandbox, "POST", "/process/" .. p.id .. "/stdin", { data = "late" }, 409, "conflict")
    st = api(server_sandbox, "DELETE", "/process/" .. p.id)
    expect(st):eq(200)
  end)

  test("delete stops a running process and forgets it", function(server_sandbox)
    local dir = scratch_dir(server_sandbox)
    local _, p = api(server_sandbox, "POST", "/process", { cmd = "echo up; exec sleep 300", cwd = dir })
    e2e.eventually(function()
      local _, g = api(server_sandbox, "GET", "/process/" .. p.id)
      return g.stdout == "up\n"
    end, { timeout = 30, message = "process output" })
    local st, d = api(server_sandbox, "DELETE", "/process/" .. p.id)
    expect(st):eq(200)
    expect(d.id):eq(p.id)
    expect(d.status):eq("exited")
    expect(d.exitCode):eq(-15)
    expect(d.stdout):eq("up\n")
    api_error(server_sandbox, "GET", "/process/" .. p.id, nil, 404, "not_found", p.id)
    local _, l = api(server_sandbox, "GET", "/process/")
    expect(set_of(l.processes, "id")[p.id]):is_nil()
    -- the process is gone from the sandbox too
    local err = expect(function() return server_sandbox.commands:run(
      "kill -0 " .. p.pid) end):raises("CommandExit")
    expect(err.exit_code):eq(1)
    api_error(server_sandbox, "DELETE", "/process/p999999", nil, 404, "not_found")
  end)
end)

describe("env and ports", function()
  -- A secret in the server's environment. A create's envs reach what envd
  -- starts, not a template's start command (E2B runs it as the template
  -- is built; FC documents neither way): so a second server, started by
  -- envd with the envs, on a port of its own.
  test("env masks a secret in the server's environment", function(server_sandbox)
    local secret = "s3cr3t-" .. suite.unique("tok"):gsub("[^%w]", "")
    e2e.secret(secret)
    local sbx, port = server_sandbox, 8092
    local h = sbx.commands:run(string.format(
      "exec python3 -B /opt/abx/app/server.py --host 0.0.0.0 --port %d", port), {
      background = true,
      envs = { SOMETHING_TOKEN = secret, E2E_PLAIN = "visible value",
               E2E_LOOKS_LIKE = "sk-" .. ("a1"):rep(10) } })
    e2e.defer(function() pcall(h.kill, h) end)
    wait_server(sbx, port)
    local st, b, r = api(sbx, "GET", "/env", nil, nil, port)
    expect(st):eq(200)
    expect((r.body:find(secret, 1, true)), "position of the secret in the body"):is_nil()
    expect((r.body:find(secret:sub(1, 12), 1, true)), "position of part of the secret"):is_nil()
    expect(b.env.SOMETHING_TOKEN):eq("***")
    expect(b.env.E2E_LOOKS_LIKE):eq("***")
    expect(b.env.E2E_PLAIN):eq("visible value")
    local masked = set_of(b.masked)
    expect(masked.SOMETHING_TOKEN):eq(true)
    expect(masked.E2E_LOOKS_LIKE):eq(true)
    expect(masked.E2E_PLAIN):is_nil()
    st, b, r = api(sbx, "GET", "/env?name=SOMETHING_TOKEN", nil, nil, port)
    expect(st):eq(200)
    expect(b):eq({ name = "SOMETHING_TOKEN", value = "***", masked = true })
    expect((r.body:find(secret, 1, true)), "position of the secret in the body"):is_nil()
    b = select(2, api(sbx, "GET", "/env?name=E2E_PLAIN", nil, nil, port))
    expect(b):eq({ name = "E2E_PLAIN", value = "visible value", masked = false })
    api_error(sbx, "GET", "/env?name=E2E_NOT_SET_ANYWHERE", nil, 404, "not_found",
      "E2E_NOT_SET_ANYWHERE", nil, port)
  end)

  test("ports lists the server and a new listener", function(server_sandbox)
    local _, p = api(server_sandbox, "POST", "/process/",
      { cmd = "exec python3 -m http.server 8091 --bind 127.0.0.1" })
    e2e.defer(function() pcall(api, server_sandbox, "DELETE", "/process/" .. p.id) end)
    local b = e2e.eventually(function()
      local _, got = api(server_sandbox, "GET", "/ports")
      for _, e in ipairs(got.ports) do if e.port == 8091 then return got end end
    end, { timeout = 30, message = "listener on 8091" })
    local by_port = {}
    for i, e in ipairs(b.ports) do
      if i > 1 then expect(e.port):ge(b.ports[i - 1].port) end
      by_port[e.port] = e
    end
    expect(by_port[PORT]):eq({ port = PORT, address = "0.0.0.0", protocol = "tcp" })
    expect(by_port[8091]):eq({ port = 8091, address = "127.0.0.1", protocol = "tcp" })
  end)
end)

describe("bad requests", function()
  test("invalid json and invalid fields get 400", function(server_sandbox)
    api_error(server_sandbox, "POST", "/commands", "{not json", 400, "invalid_json")
    api_error(server_sandbox, "POST", "/commands", "[1, 2]", 400, "invalid_request")
    api_error(server_sandbox, "POST", "/commands", "{}", 400, "invalid_request", "cmd")
    api_error(server_sandbox, "POST", "/commands", { cmd = 5 }, 400, "invalid_request", "cmd")
    api_error(server_sandbox, "POST", "/commands", { cmd = "true", timeout = 0 }, 400,
      "invalid_request", "timeout")
    api_error(server_sandbox, "POST", "/commands", { cmd = "true", timeout = 601 }, 400,
      "invalid_request", "timeout")
    api_error(server_sandbox, "POST", "/commands", { cmd = "true", env = { A = 1 } }, 400,
      "invalid_request", "env")
    api_error(server_sandbox, "POST", "/commands", { cmd = "true", stdin = true }, 400,
      "invalid_request", "stdin")
    api_error(server_sandbox, "POST", "/process/", { cwd = "/tmp" }, 400, "invalid_request", "cmd")
  end)

  test("unknown route 404 and wrong method 405 with Allow", function(server_sandbox)
    api_error(server_sandbox, "GET", "/no/such/route", nil, 404, "not_found", "/no/such/route")
    local _, r = api_error(server_sandbox, "GET", "/commands", nil, 405, "method_not_allowed")
    expect(r.headers["allow"]):eq("POST")
    _, r = api_error(server_sandbox, "PATCH", "/files/tmp", "x", 405, "method_not_allowed")
    expect(r.headers["allow"]):eq("GET, PUT, DELETE")
    _, r = api_error(server_sandbox, "POST", "/env", "{}", 405, "method_not_allowed")
    expect(r.headers["allow"]):eq("GET")
  end)

  -- The server refuses a chunked body (411); a gateway in front of it
  -- (FC's) may buffer the body and forward it with a Content-Length, so
  -- the command runs: either is the contract, a 5xx or a hang is not.
  test("a chunked body gets 411 or arrives whole", function(server_sandbox)
    local st, body = post_chunked(server_sandbox, "/commands", '{"cmd": "echo whole"}')
    if st == 411 then
      expect(json.decode(body).error.code):eq("length_required")
    else
      expect(st, "status of: " .. tostring(body)):eq(200)
      expect(json.decode(body).stdout):eq("whole\n")
    end
  end)

  -- Above the server's 64 MiB limit: its JSON 413, or a gateway's own
  -- 413 page (FC's caps bodies lower, 32 MiB, and answers first).
  test("an oversized body gets 413", { timeout = 180 }, function(server_sandbox)
    local st, b, r = api(server_sandbox, "PUT", "/files/tmp/e2e-too-big.bin",
      ("\0"):rep((64 << 20) + 1))
    if (r.headers["content-type"] or ""):find("application/json", 1, true) then
      expect_error(st, b, r, 413, "payload_too_large")
    else
      expect(st, "status of a gateway's refusal"):eq(413)
    end
    expect(server_sandbox.files:exists("/tmp/e2e-too-big.bin")):eq(false)
  end)
end)
