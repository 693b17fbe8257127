# Thin front over CMake: the targets users type.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DABX_WERROR=ON
ARGS    ?=

.PHONY: all dev deps deps-build deps-local build build-local build-sanitize test test-hosts \
        check-sanitize bench soak vary-loop clean install \
        e2e e2e-all e2e-local e2e-local-all e2e-cleanup

all: build

# Two footprints (docs/testing.md, "What each target installs"): `build`
# installs and builds only the runner's (abx-e2e: the cloud suite needs no
# root and nothing else); `build-local` adds abx-local's packages
# (`deps-local`; runsc too with RUNTIME=gvisor) and requires abx-local in
# the build. `deps` is all that `make test` runs with. Not root: packages
# come through passwordless sudo, else the message names the apt-get line.
deps:
	@scripts/deps.sh test

deps-build:
	@scripts/deps.sh build

deps-local:
	@scripts/deps.sh local $(if $(filter gvisor,$(RUNTIME)),gvisor)

dev: deps build-local

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

build-local: deps-local
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DABX_LOCAL=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Every ctest case once, in parallel (scripts/test.sh, docs/testing.md):
# the cases labelled `sanitize` (the C they exercise is ours) on an
# AddressSanitizer + UBSan build, where memory errors and leaks fail the
# case that hit them, then the ones labelled `release` (the SDK
# conformance, the e2b profile of the suite, gVisor, the soak, lints, docs,
# template builder) on the release build; tests/labels.cmake says which
# case is which. ARGS go to ctest in both passes (ARGS='-L quick': no
# abx-local, ARGS='-R envd'); TEST_JOBS cases run at once (default twice
# the cores). The whole suite on abx-local is among them: suite.local.fc
# (sanitizers) and suite.local.e2b, which compares the two runs' skips
# (outputs under $(BUILD)-sanitize/e2e/fc/ and $(BUILD)/e2e/e2b/).
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
test: deps build-local build-sanitize
	scripts/test.sh -b $(BUILD) -j $(TEST_JOBS) -- $(ARGS)

build-sanitize: deps-local
	cmake -S . -B $(BUILD)-sanitize $(CMAKE_FLAGS) -DABX_LOCAL=ON -DABX_SANITIZE=ON
	cmake --build $(BUILD)-sanitize -j $(JOBS)

# Every case the sanitizers can take (not only the `sanitize` ones) on the
# sanitizer build, one at a time unless ARGS=-jN: not the SDK conformance
# run (npm, no C of ours on the client side), suite.local.e2b (it compares
# with an fc run of the same build), the soak, nor the gVisor runs (an
# ASan envd on gVisor's kernel is untried).
SANITIZE_EXCLUDE = conformance|^suite\.local\.e2b$$|^suite\.soak$$|gvisor
check-sanitize: build-sanitize
	ctest --test-dir $(BUILD)-sanitize --output-on-failure \
	    -E '$(SANITIZE_EXCLUDE)' $(ARGS)

# The suite. `e2e`/`e2e-all` use the platform configured by ABX_SANDBOX_*
# (environment or .env); `e2e-local`/`e2e-local-all` start abx-local for the
# run (abx-e2e --local; root and bubblewrap, installed by `deps-local`), imitating
# FC unless PROFILE=e2b (below). Each writes a JUnit report and an HTML page under
# $(BUILD)/e2e/. ARGS adds abx-e2e options or
# paths (ARGS='-k timeout', ARGS=tests-lua/test_03_commands.lua,
# ARGS='--evidence my-topic'). `e2e-cleanup` is the janitor: a dry run
# listing what earlier runs left; ARGS=--yes deletes it.
E2E_WORKERS ?= 2
E2E_OUT      = $(BUILD)/e2e
E2E_FAST     = -m "not e2e_slow"
E2E_COMMON   = -n $(E2E_WORKERS) -r a

e2e: build
	$(BUILD)/host/abx-e2e $(E2E_FAST) $(E2E_COMMON) \
	    --junitxml $(E2E_OUT)/junit.xml --html $(E2E_OUT)/report.html $(ARGS)

e2e-all: build
	$(BUILD)/host/abx-e2e $(E2E_COMMON) \
	    --junitxml $(E2E_OUT)/junit-all.xml \
	    --html $(E2E_OUT)/report-all.html $(ARGS)

