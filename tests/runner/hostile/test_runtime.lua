-- Runtime escapes: reading stdin, removing the timeout hook, background
-- processes holding output open, runaway recursion and allocation.
local e2e = require "e2e"
local test = e2e.test

test("stdin_is_empty", { timeout = 5 }, function()
  e2e.expect(io.read("l")):is_nil()   -- /dev/null, never the terminal
end)
test("sethook_refused", { timeout = 2 }, function() debug.sethook(); while true do end end)
test("background_process", function() os.execute("sleep 60 >/dev/null 2>&1 &"); os.execute("sleep 60 &") end)
test("recursion", function() local function f() return 1 + f() end f() end)
test("string_too_large", function() string.rep("x", 2 ^ 40) end)
test("print_bad_tostring", function() print(setmetatable({}, { __tostring = function() error("tostr") end })) end)
test("close_stdout", function()
  local ok, err = io.stdout:close()
  e2e.expect(ok):is_nil()
  print("still captured", err)
end)
test("after", function() print("fine") end)
