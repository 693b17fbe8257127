-- Capabilities (docs/capabilities.md): declared by E2E_PLATFORM/E2E_CAPS,
-- required by tests, groups, fixtures and at run time.
local e2e = require "e2e"
local test, expect, describe = e2e.test, e2e.expect, e2e.describe

test("needs pause", { requires = { "pause" } }, function() end)

describe("signed", { requires = "signed-urls" }, function()
  test("inherits the group's", function() end)
  test("adds its own", { requires = { "pause" } }, function() end)
end)

test("has says what is declared", function()
  print("platform=" .. e2e.platform .. " pause=" .. tostring(e2e.has("pause"))
    .. " proxy=" .. tostring(e2e.has("e2b-proxy")))
  print("capabilities=" .. table.concat(e2e.capabilities, ",") .. " local=" .. tostring(e2e.is_local)
    .. " plane=" .. tostring(e2e.data_plane_url))
  expect(function() e2e.has("no-such-cap") end):raises("unknown capability")
end)

test("requires at run time", function()
  e2e.requires("e2b-proxy")
  print("ran past requires")
end)

test("envd below the gate", function()
  e2e.requires_envd("0.5.2", "0.6.2", "file metadata")
  error("not skipped")
end)

test("envd at the gate", function()
  e2e.requires_envd({ envd_version = "0.6.2" }, "0.6.2", "file metadata")
end)

test("envd not a version", function()
  e2e.requires_envd("banana", "0.6.2")
end)

-- A file fixture that skips is not set up again for the next test.
local attempts = 0
e2e.fixture("needs_template", { scope = "file" }, function()
  attempts = attempts + 1
  e2e.skip("template x not found (attempt " .. attempts .. ")")
end)
test("fixture skip one", function(needs_template) end) -- luacheck: ignore 212 (used for its effect)
test("fixture skip two", function(needs_template) end) -- luacheck: ignore 212 (used for its effect)

local broken = 0
e2e.fixture("broken_file_fixture", { scope = "file" }, function()
  broken = broken + 1
  error("broken setup " .. broken)
end)
test("fixture error one", function(broken_file_fixture) end) -- luacheck: ignore 212 (used for its effect)
test("fixture error two", function(broken_file_fixture) end) -- luacheck: ignore 212 (used for its effect)
