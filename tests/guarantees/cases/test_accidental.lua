-- (g) The API key as the tools a test may run print it by accident: each
-- test runs one tool inside a sandbox on the key, prints what it printed
-- (stdout and stderr) and fails with it, so that it reaches every channel
-- (terminal, JUnit, JSON, HTML, evidence, annotations, job summary). The
-- driver (case_accidental.py) decodes every channel for the key.
-- xxd and hexdump are the host's, copied in: the base template has neither.
local e2e = require "e2e"
local test = e2e.test

-- { id, what, command } from accidental_forms.tsv (the driver reads it too).
local FORMS = {}
for line in io.lines("cases/accidental_forms.tsv") do
  local id, what, cmd = line:match("^(f%d%d)\t([^\t]+)\t(.+)$")
  if id then FORMS[#FORMS + 1] = { id, what, cmd } end
end
assert(#FORMS > 0, "cases/accidental_forms.tsv: no form")

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
