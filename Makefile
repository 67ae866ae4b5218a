# The newcomer's entry points: `make run` and `make test` (README.md).
JOBS ?= $(shell nproc)
MODEL ?= models/brisk-tiny
PROMPT_IDS ?= 1,2,3,4

.PHONY: setup build test run clean

setup:
	@scripts/setup

build: setup
	cmake --preset cpu
	cmake --build --preset cpu -j $(JOBS)

test: build
	ctest --preset cpu -j $(JOBS)

run: build
	build/cpu/bin/brisk generate --model $(MODEL) --prompt-ids $(PROMPT_IDS) --max-tokens 32

clean:
	rm -rf build
