#!/usr/bin/env python3
"""Decode-attention peers for issue #7: PyTorch SDPA with the cuDNN and FlashAttention-2 backends
on dense bf16 KV of the shapes tests/ops/decode_attention_parity_test.cc times (query length 1,
head_dim 128). Each backend gets grouped-query attention natively (enable_gqa=True) where it
accepts it, else K and V repeated to all query heads (materialised before timing; the bandwidth
still counts the kv-head bytes, as for brisk). Timing: CUDA events around 50 back-to-back calls,
after warm-up, median of 5 such batches. Writes one JSON line per (backend, shape) to the file
named by the first argument (appends) and prints a table.

Run on the GPU machine: python3 bench/attention_peers.py OUT.jsonl
"""
import json
import statistics
import sys

SHAPES = [  # (batch, context, query heads, kv heads)
    (64, 4096, 32, 8),
    (1, 32768, 32, 8),
    (256, 512, 32, 8),
    (8, 4096, 32, 8),
    (8, 4096, 32, 32),
]
HEAD_DIM = 128
CALLS = 50
BATCHES = 5


def time_call(fn, torch):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(BATCHES):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(CALLS):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / CALLS * 1e3)  # us per call
    return statistics.median(times)


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # noqa: BLE001 - any import failure means: no peers here
        print(f"attention_peers: torch unavailable ({e}); skipping")
        return 0
    if not torch.cuda.is_available():
        print("attention_peers: no CUDA device; skipping")
        return 0
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)]
    lines = []
    torch.manual_seed(0)
    for batch, context, heads, kv_heads in SHAPES:
        q = torch.randn(batch, heads, 1, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, kv_heads, context, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kv_bytes = 2.0 * batch * context * kv_heads * HEAD_DIM * 2
        shape = f"bf16 B {batch} ctx {context} {heads}/{kv_heads} hd 128"
        for name, backend in backends:
            record = {"op": "attention_peer", "peer": name, "shape": shape, "torch": torch.__version__}
            try:
                with sdpa_kernel([backend]):
                    mode = "enable_gqa"
                    kk, vv = k, v
                    try:
                        F.scaled_dot_product_attention(q, kk, vv, enable_gqa=heads != kv_heads)
                        fn = lambda: F.scaled_dot_product_attention(q, kk, vv, enable_gqa=heads != kv_heads)  # noqa: E731
                    except RuntimeError:
                        mode = "repeat_interleave"
                        kk = k.repeat_interleave(heads // kv_heads, dim=1)
                        vv = v.repeat_interleave(heads // kv_heads, dim=1)
                        fn = lambda: F.scaled_dot_product_attention(q, kk, vv)  # noqa: E731
                        fn()
                    us = time_call(fn, torch)
                record.update(mode=mode, time_us=round(us, 3), gb_per_s=round(kv_bytes / us / 1e3, 3),
                              ratio_to_limit=round(kv_bytes / us / 1e3 / 4170, 4))
                del kk, vv
            except Exception as e:  # noqa: BLE001 - a backend that cannot run the shape is reported
                record.update(error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
            lines.append(record)
            torch.cuda.empty_cache()
        del q, k, v
        torch.cuda.empty_cache()
    if out_path:
        with open(out_path, "a") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    print(f"{'peer':6s} {'shape':36s} {'us':>9s} {'TB/s':>6s} mode")
    for r in lines:
        if "error" in r:
            print(f"{r['peer']:6s} {r['shape']:36s} error: {r['error']}")
        else:
            print(f"{r['peer']:6s} {r['shape']:36s} {r['time_us']:9.1f} {r['gb_per_s'] / 1e3:6.2f} {r['mode']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
