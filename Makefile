# Thin front over CMake: the targets users type.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DABX_WERROR=ON
ARGS    ?=

.PHONY: all dev deps build test bench clean install

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

bench: build
	@for b in bench/*.sh; do [ -x "$$b" ] && "$$b" $(BUILD) || true; done

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
