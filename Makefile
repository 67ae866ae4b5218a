# The newcomer's entry points: `make run` and `make test` (README.md).
JOBS ?= $(shell nproc)
# Until the trained default model lands (issue 9), `make run` uses a random-weight test model.
MODEL ?= tests/data/models/llama-gqa4-hd64-tied-llama3rope-bf16
PROMPT_IDS ?= 1,17,300,42,5

.PHONY: setup build test run clean bench-tokenizer

setup:
	@scripts/setup

build: setup
	cmake --preset cpu
	cmake --build --preset cpu -j $(JOBS)

test: build
	ctest --preset cpu -j $(JOBS)

run: build
	build/cpu/bin/brisk generate --model $(MODEL) --prompt-ids $(PROMPT_IDS) --max-tokens 32

# Encode throughput on the ShareGPT prompts, brisk vs Hugging Face tokenizers, single thread.
TOKENIZERS ?= gpt2 qwen2 phi3 llama2
bench-tokenizer: build
	cmake --build --preset cpu --target tokenizer_bench
	@for t in $(TOKENIZERS); do \
	  d=../shared/testdata/tokenizers/$$t; \
	  echo "== $$t"; build/cpu/bench/tokenizer_bench $$d; scripts/python bench/tokenizer_bench.py $$d; \
	done

clean:
	rm -rf build
