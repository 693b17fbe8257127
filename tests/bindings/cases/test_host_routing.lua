-- The data plane by host name (<port>-<id>.<domain>, as on FC production)
-- instead of one URL with routing headers. run.py's host_routing scenario
-- runs this file with ABX_SANDBOX_URL / E2B_SANDBOX_URL unset; with a
-- single data-plane URL configured every test here skips. Signed and
-- sandbox URLs are fetched from outside the bindings by host_fetch.py
-- (python3 on the host, no token), so they prove themselves.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local expect = e2e.expect

local single_url = os.getenv("ABX_SANDBOX_URL") or os.getenv("E2B_SANDBOX_URL")
local function test(name, fn)
  e2e.test(name, { platform = true,
    skip = single_url and "a single data-plane URL is configured" or nil }, fn)
end

local HERE = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

-- abx-local's fc profile (ABX_LOCAL_PROFILE=fc): pause is refused and
-- envd does not honour signed URLs, as on FC.
local FC = os.getenv("ABX_LOCAL_PROFILE") == "fc"

-- Fetches url from the host: {status=, body=}. The URL goes through a
-- file, not argv (it may carry a signature).
local function fetch(url, method, body)
  local uf = os.tmpname()
  local f = assert(io.open(uf, "wb"))
  f:write(url, "\n", method or "GET", "\n", body or "")
  f:close()
  local p = assert(io.popen("python3 " .. HERE .. "host_fetch.py " .. uf))
  local out = p:read("a")
  p:close()
  os.remove(uf)
  local status, rest = out:match("^(%d+)\n(.*)$")
  if not status then e2e.fail("host_fetch.py: " .. out) end
  return { status = tonumber(status), body = rest }
end

local function host_form(sbx, port)
  return "http://" .. port .. "-" .. sbx.id .. "." .. sbx.domain
end

test("the data plane address is the host form", function()
  local sbx = sandbox.create {}
  expect(sbx.domain:match("^localhost:%d+$") ~= nil):eq(true)
  expect(sbx:get_host(8000)):eq("8000-" .. sbx.id .. "." .. sbx.domain)
  expect(sbx:url(8000, "/x")):eq(host_form(sbx, 8000) .. "/x")
  expect(sbx:url(49983)):eq(host_form(sbx, 49983) .. "/")
  expect(sbx:is_running()):eq(true)
  local r = sbx:http(49983, { path = "/health" })
  expect(r.status >= 200 and r.status < 300):eq(true)
  -- No routing headers from outside: the host name alone routes.
  expect(fetch(sbx:url(8123, "/")).status):eq(502)
end)

