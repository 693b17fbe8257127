---@meta e2e
-- LuaLS definitions (never run) of `require "e2e"`: the test DSL of
-- bindings/core/prelude.lua and bindings/core/expect.lua (docs/authoring.md is the
-- whole reference). The DSL adds no globals: take test, expect, ... from
-- this table. ctest lint.types checks every name against the built binary.
-- luacheck: ignore 212 241 (stubs: unused parameters; class tables only carry declarations)

--- The test DSL: tests, groups, fixtures, assertions, waiting, skipping, capabilities.
---@class e2e
---@field run_id string The run's id (E2E_RUN_ID or generated): resources a test creates carry it.
---@field worker_id string This worker's id, "gw0", "gw1", ... ("master" outside a worker), as pytest-xdist's.
---@field platform "fc"|"e2b" The platform whose capability set applies (E2E_PLATFORM).
---@field capabilities e2e.Capability[] The declared capabilities, sorted (E2E_PLATFORM, E2E_CAPS).
---@field is_local boolean True under `--local` (abx-local started for the run).
---@field data_plane_url? string The data-plane URL routing by E2b-Sandbox-Id/Port headers (ABX_SANDBOX_URL), or nil.
local e2e = {}

--- Registers a test; the runner calls `fn` with the fixtures its parameters name.
---@param name string A short lowercase sentence saying the behaviour; node id FILE::[group::]name.
---@param opts e2e.TestOpts
---@param fn function The test; each parameter names a fixture.
---@overload fun(name: string, fn: function)
function e2e.test(name, opts, fn) end

--- One test per case, named name[id] (pytest's ids); fn(case, fixtures...).
---@param name string
---@param cases any[] A non-empty list of case values.
---@param opts e2e.ParametrizeOpts
---@param fn function Called with the case value first, then the fixtures its other parameters name.
---@overload fun(name: string, cases: any[], fn: function)
function e2e.parametrize(name, cases, opts, fn) end

--- Groups tests: node id file::group::name; opts.requires applies to every test inside.
---@param name string
---@param opts e2e.DescribeOpts
---@param fn fun() Registers the group's tests.
---@overload fun(name: string, fn: fun())
function e2e.describe(name, opts, fn) end

--- Defines a fixture: fn receives its own dependencies by parameter name and returns `value[, teardown_fn]`.
---@param name string An identifier: the parameter name tests request it by.
---@param opts e2e.FixtureOpts
---@param fn function Returns the fixture's value and, optionally, a teardown function.
---@overload fun(name: string, fn: function)
function e2e.fixture(name, opts, fn) end

--- Adds a finalizer to the running test or the fixture being set up; finalizers run LIFO.
---@param fn fun()
function e2e.defer(fn) end

--- Skips the test now (in a fixture: every test of its scope that requests it).
---@param reason? string
function e2e.skip(reason) end

--- Fails the test now, with "file:line: msg".
---@param msg? string
function e2e.fail(msg) end

--- Sleeps s seconds, never past the test's deadline and not through an interrupt.
---@param s number Seconds, >= 0.
function e2e.sleep(s) end

--- Masks value everywhere from now on (output, reports, tracebacks); returns it.
---@param value string
---@return string value
function e2e.secret(value) end

--- Monotonic seconds, to size a wait by what the platform takes (never to assert a speed).
---@return number
function e2e.clock() end

--- Calls fn until it returns a truthy value (returned) or timeout passes; errors are retried too.
---@param fn fun(): any
---@param opts? e2e.EventuallyOpts
---@return any ... What fn returned.
function e2e.eventually(fn, opts) end

--- Renders any value as assertion messages do (bounded, cycle-safe, keys sorted).
---@param v any
---@return string
function e2e.repr(v) end

--- Structural equality, as expect():eq compares.
---@param a any
---@param b any
---@return boolean
function e2e.deep_eq(a, b) end

--- Whether e is an e2e error value (of that class, when given).
---@param e any
---@param class? e2e.ErrorClass|string
---@return boolean
function e2e.is_error(e, class) end

--- The registered markers, sorted by name.
---@return e2e.Marker[]
function e2e.markers() end

--- Registers a marker that tests may put in opts.marks.
---@param name string An identifier.
---@param description? string
function e2e.register_marker(name, description) end

--- Whether the platform declares capability name (an unknown name is an error).
---@param name e2e.Capability
---@return boolean
function e2e.has(name) end

--- From inside a test or fixture: skips unless every capability is declared.
---@param ... e2e.Capability
function e2e.requires(...) end

--- Skips when the sandbox's envd is older than min ("requires envd 0.6.2 or later for ...").
---@param sbx_or_version e2e.Sandbox|string A sandbox, or an envd version string.
---@param min string The minimum envd version, e.g. "0.6.2".
---@param what? string The feature, named in the skip reason.
function e2e.requires_envd(sbx_or_version, min, what) end

--- Starts an assertion on v; label (optional) prefixes its failure messages.
---@param v any
---@param label? string
---@return e2e.Expect
function e2e.expect(v, label) end

--- The options of `test` (bindings/core/prelude.lua, register).
---@class e2e.TestOpts
---@field marks? string[] Markers of the test (registered ones; "e2e" is added automatically).
---@field skip? string Skip the test with this reason.
---@field timeout? number The test's deadline in s (positive, finite), instead of --timeout.
---@field known_issue? string "KI-NNN: reason": a strict expected failure pinned to a known product defect.
---@field raises? string|e2e.RaisesSpec Narrows the pinned failure of known_issue (a class, a text or a spec).
---@field platform? boolean True: skipped without credentials even when no fixture needs the platform.
---@field requires? e2e.Capability|e2e.Capability[] Capabilities the test needs; skipped where one is not declared.
---@field reruns? integer This test's --reruns (0 to 100).
---@field group? string With --dist loadgroup, the tests of one group run on one worker.

--- The options of `parametrize`: those of `test` plus the case ids.
---@class e2e.ParametrizeOpts: e2e.TestOpts
---@field ids? string[]|fun(value: any, index: integer): string The case ids (non-empty, no '::').

--- The options of `describe`.
---@class e2e.DescribeOpts
---@field requires? e2e.Capability|e2e.Capability[] Capabilities every test inside needs.

--- The options of `fixture`.
---@class e2e.FixtureOpts
---@field scope? "test"|"file"|"session" How long its value lives (default "test"; session: in conftest.lua).
---@field needs_platform? boolean True: the tests that request it are skipped without credentials.

--- The options of `eventually`.
---@class e2e.EventuallyOpts
---@field timeout? number How long to retry, in s (default 10).
---@field interval? number Pause between attempts, in s (default 0.5).
---@field message? string Put in front of the failure's text.
---@field retry_on? e2e.ErrorClass[] Retry only errors of these classes (assertions are always retried).

--- A registered marker (e2e.markers()).
---@class e2e.Marker
---@field name string
---@field description string

--- A capability a platform may declare (docs/capabilities.md).
---@alias e2e.Capability
---| "pause" # Pause and resume (FC: allow-listed accounts, not on the Eco plan).
---| "signed-urls" # Signed file URLs honoured on secure sandboxes.
---| "e2b-proxy" # E2B's exact data-plane error bodies (JSON 502s, its HTML page).
---| "e2b-messages" # E2B's exact error message wording.

return e2e
