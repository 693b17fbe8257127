-- (h) Caller metadata cannot drop or override the run's tags: the driver
-- checks through the platform's list filter while these tests wait.
local e2e = require "e2e"
local sandbox = require "e2e.sandbox"
local test, expect = e2e.test, e2e.expect

local function side(name, data)
  local f = assert(io.open(os.getenv("E2E_SIDE_DIR") .. "/" .. name, "w"))
  f:write(data)
  f:close()
end

local function wait_for(name, seconds)
  local path = os.getenv("E2E_SIDE_DIR") .. "/" .. name
  local deadline = os.time() + seconds
  while os.time() < deadline do
    local f = io.open(path)
    if f then f:close() return end
    e2e.sleep(0.1)
  end
  error("the driver never wrote " .. name)
end

test("caller metadata cannot override the tags", function(sandbox_factory)
  local evil = { e2e = "evil", e2e_test = "x", e2e_nonce = "n", mine = "kept" }
  local s = sandbox_factory { metadata = evil }
  local d = sandbox.create { metadata = { e2e = "evil2", E2E = "upper" } }
  side("ids", s.id .. "\n" .. d.id .. "\n")
  wait_for("go", 60)
  local m = s:info().metadata
  expect(m.e2e):eq(e2e.run_id)
  expect(m.mine):eq("kept")
  expect(d:info().metadata.e2e):eq(e2e.run_id)
end)

test("fixtures are tagged", function(base_sandbox)
  side("base", base_sandbox.id .. "\n")
  wait_for("go2", 60)
end)
