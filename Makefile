# The newcomer's entry points: `make run` and `make test` (README.md).
JOBS ?= $(shell nproc)
# Until the trained default model lands (issue 9), `make run` uses a random-weight test model.
MODEL ?= tests/data/models/llama-gqa4-hd64-tied-llama3rope-bf16
PROMPT_IDS ?= 1,17,300,42,5

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
