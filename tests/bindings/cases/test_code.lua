-- sbx:run_code and sbx:create_code_context against abx-local's code
-- interpreter template, through the code_sandbox fixture.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

test("run_code returns the main result", function(code_sandbox)
  local r = code_sandbox:run_code("1 + 1")
  expect(r.text):eq("2")
  expect(r.error):eq(nil)
  expect(#r.results >= 1):eq(true)
  expect(r.results[1].is_main_result):eq(true)
  expect(type(r.execution_count)):eq("number")
end)

test("run_code logs and callbacks", function(code_sandbox)
  local seen = {}
  local r = code_sandbox:run_code("import sys\nprint('out-line')\nprint('err-line', file=sys.stderr)", {
    on_stdout = function(s) seen[#seen + 1] = "o:" .. s end,
    on_stderr = function(s) seen[#seen + 1] = "e:" .. s end,
  })
  expect(table.concat(r.logs.stdout)):eq("out-line\n")
  expect(table.concat(r.logs.stderr)):eq("err-line\n")
  local joined = table.concat(seen, "|")
  expect(joined:find("o:out-line", 1, true) ~= nil):eq(true)
  expect(joined:find("e:err-line", 1, true) ~= nil):eq(true)
  expect(r.text):eq(nil)
end)

test("run_code reports the execution error", function(code_sandbox)
  local r = code_sandbox:run_code("raise ValueError('boom')")
  expect(r.error.name):eq("ValueError")
  expect(r.error.value):eq("boom")
end)

test("a callback error aborts and propagates", function(code_sandbox)
  local ok, err = pcall(code_sandbox.run_code, code_sandbox, "print('x')", {
    on_stdout = function() error("callback said no", 0) end,
  })
  expect(ok):eq(false)
  expect(err):eq("callback said no")
  -- The interpreter is still usable afterwards.
  expect(code_sandbox:run_code("40 + 2").text):eq("42")
end)

test("contexts keep state", function(code_sandbox)
  local ctx = code_sandbox:create_code_context { cwd = "/tmp" }
  expect(type(ctx.id)):eq("string")
  code_sandbox:run_code("x = 41", { context = ctx })
  expect(code_sandbox:run_code("x + 1", { context = ctx.id }).text):eq("42")
  expect(code_sandbox:run_code("import os; os.getcwd()", { context = ctx }).text):eq("'/tmp'")
end)

test("envs reach the code", function(code_sandbox)
  local r = code_sandbox:run_code("import os; os.environ['ABX_PROBE']", { envs = { ABX_PROBE = "v1" } })
  expect(r.text):eq("'v1'")
end)

test("an integer beyond 2^53 in a result's JSON keeps every digit", function(code_sandbox)
  local r = code_sandbox:run_code(
    "class J:\n  def _repr_json_(self):\n    return {'id': 2**60 + 1, 'neg': -(2**53) - 1}\nJ()")
  local j = r.results[1] and r.results[1].json
  expect(type(j)):eq("table")
  expect(math.type(j.id)):eq("integer")
  expect(j.id):eq(1152921504606846977)
  expect(j.neg):eq(-9007199254740993)
end)
