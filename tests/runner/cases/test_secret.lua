-- Plants the API key (and a run-time secret) in every output channel;
-- the harness checks that none of it survives unmasked.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

local key = os.getenv("ABX_SANDBOX_API_KEY") or "missing"

local B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  return ((s:gsub(".", function(c)
    local bits, byte = "", c:byte()
    for i = 8, 1, -1 do bits = bits .. ((byte % 2 ^ i - byte % 2 ^ (i - 1) > 0) and "1" or "0") end
    return bits
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
    if #x < 6 then return "" end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
    return B:sub(c + 1, c + 1)
  end) .. ({ "", "==", "=" })[#s % 3 + 1])
end

test("prints the key", function()
  print("raw:", key)
  print("b64:", b64(key))
  io.write("split:", key:sub(1, 6))
  io.write(key:sub(7), "\n")
  io.stdout:write("stdout:", key, "\n")
  os.execute("echo shell:$ABX_SANDBOX_API_KEY; echo shell-err:$ABX_SANDBOX_API_KEY >&2")
  error("failing with " .. key)
end)

test("assertion carries the key", function()
  expect("Bearer " .. key):eq("Bearer nothing")
end)

test("skip reason carries the key", function() e2e.skip("skip " .. key) end)

test("teardown error carries the key", function()
  e2e.defer(function() error("teardown " .. b64(key)) end)
end)

test("run-time secret", function()
  local tok = e2e.secret("tok_" .. ("7"):rep(24))
  print("token:", tok)
  error("token " .. tok)
end)
