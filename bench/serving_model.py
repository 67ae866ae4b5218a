#!/usr/bin/env python3
"""A roofline model of `brisk bench throughput --dataset` on the ShareGPT workload (issue #31).

It replays the engine's schedule over the dataset's real lengths (first come first served, at most
--max-num-seqs sequences and --max-num-batched-tokens tokens a step, the running sequences' decodes
first, then prompt chunks, then new prompts) and costs each step as
    max(layer weights at the copy rate x --weight-efficiency, the step's layer FLOPs at --tflops)
    + the KV cache its decodes read, at the copy rate x --attention-efficiency
    + lm_head for the rows it samples + --step-overhead-ms,
leaving out prompt attention (a few percent at ShareGPT's ~100-token prompts). It tells how far
kernel speed alone can take the output tok/s, and where a run's time goes by step size
(docs/perf/serving.md). Lengths come from Qwen2's tokenizer as `scripts/gpu-check` gives it to the
bench (the same 104252 prompt and 287525 answer tokens for the first 1000 conversations).

    scripts/python bench/serving_model.py            # Llama-3-8B shape, bf16, H200 rates
    scripts/python bench/serving_model.py --sweep    # each rate at its limit in turn, then all
    scripts/python bench/serving_model.py --fp8 --tflops 1200   # FP8 layer weights (lm_head bf16)
"""
import argparse
import dataclasses
import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT.parent / "shared" / "testdata"
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def sharegpt_lengths(dataset, tokenizer_dir, num_prompts):
    """(prompt, answer) token counts of the first conversations passing vLLM's filter."""
    tok = Tokenizer(models.BPE.from_file(str(tokenizer_dir / "vocab.json"), str(tokenizer_dir / "merges.txt")))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    lengths = []
    for conversation in json.loads(Path(dataset).read_text()):
        turns = conversation["conversations"]
        if len(turns) < 2:
            continue
        prompt, answer = (len(tok.encode(turn["value"]).ids) for turn in turns[:2])
        if prompt < 4 or answer < 4 or prompt > 1024 or prompt + answer > 2048:
            continue
        lengths.append((prompt, answer))
        if len(lengths) == num_prompts:
            break
    return lengths


@dataclasses.dataclass
class Rates:
    copy_tbps: float = 4.17           # device-to-device copy, H200 (../shared/GPU.md)
    tflops: float = 650.0             # cuBLAS bf16 at large shapes
    weight_efficiency: float = 0.80   # of the copy rate, weight-bound GEMMs (batch-1 decode reaches 78%)
    attention_efficiency: float = 0.75
    step_overhead_ms: float = 0.4     # norms, RoPE, sampler and the like


@dataclasses.dataclass
class Shape:  # Llama-3-8B, bf16
    layer_weight_bytes: float = 13.96e9
    layer_flops_per_token: float = 2 * 6.98e9
    lm_head_bytes: float = 1.05e9
    lm_head_flops_per_row: float = 2 * 0.525e9
    kv_bytes_per_token: float = 32 * 8 * 128 * 2 * 2


def simulate(lengths, rates, shape, max_num_seqs, max_batched_tokens):
    waiting = [{"prompt": p, "answer": a, "done": 0, "out": 0} for p, a in lengths]
    waiting.reverse()
    running, steps = [], []
    while waiting or running:
        decodes = [r for r in running if r["done"] == r["prompt"]]
        tokens, chunks = len(decodes), []
        for r in running:
            if r["done"] < r["prompt"] and tokens < max_batched_tokens:
                chunks.append((r, min(r["prompt"] - r["done"], max_batched_tokens - tokens)))
                tokens += chunks[-1][1]
        while waiting and len(running) < max_num_seqs and tokens < max_batched_tokens:
            r = waiting.pop()
            running.append(r)
            chunks.append((r, min(r["prompt"], max_batched_tokens - tokens)))
            tokens += chunks[-1][1]
        sampled = len(decodes)
        for r, n in chunks:
            r["done"] += n
            sampled += r["done"] == r["prompt"]
        context = sum(r["prompt"] + r["out"] for r in decodes)
        bandwidth = rates.copy_tbps * 1e12
        seconds = (max(shape.layer_weight_bytes / (bandwidth * rates.weight_efficiency),
                       shape.layer_flops_per_token * tokens / (rates.tflops * 1e12)) +
                   context * shape.kv_bytes_per_token / (bandwidth * rates.attention_efficiency) +
                   shape.lm_head_bytes / bandwidth + sampled * shape.lm_head_flops_per_row / (rates.tflops * 1e12) +
                   rates.step_overhead_ms * 1e-3)
        steps.append((seconds, tokens, len(decodes), bool(chunks)))
        for r in running:
            if r["done"] == r["prompt"]:
                r["out"] += 1
        running = [r for r in running if r["out"] < r["answer"]]
    return steps


def report(name, lengths, steps):
    total = sum(s for s, *_ in steps)
    output = sum(a for _, a in lengths)
    decode = [(s, d) for s, _, d, mixed in steps if not mixed]
    small = sum(s for s, t, *_ in steps if t < 64)
    print(f"{name:<34} {output / total:8.0f} output tok/s  {total:6.2f} s  {len(decode)} decode / "
          f"{len(steps) - len(decode)} mixed steps, mean decode batch {sum(d for _, d in decode) / len(decode):.0f}, "
          f"{1e6 * sum(s for s, _ in decode) / sum(d for _, d in decode):.1f} us a decode token, "
          f"{100 * small / total:.0f}% of the time in steps under 64 tokens")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=TESTDATA / "workloads" / "sharegpt_v3_ppl_samples_2048.json")
    parser.add_argument("--tokenizer", type=Path, default=TESTDATA / "tokenizers" / "qwen2")
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--max-num-seqs", type=int, default=512)
    parser.add_argument("--max-num-batched-tokens", type=int, default=8192)
    for field in dataclasses.fields(Rates):
        parser.add_argument("--" + field.name.replace("_", "-"), type=float, default=field.default)
    parser.add_argument("--fp8", action="store_true", help="FP8 layer weights: half the bytes (give their --tflops)")
    parser.add_argument("--sweep", action="store_true", help="each rate at its limit in turn, then all of them")
    args = parser.parse_args()
    lengths = sharegpt_lengths(args.dataset, args.tokenizer, args.num_prompts)
    print(f"{len(lengths)} conversations: {sum(p for p, _ in lengths)} prompt, {sum(a for _, a in lengths)} "
          f"answer tokens")
    rates = Rates(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Rates)})
    runs = [("these rates", rates)]
    if args.sweep:
        limits = {"tflops": 1.15 * rates.tflops, "weight_efficiency": 1.0, "attention_efficiency": 1.0,
                  "step_overhead_ms": 0.0}
        runs += [(f"{name} {value:g}", dataclasses.replace(rates, **{name: value})) for name, value in limits.items()]
        runs.append(("all of them", dataclasses.replace(rates, **limits)))
    shape = Shape(layer_weight_bytes=Shape.layer_weight_bytes / 2) if args.fp8 else Shape()
    for name, r in runs:
        report(name, lengths, simulate(lengths, r, shape, args.max_num_seqs, args.max_num_batched_tokens))


if __name__ == "__main__":
    main()