# The template roots first, with their progress on the terminal (a no-op
# once cached; abx-local serve would build them silently otherwise).
# PROFILE is the cloud abx-local imitates (docs/profiles.md): fc, FC Agent
# Sandbox, by default (the product's cloud); PROFILE=e2b for upstream E2B.
# It reaches both the roots (`abx-local template build --profile`) and the
# run (`abx-e2e --local --profile`), whose capability set follows it.
# PROFILE= (empty) passes no --profile: ABX_LOCAL_PROFILE decides.
PROFILE ?= fc
PROFILE_ARG = $(if $(PROFILE),--profile $(PROFILE))
# RUNTIME=gvisor runs the sandboxes under gVisor (docs/security.md: the
# choice for untrusted code); RUNTIME= (empty) leaves ABX_LOCAL_RUNTIME
# to decide, else bubblewrap.
RUNTIME ?=
RUNTIME_ENV = $(if $(RUNTIME),ABX_LOCAL_RUNTIME=$(RUNTIME)) $(if $(VARY),ABX_LOCAL_VARY=$(VARY))
# Not root: abx-local (the roots here, serve in abx-e2e --local) runs
# through passwordless sudo, and nothing else does; without one it is not
# run here, and abx-e2e --local's abx-local refuses, naming the ways out.
# (Expanded only by the targets that use it: no sudo probe for `make clean`.)
AS_ROOT = $(shell if [ "$$(id -u)" = 0 ]; then echo root; \
             elif sudo -n true 2>/dev/null; then echo sudo; else echo none; fi)
SUDO_KEEP = --preserve-env=ABX_LOCAL_CACHE,ABX_LOCAL_PROFILE,ABX_LOCAL_RUNTIME,ABX_LOCAL_VARY
ROOTS_AS_root  =
ROOTS_AS_sudo  = sudo -n $(SUDO_KEEP) --
ROOTS_AS_none  = echo "e2e-local: not root and no passwordless sudo: abx-local will refuse" ||
ROOTS = $(ROOTS_AS_$(AS_ROOT)) $(BUILD)/abx-local/server/abx-local template build $(PROFILE_ARG)

e2e-local: build-local
	$(ROOTS)
	$(RUNTIME_ENV) $(BUILD)/host/abx-e2e --local $(PROFILE_ARG) $(E2E_FAST) $(E2E_COMMON) \
	    --junitxml $(E2E_OUT)/junit-local.xml \
	    --html $(E2E_OUT)/report-local.html $(ARGS)

e2e-local-all: build-local
	$(ROOTS)
	$(RUNTIME_ENV) $(BUILD)/host/abx-e2e --local $(PROFILE_ARG) $(E2E_COMMON) \
	    --junitxml $(E2E_OUT)/junit-local-all.xml \
	    --html $(E2E_OUT)/report-local-all.html $(ARGS)

e2e-cleanup: build
	$(BUILD)/host/abx-e2e cleanup $(ARGS)

# The whole suite SOAK_N times per abx-local profile under a CPU hog (or,
# with SOAK_S=SECONDS, for that long); prints every test that failed in
# any run (scripts/soak.sh).
SOAK_N ?= 10
soak: build-local
	scripts/soak.sh $(SOAK_N)

# The fast suite at ten random --vary seeds, printed (suite.vary.loop).
vary-loop: build-local
	ctest --test-dir $(BUILD) --output-on-failure -L vary-loop $(ARGS)

# The host kinds (tests/hosts/): each booted as a QEMU guest.
test-hosts: build-local
	@scripts/deps.sh test hosts
	ctest --test-dir $(BUILD) --output-on-failure -L hosts $(ARGS)

# Each bench prints its figures with their aims; a missed aim only says so,
# a crash or a wrong result fails the bench, and any failed bench fails
# `make bench` (after all ran).
bench: build-local
	@failed=""; for b in bench/*.sh; do [ -x "$$b" ] || continue; \
	  "$$b" $(BUILD) || failed="$$failed $$(basename $$b)"; done; \
	if [ -n "$$failed" ]; then echo "bench: failed:$$failed" >&2; exit 1; fi; \
	echo "bench: every bench ran"

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize

# Coverage-guided fuzzing with clang + libFuzzer, FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)
