# The newcomer's entry points: `make run` and `make test` (README.md).
JOBS ?= $(shell nproc)
# The bundled default model: a 9.7M-parameter Llama trained by tools/train_default_model.py on
# Jane Austen's novels (models/tiny-austen/README.md). Its greedy output for PROMPT is pinned by
# tests/e2e/default_model_test.cc.
MODEL ?= models/tiny-austen
PROMPT ?= It was a fine morning, and Emma

.PHONY: setup build test run clean bench-tokenizer

setup:
	@scripts/setup

build: setup
	cmake --preset cpu
	cmake --build --preset cpu -j $(JOBS)

test: build
	ctest --preset cpu -j $(JOBS)

run: build
	build/cpu/bin/brisk generate --model $(MODEL) --prompt "$(PROMPT)" --max-tokens 48

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
