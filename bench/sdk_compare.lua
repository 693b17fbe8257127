-- The abx-e2e half of bench/sdk_compare.sh: the same operations as
-- bench/sdk_compare.mjs through abx-e2e's bindings. A test file, not an
-- `abx-e2e exec` script: exec refuses sandbox.create (only inside a test
-- or fixture), and Lua has no wall clock finer than a second. One test
-- per timed call, so the figure is the runner's own clock (the JSON
-- report's durations.call); warm-up calls are tests named "... w<i>" and
-- are dropped by the script.
--
-- Env: BENCH_MODE = "latency" (default) or "mem"; BENCH_N (20);
-- BENCH_WARM (2); for "mem": BENCH_SRC (a local file to upload) and
-- BENCH_DST (where to download it back).
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local test = e2e.test

local mode = os.getenv("BENCH_MODE") or "latency"
local N = math.tointeger(tonumber(os.getenv("BENCH_N") or "20")) or 20
local WARM = math.tointeger(tonumber(os.getenv("BENCH_WARM") or "2")) or 2
local MIB = 1 << 20

local function each(op, fn)
  for i = 1, WARM + N do
    local name = i <= WARM and ("%s w%d"):format(op, i) or ("%s %03d"):format(op, i - WARM)
    test(name, fn)
  end
end

if mode == "latency" then
  -- Same bytes as the JS side: i % 251.
  local parts = {}
  for i = 0, MIB - 1, 4096 do
    local chunk = {}
    for j = i, i + 4095 do chunk[#chunk + 1] = string.char(j % 251) end
    parts[#parts + 1] = table.concat(chunk)
  end
  local payload = table.concat(parts)

  each("create_kill", function()
    local s = sandbox.create { template = "base", timeout = 120 }
    s:kill()
  end)
  each("command_run", function(base_sandbox)
    local r = base_sandbox.commands:run("echo hello")
    assert(r.stdout == "hello\n", "unexpected stdout")
  end)
  each("write_read_1mib", function(base_sandbox)
    base_sandbox.files:write("/tmp/bench-1mib.bin", payload)
    local back = base_sandbox.files:read("/tmp/bench-1mib.bin", { format = "bytes" })
    assert(#back == MIB, "read back " .. #back .. " bytes")
  end)
  each("list", function()
    sandbox.list {}
  end)
elseif mode == "mem" then
  test("transfer", function(base_sandbox)
    local src, dst = assert(os.getenv("BENCH_SRC")), assert(os.getenv("BENCH_DST"))
    base_sandbox.files:upload(src, "/tmp/bench-transfer.bin")
    base_sandbox.files:download("/tmp/bench-transfer.bin", dst)
  end)
else
  error("BENCH_MODE must be latency or mem, not " .. mode)
end
