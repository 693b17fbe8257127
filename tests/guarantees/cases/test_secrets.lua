-- (g) A test that prints every credential it can reach: the API key, the
-- secure sandbox's access token (read as root from envd's config inside
-- the sandbox) and signed URLs, raw, base64 and percent-encoded, on
-- stdout, stderr, in a command's output, an error message and a
-- CommandExit. The driver learns the real values (side file, checked
-- against GET /sandboxes/{id}) and searches every output for them.
local e2e = require "e2e"
local test = e2e.test

local B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local q = {}
    for k = 3, 0, -1 do q[#q + 1] = B:sub((n >> (6 * k)) % 64 + 1, (n >> (6 * k)) % 64 + 1) end
    if not b then q[3], q[4] = "=", "=" elseif not c then q[4] = "=" end
    out[#out + 1] = table.concat(q)
  end
  return table.concat(out)
end

local function pct(s)
  return (s:gsub("[^%w%-%._~]", function(ch) return string.format("%%%02X", ch:byte()) end))
end

local function side(name, data)
  local f = assert(io.open(os.getenv("E2E_SIDE_DIR") .. "/" .. name, "w"))
  f:write(data)
  f:close()
end

test("prints every secret it can reach", function(sandbox_factory)
  local key = os.getenv("ABX_SANDBOX_API_KEY") or "no-key"
  local sbx = sandbox_factory { secure = true }
  sbx.files:write("/home/user/secret.txt", "payload")
  local url = sbx.files:download_url("/home/user/secret.txt")
  local url_exp = sbx.files:download_url("/home/user/secret.txt", { expires = 600 })
  local cfg = sbx.commands:run("cat /run/abx/config.json", {
    user = "root",
    on_stdout = function(chunk) print("stream", chunk) end,
  }).stdout
  local token = cfg:match('"accessToken"%s*:%s*"([^"]+)"') or "no-token"
  side("values", table.concat({ sbx.id, url, url_exp, token }, "\n") .. "\n")
  -- The signed URL used for real: its request shows in --trace-http.
  local r = sbx:http(49983, { path = url:match("(/files%?.*)$") })
  print("signed GET", r.status, r.body)
  e2e.sleep(1.5)  -- the driver reads the token through GET /sandboxes/{id}
  for _, v in ipairs { key, token, url, url_exp } do
    print("raw", v)
    print("b64", b64(v))
    print("pct", pct(v))
    io.stderr:write("stderr ", v, "\n")
  end
  -- The signature as it sits in the URL (percent-encoded), re-encoded.
  for _, u in ipairs { url, url_exp } do
    local q = u:match("[?&]signature=([^&]+)") or "no-signature"
    print("sig-pct", pct(q))
    print("sig-b64", b64(q))
  end
  print("config", cfg)
  print("echo", sbx.commands:run("echo $T", { envs = { T = token } }).stdout)
  error("failing with " .. key .. " " .. url .. " " .. token)
end)

test("CommandExit carries the token", function(sandbox_factory)
  local sbx = sandbox_factory { secure = true }
  local cfg = sbx.commands:run("cat /run/abx/config.json", { user = "root" }).stdout
  local token = cfg:match('"accessToken"%s*:%s*"([^"]+)"') or "no-token"
  side("values2", sbx.id .. "\n" .. token .. "\n")
  e2e.sleep(1.5)
  sbx.commands:run("echo out:$T; echo err:$T >&2; exit 3", { envs = { T = token } })
end)

test("assertion carries the key", function()
  e2e.expect("key " .. (os.getenv("ABX_SANDBOX_API_KEY") or "")):eq("key nothing")
end)
