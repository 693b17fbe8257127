-- Port URLs and in-sandbox HTTP services (E2B's test_host "ping server",
-- closed port, non-running sandbox, as E2B's own SDK tests of commands and
-- of the sandbox's network) and code execution on port 49999
-- (run_code: state, errors, stdout vs results, contexts, bash, streaming,
-- timeout). Fixtures: base_sandbox, sandbox_factory, code_sandbox. The
-- servers are Python, so they run in code-interpreter-v1 sandboxes (the
-- base template has no python3).
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe
local suite = require "suite"
local json = require "e2e.json"
local http = require "e2e.http"

-- A tiny HTTP server that answers every request with what it saw, and
-- the tag it was started with (to tell two sandboxes' servers apart).
local ECHO_SERVER = [[
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TAG = sys.argv[2]

class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        out = json.dumps({"tag": TAG, "method": self.command, "path": self.path,
                          "body": body, "probe": self.headers.get("X-Probe")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo-Tag", TAG)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = answer

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Echo).serve_forever()
]]

-- Waits until `port` of sbx answers 200 through the data plane (a server's
-- start-up is known-eventual).
local function wait_serving(sbx, port, path)
  e2e.eventually(function()
    local ok, r = pcall(sbx.http, sbx, port, { path = path or "/", timeout = 5 })
    return ok and r.status == 200
  end, { timeout = 30, interval = 0.3, message = "server on port " .. port })
end

-- Starts the echo server in sbx (script under dir) and stops it when the
-- test ends.
local function start_echo(sbx, dir, port, tag)
  local script = dir .. "/echo_server.py"
  sbx.files:write(script, ECHO_SERVER)
  local h = sbx.commands:run(string.format("python3 -B %s %d %s", suite.sh_quote(script),
    port, suite.sh_quote(tag)), { background = true, timeout = 600 })
  e2e.defer(function() pcall(h.kill, h) end)
  wait_serving(sbx, port)
  return h
end

-- The URL that reaches `port` by host name, "<port>-<id>.<domain>", with
-- the scheme the platform's data plane uses.
-- One request by URL alone: e2e.http adds no routing header and no
-- credential of ours, so it proves host-name routing (and reaches ids no
-- handle has). Returns status, body, content type.
local function fetch(url, method, body, headers)
  local r = http.request { url = url, method = method or "GET", body = body,
    headers = headers, timeout = 30 }
  return r.status, r.body, r.headers["content-type"]
end

local function ci_text(t) return table.concat(t or {}) end

-- A request to a sandbox that does not exist (unknown or killed): E2B's
-- edge answers 502; FC documents 502 for a port not ready only, and a
-- gateway may say 404 or 410. Any of them, never the service's answer.
local function expect_no_sandbox(status)
  expect(status == 502 or status == 404 or status == 410,
    "502, 404 or 410 for a sandbox that does not exist, got " .. tostring(status)):eq(true)
  if e2e.has("e2b-proxy") then expect(status):eq(502) end
end

-- A fresh directory for one test in the file's code sandbox.
local function scratch_dir()
  return "/tmp/e2e-net/" .. suite.unique("t")
end

local CODE = "code-interpreter-v1"

describe("port urls", function()
  test("get_host is port-id.domain", function(base_sandbox)
    local sbx = base_sandbox
    expect(sbx.domain):type("string")
    expect(sbx:get_host(8080)):eq("8080-" .. sbx.id .. "." .. sbx.domain)
    expect(sbx:get_host(49983)):eq("49983-" .. sbx.id .. "." .. sbx.domain)
  end)

  test("http server in the sandbox answers through the data plane", function(code_sandbox)
    local sbx, www = code_sandbox, scratch_dir() .. "/www"
    sbx.files:write(www .. "/page.txt", "served from the sandbox\n")
    local h = sbx.commands:run("python3 -m http.server 8001 --bind 0.0.0.0 --directory "
      .. suite.sh_quote(www), { background = true, timeout = 600 })
    e2e.defer(function() pcall(h.kill, h) end)
    wait_serving(sbx, 8001, "/page.txt")
    local r = sbx:http(8001, { path = "/page.txt" })
    expect(r.status):eq(200)
    expect(r.body):eq("served from the sandbox\n")
    expect(r.headers["content-type"]):match("^text/plain")
    local missing = sbx:http(8001, { path = "/nope.txt" })
    expect(missing.status):eq(404)
  end)

  test("server sees method, path, query, headers and body", function(code_sandbox)
    local sbx = code_sandbox
    start_echo(sbx, scratch_dir(), 8002, "seen")
    for _, m in ipairs({ "POST", "PUT", "PATCH", "DELETE" }) do
      local r = sbx:http(8002, { method = m, path = "/a/b?x=1&y=%20z", body = "payload " .. m,
        headers = { ["X-Probe"] = "probe-" .. m } })
      expect(r.status):eq(200)
      expect(r.headers["x-echo-tag"]):eq("seen")
      expect(json.decode(r.body)):eq({ tag = "seen", method = m, path = "/a/b?x=1&y=%20z",
        body = "payload " .. m, probe = "probe-" .. m })
    end
    local g = json.decode(sbx:http(8002, { path = "/" }).body)
    expect(g.method):eq("GET")
    expect(g.body):eq("")
  end)

  test("host-name routing reaches the same server", function(code_sandbox)
    local sbx = code_sandbox
    start_echo(sbx, scratch_dir(), 8003, "by-host")
    local status, body = fetch(sbx:url(8003, "/via/host?q=1"), "POST", "hello")
    expect(status):eq(200)
    expect(json.decode(body)):eq({ tag = "by-host", method = "POST", path = "/via/host?q=1",
      body = "hello", probe = json.null })
  end)

  -- The 502 is the contract everywhere; E2B's JSON body (and its HTML page
  -- for browsers) is its proxy's own, asserted where e2b-proxy is declared
  -- (FC's gateway answers its own page).
  test("closed port answers 502 naming the port", function(base_sandbox)
    local sbx = base_sandbox
    local r = sbx:http(8009, { path = "/" })
    expect(r.status):eq(502)
    local status, body = fetch(sbx:url(8009))   -- by host name too
    expect(status):eq(502)
    if not e2e.has("e2b-proxy") then return end
    expect(r.headers["content-type"]):match("^application/json")
    local b = json.decode(r.body)
    expect(b.message):eq("The sandbox is running but port is not open")
    expect(b.sandboxId):eq(sbx.id)
    expect(b.port):eq(8009)
    expect(b.code):eq(502)
    expect(json.decode(body).port):eq(8009)
  end)

  test("unknown sandbox id answers a not-found error", function(base_sandbox)
    local fake = "e2enosuch" .. tostring(e2e.worker_id):gsub("%W", "") .. "x0"
    local url = suite.replace_plain(base_sandbox:url(8001), base_sandbox.id, fake)
    local status, body, ctype = fetch(url)
    expect_no_sandbox(status)
    local proxy = e2e.has("e2b-proxy")
    if proxy then
      expect(ctype):match("^application/json")
      local b = json.decode(body)
      expect(b.message):eq("The sandbox was not found")
      expect(b.sandboxId):eq(fake)
      expect(b.code):eq(502)
    end
    -- with a single data-plane URL, routed by headers, the same answer
    local plane = e2e.data_plane_url
    if plane then
      status, body = fetch(plane, "GET", nil, { ["E2b-Sandbox-Id"] = fake, ["E2b-Sandbox-Port"] = "8001" })
      expect_no_sandbox(status)
      if proxy then
        expect(json.decode(body)):eq({ sandboxId = fake, message = "The sandbox was not found", code = 502 })
      end
    end
  end)

  test("a browser gets the 502 as an html page", { requires = { "e2b-proxy" } }, function(base_sandbox)
    local ua = { ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) e2e" }
    local status, body, ctype = fetch(base_sandbox:url(8010), "GET", nil, ua)
    expect(status):eq(502)
    expect(ctype):match("^text/html")
    expect(body:lower()):match("^%s*<!doctype html")
    expect(body):contains(base_sandbox.id)
  end)

  test("a killed sandbox's port answers a not-found error", function(sandbox_factory)
    local sbx = sandbox_factory { template = CODE, timeout = 120 }
    start_echo(sbx, "/tmp", 8004, "doomed")
    local url, id = sbx:url(8004), sbx.id
    local alive = fetch(url)
    expect(alive):eq(200)
    expect(sbx:kill()):eq(true)
    local status, body = fetch(url)
    expect_no_sandbox(status)
    if e2e.has("e2b-proxy") then
      local b = json.decode(body)
      expect(b.message):eq("The sandbox was not found")
      expect(b.sandboxId):eq(id)
    end
  end)

  -- network.allowPublicTraffic=false (E2B and FC alike): user ports answer
  -- only requests that carry the sandbox's traffic access token, which
  -- create returns and the handle sends; a bare request is refused.
  test("a sandbox closed to public traffic serves only with its token", function(sandbox_factory)
    local sbx = sandbox_factory { template = CODE, timeout = 120,
      network = { allow_public_traffic = false } }
    start_echo(sbx, "/tmp", 8006, "private")
    local r = sbx:http(8006, { path = "/with/token" })
    expect(r.status):eq(200)
    expect(json.decode(r.body).path):eq("/with/token")
    local status, body = fetch(sbx:url(8006, "/bare"))
    expect(status):eq(403)
    expect(body:find('"tag"', 1, true), "the server's answer leaked"):is_nil()
    -- envd still works for the handle (its access token, not the traffic one)
    expect(sbx.commands:run("echo ok").stdout):eq("ok\n")
  end)

  test("two sandboxes serve the same port independently", function(sandbox_factory)
    local a = sandbox_factory { template = CODE, timeout = 120 }
    local b = sandbox_factory { template = CODE, timeout = 120 }
    start_echo(a, "/tmp", 8000, "first")
    start_echo(b, "/tmp", 8000, "second")
    expect(json.decode(a:http(8000, { path = "/a" }).body).tag):eq("first")
    expect(json.decode(b:http(8000, { path = "/b" }).body).tag):eq("second")
    local _, body_a = fetch(a:url(8000))
    local _, body_b = fetch(b:url(8000))
    expect(json.decode(body_a).tag):eq("first")
    expect(json.decode(body_b).tag):eq("second")
  end)

  -- FC filters egress by domain on 80/443 and says a denied TCP connection
  -- "may still appear connected": the contract is that nothing comes back,
  -- not that connect() fails. An HTTP request outside gets no answer.
  test("internet access disabled: no answer from outside", function(sandbox_factory)
    local sbx = sandbox_factory { template = CODE, timeout = 120, allow_internet_access = false }
    -- FC filters egress by domain on ports 80 and 443, and a denied TCP
    -- connection may still appear connected (docs/capabilities.md): what
    -- holds everywhere is that no answer comes back, not a refused connect.
    local probe = "import urllib.request as u\n"
      .. "for url in ('http://example.com/', 'https://example.com/'):\n"
      .. "    try:\n"
      .. "        r = u.urlopen(url, timeout=5)\n"
      .. "        print('ANSWERED', url, r.status, len(r.read()))\n"
      .. "    except Exception as e:\n"
      .. "        print('NO-ANSWER', url, type(e).__name__)\n"
    local out = sbx.commands:run("python3 -c " .. suite.sh_quote(probe), { timeout = 60 }).stdout
    expect(out):contains("NO-ANSWER http://example.com/")
    expect(out):contains("NO-ANSWER https://example.com/")
    expect(out:find("ANSWERED", 1, true), out):is_nil()
    -- By address (192.0.2.1, a documentation address no one answers for),
    -- so no name lookup hides it: a connect to 80 or 443 may be refused or
    -- may "connect", but nothing is ever read from it.
    local by_ip = sbx.commands:run([[
for port in 80 443 8080; do
  if { exec 3<>"/dev/tcp/192.0.2.1/$port"; } 2>/dev/null; then
    printf 'GET / HTTP/1.0\r\nHost: example.com\r\n\r\n' >&3 2>/dev/null
    if IFS= read -r -t 2 line <&3; then echo "$port ANSWERED $line";
    else echo "$port connected, nothing read"; fi
    exec 3<&-
  else echo "$port refused"; fi
done]], { timeout = 60 }).stdout
    expect(by_ip:find("ANSWERED", 1, true), by_ip):is_nil()
    expect(select(2, by_ip:gsub("\n", "")), by_ip):eq(3)
    -- the sandbox's own loopback still works
    start_echo(sbx, "/tmp", 8005, "local")
    local here = sbx.commands:run("python3 -c 'import urllib.request as u; "
      .. "print(u.urlopen(\"http://127.0.0.1:8005/x\", timeout=5).read().decode())'")
    expect(json.decode(here.stdout).path):eq("/x")
  end)
end)

describe("code execution", function()
  test("state is kept across run_code calls", function(code_sandbox)
    local ctx = code_sandbox:create_code_context {}
    local first = code_sandbox:run_code("x = 1", { context = ctx })
    expect(first.error):is_nil()
    expect(first.text):is_nil()
    local second = code_sandbox:run_code("x + 1", { context = ctx })
    expect(second.text):eq("2")
    expect(second.execution_count):gt(first.execution_count)
  end)

  test("print goes to stdout and the last expression to the result", function(code_sandbox)
    local r = code_sandbox:run_code("print('to stdout')\nimport sys\nsys.stderr.write('to stderr\\n')\n6 * 7")
    expect(r.error):is_nil()
    expect(ci_text(r.logs.stdout)):eq("to stdout\n")
    expect(ci_text(r.logs.stderr)):eq("to stderr\n")
    expect(r.text):eq("42")
    expect(#r.results):eq(1)
    expect(r.results[1].text):eq("42")
    expect(r.results[1].is_main_result):eq(true)
  end)

  test("errors come with name, value and traceback", function(code_sandbox)
    local ctx = code_sandbox:create_code_context {}
    local r = code_sandbox:run_code("def f():\n    raise ValueError('boom')\nf()", { context = ctx })
    expect(r.error):type("table")
    expect(r.error.name):eq("ValueError")
    expect(r.error.value):eq("boom")
    expect(r.error.traceback):contains("ValueError")
    expect(r.error.traceback):contains("boom")
    expect(r.error.traceback):contains("f()")
    expect(r.text):is_nil()
    local s = code_sandbox:run_code("1 +", { context = ctx })
    expect(s.error):type("table")
    expect(s.error.name):eq("SyntaxError")
    -- the context still works after errors
    expect(code_sandbox:run_code("'alive'", { context = ctx }).text):eq("'alive'")
  end)

  test("contexts are isolated from each other", function(code_sandbox)
    local a = code_sandbox:create_code_context {}
    local b = code_sandbox:create_code_context { cwd = "/tmp" }
    expect(a.id):ne(b.id)
    expect(a.language):eq("python")
    expect(b.cwd):eq("/tmp")
    code_sandbox:run_code("secret_value = 'only in a'", { context = a })
    local r = code_sandbox:run_code("secret_value", { context = b.id })
    expect(r.error, "context b sees a's variable (" .. tostring(r.text) .. ")"):type("table")
    expect(r.error.name):eq("NameError")
    expect(code_sandbox:run_code("secret_value", { context = a }).text):eq("'only in a'")
    expect(code_sandbox:run_code("import os\nos.getcwd()", { context = b }).text):eq("'/tmp'")
  end)

  test("envs reach the code", function(code_sandbox)
    local r = code_sandbox:run_code("import os\nos.environ.get('E2E_CODE_VAR')",
      { envs = { E2E_CODE_VAR = "from envs" } })
    expect(r.text):eq("'from envs'")
  end)

  test("bash language runs shell code with state", function(code_sandbox)
    local r = code_sandbox:run_code("echo hi; echo $((6 * 7))", { language = "bash" })
    expect(r.error):is_nil()
    expect(ci_text(r.logs.stdout)):eq("hi\n42\n")
    local ctx = code_sandbox:create_code_context { language = "bash" }
    expect(ctx.language):eq("bash")
    code_sandbox:run_code("export E2E_KEPT=still-here", { context = ctx })
    expect(ci_text(code_sandbox:run_code("echo $E2E_KEPT", { context = ctx }).logs.stdout))
      :eq("still-here\n")
  end)

  test("on_stdout streams output while the code runs", function(code_sandbox)
    -- The code waits for a file that only the callback creates: it can
    -- finish only if its first line reached us before it ended.
    local flag = "/tmp/e2e-stream-" .. suite.unique("f")
    local code = string.format([[
import os, time
print("ready", flush=True)
for _ in range(600):
    if os.path.exists(%q):
        break
    time.sleep(0.05)
print("seen" if os.path.exists(%q) else "not streamed", flush=True)
]], flag, flag)
    local chunks = {}
    local r = code_sandbox:run_code(code, { timeout = 60, on_stdout = function(t)
      chunks[#chunks + 1] = t
      if t:find("ready", 1, true) then code_sandbox.files:write(flag, "x") end
    end })
    expect(r.error):is_nil()
    expect(table.concat(chunks)):eq("ready\nseen\n")
    expect(ci_text(r.logs.stdout)):eq("ready\nseen\n")
  end)

  test("on_stderr gets stderr output", function(code_sandbox)
    local got = {}
    code_sandbox:run_code("import sys\nsys.stderr.write('warn\\n')",
      { on_stderr = function(t) got[#got + 1] = t end })
    expect(table.concat(got)):eq("warn\n")
  end)

  test("a timeout ends run_code with Timeout", function(code_sandbox)
    local ctx = code_sandbox:create_code_context {}
    local err = expect(function() return code_sandbox:run_code(
      "import time\ntime.sleep(30)", { context = ctx, timeout = 2 }) end):raises("Timeout")
    expect(err.message):match("timed out")
  end)
end)
