-- (g) The API key as the tools a test may run print it by accident: each
-- test runs one tool inside a sandbox on the key, prints what it printed
-- (stdout and stderr) and fails with it, so that it reaches every channel
-- (terminal, JUnit, JSON, HTML, evidence, annotations, job summary). The
-- driver (case_accidental.py) decodes every channel for the key.
-- xxd and hexdump are the host's, copied in: the base template has neither.
local e2e = require "e2e"
local test = e2e.test

local HEX = "od -An -tx1 -v | tr -d ' \\n'"

-- { id, what, command }: ids are plain, for the driver to find each test.
local FORMS = {
  { "f01", "env | base64", "env | base64" },
  { "f02", "base64 -w 20", "printf 'KEY=%s\\n' \"$K\" | base64 -w 20" },
  { "f03", "base64, the key 1 byte in", "printf 'AKEY=%s\\n' \"$K\" | base64" },
  { "f04", "base64, the key 2 bytes in", "printf 'ABKEY=%s\\n' \"$K\" | base64" },
  { "f05", "xxd", "env | xxd" },
  { "f06", "xxd -p", "printf %s \"$K\" | xxd -p" },
  { "f07", "hexdump -C", "env | hexdump -C" },
  { "f08", "od -An -tx1", "printf %s \"$K\" | od -An -tx1" },
  { "f09", "od -tx1", "env | od -tx1" },
  { "f10", "colon-separated hex", "printf %s \"$K\" | " .. HEX .. " | sed 's/../&:/g; s/:$//'" },
  { "f11", "space-separated hex", "printf %s \"$K\" | od -An -tx1 -v | tr -d '\\n'" },
  { "f12", "fold -w 16", "printf '%s\\n' \"$K\" | fold -w 16" },
  { "f13", "grep --color", "env | grep --color=always e2b_" },
  { "f14", "\\xNN escapes", "printf %s \"$K\" | " .. HEX .. " | sed 's/../\\\\x&/g'" },
  { "f15", "the part after e2b_", "printf '%s\\n' \"${K#e2b_}\"" },
}

local function put_tool(sbx, name)
  local f = assert(io.open("/usr/bin/" .. name, "rb"))
  local data = f:read("a")
  f:close()
  sbx.files:write("/home/user/bin/" .. name, data)
end

for _, form in ipairs(FORMS) do
  local id, what, cmd = form[1], form[2], form[3]
  test("accidental " .. id, function(sandbox_factory)
    local key = os.getenv("ABX_SANDBOX_API_KEY") or "no-key"
    local sbx = sandbox_factory {}
    if cmd:find("xxd") or cmd:find("hexdump") then
      put_tool(sbx, cmd:find("xxd") and "xxd" or "hexdump")
      sbx.commands:run("chmod +x /home/user/bin/*")
    end
    local r = sbx.commands:run("PATH=/home/user/bin:$PATH; " .. cmd, { envs = { K = key } })
    print(id .. " " .. what .. ":")
    print(r.stdout)
    io.stderr:write(id, " on stderr:\n", r.stdout)
    error(id .. " " .. what .. " printed:\n" .. r.stdout)
  end)
end
