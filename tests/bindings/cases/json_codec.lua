-- ctest bindings.json_codec: `abx-e2e exec` runs this script (no platform
-- needed); any failed check raises, so the exit status is non-zero.
local json = require "e2e.json"
local expect = require("e2e").expect

local failures = 0
local function check(cond, what)
  if not cond then
    failures = failures + 1
    io.stderr:write("FAIL: " .. what .. "\n")
  end
end
local function eq(got, want, what)
  check(got == want and math.type(got) == math.type(want),
    string.format("%s: got %s (%s), want %s (%s)", what, tostring(got),
      math.type(got) or type(got), tostring(want), math.type(want) or type(want)))
end
-- e2e's one raises, its failure counted like a check's.
local function raises(text, fn, ...)
  local args = table.pack(...)
  local ok, why = pcall(function()
    expect(function() return fn(table.unpack(args, 1, args.n)) end):raises(text)
  end)
  check(ok, tostring(why))
end

-- decode: types
local v = json.decode('{"i":42,"neg":-7,"f":1.5,"e":1e3,"t":true,"n":null,' ..
  '"s":"h\\u00e9\\n\\"q\\"","a":[1,[2,[3]]],"o":{}}')
eq(v.i, 42, "integer"); eq(v.neg, -7, "negative integer")
eq(v.f, 1.5, "float"); eq(v.e, 1000.0, "exponent is a float")
eq(v.t, true, "true"); check(v.n == json.null, "null is json.null")
eq(v.s, "hé\n\"q\"", "escapes"); eq(v.a[2][2][1], 3, "nested arrays")
check(json.is_object(v.o), "{} decodes to an object-marked table")
eq(json.decode("2.0"), 2.0, "2.0 stays a float")
eq(json.decode(" 7 "), 7, "top-level scalar with blanks")
-- exact int64, beyond 2^53
eq(json.decode("9007199254740993"), 9007199254740993, "2^53+1 exact")
eq(json.decode("9223372036854775807"), math.maxinteger, "int64 max")
eq(json.decode("-9223372036854775808"), math.mininteger, "int64 min")
eq(math.type(json.decode("9223372036854775808")), "float", "beyond int64 -> float")
-- NUL and surrogates
eq(json.decode('"a\\u0000b"'), "a\0b", "\\u0000 kept")
eq(json.decode('{"k\\u0000":"\\u0000"}')["k\0"], "\0", "\\u0000 in a key")
eq(json.decode('"\\ud83d\\ude00 \\u0000"'), "\u{1F600} \0", "surrogate pair")
eq(json.decode('"\\\\u0000"'), "\\u0000", "escaped backslash is not NUL")
-- bad input
raises("unexpected end of input", json.decode, "")
raises("syntax error", json.decode, "[1,,2]")
raises("trailing characters", json.decode, "{} x")
raises("raw control byte 0x01", json.decode, '["\1"]')
raises("invalid UTF-8", json.decode, '"\xff"')
raises("nesting deeper than 200", json.decode, ("["):rep(201) .. ("]"):rep(201))
check(pcall(json.decode, ("["):rep(200) .. ("]"):rep(200)), "200 levels decode")
raises("string expected", json.decode, {})

-- encode
eq(json.encode({ b = 1, a = 2, c = { 3, 4 } }), '{"a":2,"b":1,"c":[3,4]}', "sorted keys")
eq(json.encode({}), "[]", "empty table is an array")
eq(json.encode(json.object()), "{}", "json.object() is an object")
eq(json.encode(json.decode('{"x":{}}')), '{"x":{}}', "decoded {} stays {}")
eq(json.encode(json.null), "null", "null"); eq(json.encode(nil), "null", "nil")
eq(json.encode(math.maxinteger), "9223372036854775807", "int64")
eq(json.encode(3.0), "3.0", "integral float keeps .0")
eq(json.encode(-0.0), "-0.0", "-0.0")
eq(json.encode(0.1), "0.1", "shortest round trip")
for _, x in ipairs { 1 / 3, 2 ^ 60 + 0.0, 1e-300, 123456.789, -2.5e100 } do
  eq(json.decode(json.encode(x)), x, "float round trip " .. tostring(x))
end
eq(json.encode("q\"\\\n\t\0\31é"), '"q\\"\\\\\\n\\t\\u0000\\u001fé"', "string escapes")
eq(json.decode(json.encode("\0\1\127")), "\0\1\127", "control bytes round trip")
raises("invalid UTF-8 at byte 2", json.encode, "a\xff")
raises("invalid UTF-8", json.encode, "\xed\xa0\x80")  -- a surrogate
raises("at $.x[2]", json.encode, { x = { "ok", "\xc0\xaf" } })
raises("cannot encode NaN", json.encode, 0 / 0)
raises("cannot encode infinity", json.encode, { 1 / 0 })
raises("cannot encode a function at $.f", json.encode, { f = print })
raises("mixed or non-string key 1", json.encode, { 1, a = 2 })
raises("key 1.5 is neither", json.encode, { [1.5] = 1 })
raises("key true is neither", json.encode, { [true] = 1 })
raises("sparse array: key 5 but only 4 keys", json.encode, { 1, 2, [4] = 4, [5] = 5 })
raises("mixed or non-string key 1", json.encode, json.object { 1 })
local cyc = {}; cyc.me = { cyc }
raises("cycle", json.encode, cyc)
local deep = {}
for _ = 1, 250 do deep = { deep } end
raises("nesting deeper than 200", json.encode, deep)
raises("bad argument #1 to", json.encode)
-- a shared (non-cyclic) subtable is fine
local shared = { 1 }
eq(json.encode({ shared, shared }), "[[1],[1]]", "shared subtable")
-- round trip of a composite value
local doc = '{"a":[1,2.5,"x",null,true,{"b":{}}],"big":-9007199254740993,"u":"\u{10FFFF}"}'
eq(json.encode(json.decode(doc)), doc, "composite round trip")
raises("larger than 64 MiB", json.encode, { ("x"):rep(40 * 1024 * 1024), ("x"):rep(30 * 1024 * 1024) })
eq(json.object(nil) ~= json.object(nil), true, "json.object() gives a new table")

if failures > 0 then error(failures .. " check(s) failed", 0) end
print("json codec: all checks passed")
