#!/usr/bin/env python3
"""HF `tokenizers` side of bench/tokenizer_bench.cc: single-threaded encode throughput over
the ShareGPT prompts. Usage: scripts/python bench/tokenizer_bench.py TOKENIZER_JSON_OR_DIR [sharegpt.json]"""
import json
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, Regex  # noqa: E402

QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")


def load(path):
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "tokenizer.json")):
        path = os.path.join(path, "tokenizer.json")
    if path.endswith(".json"):
        try:
            return Tokenizer.from_file(path)
        except Exception as e:  # tokenizers 0.23 rejects Llama-2's merges written with extra spaces
            sys.exit(f"{path}: HF tokenizers cannot load it ({e})")
    tok = Tokenizer(models.BPE.from_file(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")))
    if "qwen" in path:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2), "isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def main():
    path = sys.argv[1]
    data_path = sys.argv[2] if len(sys.argv) > 2 else "../shared/testdata/workloads/sharegpt_v3_filtered_500.json"
    texts = [item["conversations"][0]["value"] for item in json.load(open(data_path, encoding="utf-8"))]
    num_bytes = sum(len(t.encode("utf-8")) for t in texts)
    t0 = time.perf_counter()
    tok = load(path)
    t1 = time.perf_counter()
    for t in texts:
        tok.encode(t, add_special_tokens=False)
    t2 = time.perf_counter()
    for t in texts:
        tok.encode(t, add_special_tokens=False)
    t3 = time.perf_counter()
    print(f"{path}: load {t1 - t0:.3f} s, encode cold {num_bytes / 1e6 / (t2 - t1):.2f} MB/s, "
          f"warm {num_bytes / 1e6 / (t3 - t2):.2f} MB/s")


if __name__ == "__main__":
    main()
