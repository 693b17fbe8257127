# Thin front over CMake: the targets users type.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DABX_WERROR=ON
ARGS    ?=

.PHONY: all dev deps build test check-sanitize bench clean install e2e e2e-all e2e-local e2e-cleanup

all: build

deps:
	@scripts/deps.sh

dev: deps build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure $(ARGS)

# The same tests (but the SDK conformance run) on an AddressSanitizer +
# UBSan build: memory errors and leaks fail the test that hit them.
check-sanitize: deps
	cmake -S . -B $(BUILD)-sanitize $(CMAKE_FLAGS) -DABX_SANITIZE=ON
	cmake --build $(BUILD)-sanitize -j $(JOBS)
	ctest --test-dir $(BUILD)-sanitize --output-on-failure -E conformance $(ARGS)

# The suite. `e2e`/`e2e-all` use the platform configured by ABX_SANDBOX_*
# (environment or .env); `e2e-local` starts abx-local for the run
# (abx-e2e --local). `e2e-cleanup` is the janitor: a dry run listing the
# sandboxes earlier runs left; ARGS=--yes deletes them.
E2E_FAST = -m "not e2e_slow" -r a

e2e: build
	$(BUILD)/host/abx-e2e $(E2E_FAST) $(ARGS)

e2e-all: build
	$(BUILD)/host/abx-e2e -r a $(ARGS)

e2e-local: build
	$(BUILD)/host/abx-e2e --local $(E2E_FAST) $(ARGS)

e2e-cleanup: build
	$(BUILD)/host/abx-e2e cleanup $(ARGS)

bench: build
	@for b in bench/*.sh; do [ -x "$$b" ] && "$$b" $(BUILD) || true; done

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize

# Coverage-guided fuzzing with clang + libFuzzer, FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)
