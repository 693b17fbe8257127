---@meta _
-- LuaLS definitions (never run): the assertion object of `e2e.expect(v)`
-- (bindings/core/expect.lua; docs/authoring.md section 2). Every matcher
-- returns the assertion, so they chain: expect(s):type("string"):len(5).
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- An assertion on a value; a failed matcher fails the test with "file:line: ..." and a diff.
---@class e2e.Expect
local Expect = {}

--- Equal by value (deep, tables included); the failure shows both values, the first difference and a diff.
---@param x any The expected value.
---@return e2e.Expect
function Expect:eq(x) end

--- Not equal by value (deep).
---@param x any
---@return e2e.Expect
function Expect:ne(x) end

--- Anything but nil and false.
---@return e2e.Expect
function Expect:truthy() end

--- nil or false.
---@return e2e.Expect
function Expect:falsy() end

--- Exactly nil.
---@return e2e.Expect
function Expect:is_nil() end

--- type(v) == t.
---@param t type
---@return e2e.Expect
function Expect:type(t) end

--- A string matching the Lua pattern.
---@param pattern string
---@return e2e.Expect
function Expect:match(pattern) end

--- A string containing x (plain text), or a table with an item deep-equal to x.
---@param x any
---@return e2e.Expect
function Expect:contains(x) end

--- Greater than x (numbers or strings, same type).
---@param x number|string
---@return e2e.Expect
function Expect:gt(x) end

--- At least x.
---@param x number|string
---@return e2e.Expect
function Expect:ge(x) end

--- Less than x.
---@param x number|string
---@return e2e.Expect
function Expect:lt(x) end

--- At most x.
---@param x number|string
---@return e2e.Expect
function Expect:le(x) end

--- A number within tol (default 1e-9) of x.
---@param x number
---@param tol? number
---@return e2e.Expect
function Expect:near(x, tol) end

--- A string or table (raw length) of length n.
---@param n integer
---@return e2e.Expect
function Expect:len(n) end

--- v is a function that must raise an error of that class and/or whose text contains text; returns the error.
--- Timeouts, interrupts and skips are never "expected": they propagate.
---@param class_or_text? e2e.ErrorClass|string A class name (NotFound, ...) or a text the error must contain.
---@param text? string With a class: a text the error must contain (plain).
---@return e2e.Error|any err The error raised, as pytest.raises(...) as e.
---@overload fun(self: e2e.Expect, spec: e2e.RaisesSpec): e2e.Error|any
function Expect:raises(class_or_text, text) end

--- What `raises` (and a test's `raises` option) matches; nil fields match anything.
---@class e2e.RaisesSpec
---@field class? e2e.ErrorClass|string The error's class.
---@field text? string A plain text its tostring must contain.
---@field pattern? string A Lua pattern its tostring must match.