test("commands by host", function()
  local sbx = sandbox.create { envs = { GREETING = "hi" } }
  expect(sbx.commands:run("echo $GREETING; echo err >&2").stdout):eq("hi\n")
  local ok, e = pcall(sbx.commands.run, sbx.commands, "exit 3")
  expect(ok):eq(false)
  expect(e.class):eq("CommandExit")
  expect(e.exit_code):eq(3)
  local h = sbx.commands:run("read line; echo got:$line; cat; echo end", {
    background = true, stdin = true })
  h:send_stdin("ping\n")
  local found = false
  for _, p in ipairs(sbx.commands:list()) do
    if p.pid == h.pid then found = true end
  end
  expect(found):eq(true)
  -- The stream is pumped by other calls too: stdout arrives meanwhile.
  local got, deadline = "", os.time() + 20
  while not got:find("got:ping", 1, true) and os.time() < deadline do
    sbx.commands:run("sleep 0.1")
    got = got .. h.stdout
  end
  expect(got):eq("got:ping\n")
  h:send_stdin("pong\n")
  h:close_stdin()
  local seen = {}
  local r = h:wait { on_stdout = function(s) seen[#seen + 1] = s end }
  expect(r.exit_code):eq(0)
  expect(table.concat(seen)):eq("pong\nend\n")
  local sleeper = sbx.commands:run("sleep 30", { background = true })
  expect(sleeper:kill()):eq(true)
  expect(sbx.commands:kill(sleeper.pid)):eq(false)
end)

test("watch, reconnect, pause and kill by host", function()
  local sbx = sandbox.create {}
  sbx.files:make_dir("/tmp/w")
  local w = sbx.files:watch_dir("/tmp/w", { timeout = 30 })
  sbx.files:write("/tmp/w/new.txt", "x")
  local ev = w:next(10)
  expect(ev ~= nil and ev.name):eq("new.txt")
  w:stop()
  local h = sbx.commands:run("sleep 1; echo late", { background = true })
  h:disconnect()
  local again = sbx.commands:connect(h.pid)
  expect(again:wait().stdout):eq("late\n")
  if FC then
    local ok, e = pcall(sbx.pause, sbx)
    expect(ok == false and e.status):eq(403)
  else
    expect(sbx:pause()):eq(true)
    -- The paused sandbox's host answers 502 "paused": not running.
    expect(sbx:is_running()):eq(false)
  end
  local back = sbx:connect {}
  expect(back:is_running()):eq(true)
  expect(back.commands:run("echo resumed").stdout):eq("resumed\n")
  expect(sbx:kill()):eq(true)
  expect(fetch(host_form(sbx, 49983) .. "/health").status):eq(502)
end)

test("files by host, with upload and download", function()
  local sbx = sandbox.create {}
  sbx.files:write("/tmp/hr/a.txt", "alpha")
  expect(sbx.files:read("/tmp/hr/a.txt")):eq("alpha")
  expect(sbx.files:exists("/tmp/hr/a.txt")):eq(true)
  expect(sbx.files:stat("/tmp/hr/a.txt").size):eq(5)
  expect(#sbx.files:list("/tmp/hr")):eq(1)
  local src, dst = os.tmpname(), os.tmpname()
  local blob = string.rep("0123456789abcdef", 65536) .. "tail"   -- 1 MiB + 4
  local f = assert(io.open(src, "wb")); f:write(blob); f:close()
  sbx.files:upload(src, "/tmp/hr/big.bin")
  expect(sbx.files:stat("/tmp/hr/big.bin").size):eq(#blob)
  sbx.files:download("/tmp/hr/big.bin", dst)
  f = assert(io.open(dst, "rb")); local back = f:read("a"); f:close()
  os.remove(src); os.remove(dst)
  expect(#back):eq(#blob)
  expect(back == blob):eq(true)
end)

test("signed URLs by host", function()
  local sbx = sandbox.create { secure = true }
  sbx.files:write("/home/user/signed.txt", "signed-content")
  local url = sbx.files:download_url("/home/user/signed.txt", { expires = 120 })
  expect(url:find(host_form(sbx, 49983) .. "/files?", 1, true)):eq(1)
  expect(url:find("signature=", 1, true) ~= nil):eq(true)
  if FC then
    -- No signed URLs there: without the token the URLs are refused.
    expect(fetch(url).status):eq(401)
    expect(fetch(sbx.files:upload_url("/home/user/up.txt"), "POST", "x").status):eq(401)
    return
  end
  local r = fetch(url)
  expect(r.status):eq(200)
  expect(r.body):eq("signed-content")
  -- A tampered signature is refused (a character inserted: the value may
  -- start with a percent-encoded '+' or '/', so never rely on its first).
  local bad = url:gsub("signature=v1_", "signature=v1_A")
  expect(bad ~= url):eq(true)
  expect(fetch(bad).status):eq(401)
  -- Without the signature (and without a token) envd refuses too.
  local unsigned = url:gsub("[?&]signature=[^&]*", "")
  expect(unsigned:find("signature=", 1, true)):eq(nil)
  expect(fetch(unsigned).status):eq(401)
  local up = sbx.files:upload_url("/home/user/up.txt")
  expect(fetch(up, "POST", "uploaded-by-url").status):eq(200)
  expect(sbx.files:read("/home/user/up.txt")):eq("uploaded-by-url")
end)

test("run_code on code-interpreter-v1 by host", function()
  local sbx = sandbox.create { template = "code-interpreter-v1" }
  expect(sbx:get_host(49999)):eq("49999-" .. sbx.id .. "." .. sbx.domain)
  local r = sbx:run_code("21 * 2")
  expect(r.text):eq("42")
  local out = {}
  sbx:run_code("print('hello')", { on_stdout = function(s) out[#out + 1] = s end })
  expect(table.concat(out)):eq("hello\n")
  local ctx = sbx:create_code_context {}
  sbx:run_code("v = 5", { context = ctx })
  expect(sbx:run_code("v + 1", { context = ctx }).text):eq("6")
end)

-- A server in the sandbox that repeats some reply headers.
local SERVER = [[
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"from-" + self.path.encode()
        self.send_response(207)
        self.send_header("Content-Type", "text/x-probe")
        self.send_header("X-Multi", "one")
        self.send_header("X-Multi", "two")
        self.send_header("X-Echo-Host", self.headers.get("Host", ""))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
]]

local function wait_port(sbx, port)
  local deadline = os.time() + 30
  while os.time() < deadline do
    local r = sbx:http(port, { path = "/", timeout = 5 })
    if r.status ~= 502 then return r end
    sbx.commands:run("sleep 0.2")
  end
  e2e.fail("nothing answered on port " .. port)
end

test("sbx:http and url reach a server in the sandbox by host", function()
  local sbx = sandbox.create { template = "code-interpreter-v1" }   -- python3
  sbx.commands:run("mkdir -p /tmp/www && echo served > /tmp/www/index.txt")
  sbx.commands:run("python3 -m http.server 8000", { background = true, cwd = "/tmp/www" })
  wait_port(sbx, 8000)
  local r = sbx:http(8000, { path = "/index.txt" })
  expect(r.status):eq(200)
  expect(r.body):eq("served\n")
  expect(r.headers["content-length"]):eq("7")
  expect(r.headers.server:find("SimpleHTTP", 1, true)):eq(1)
  expect(type(r.headers.date)):eq("string")
  -- The public URL works from outside, without any routing header.
  local f = fetch(sbx:url(8000, "/index.txt"))
  expect(f.status):eq(200)
  expect(f.body):eq("served\n")
end)

test("sbx:http returns every reply header", function()
  local sbx = sandbox.create { template = "code-interpreter-v1" }   -- python3
  sbx.files:write("/tmp/srv.py", SERVER)
  sbx.commands:run("python3 /tmp/srv.py 8080", { background = true })
  wait_port(sbx, 8080)
  local r = sbx:http(8080, { path = "/p?q=1", headers = { ["X-Secret-Req"] = "no-echo" } })
  expect(r.status):eq(207)
  expect(r.body):eq("from-/p?q=1")
  expect(r.headers["content-type"]):eq("text/x-probe")
  expect(r.headers["x-multi"]):eq("one, two")
  expect(r.headers["x-echo-host"]):eq(sbx:get_host(8080))
  expect(r.headers["content-length"]):eq(tostring(#r.body))
  -- Names are lower-case; request headers are never reported.
  for k in pairs(r.headers) do expect(k):eq(k:lower()) end
  expect(r.headers["x-secret-req"]):eq(nil)
end)
