#!/usr/bin/env python3
"""Attention peers: PyTorch SDPA with the cuDNN and FlashAttention-2 backends on dense bf16 KV.

Decode (issue #7): the shapes tests/ops/decode_attention_parity_test.cc times (query length 1,
head_dim 128); records carry kind "decode" and KV bandwidth.
Prefill (issue #10): the causal shapes tests/ops/prefill_attention_parity_test.cc times (32 / 8
heads, head_dim 128, the same shape names); records carry kind "prefill" and TFLOP/s of useful
causal FLOPs (4 heads d (q (ctx - q) + q^2 / 2) per sequence, as for brisk). The ragged batch
runs padded to its longest sequence (peer "cudnn", "fa2") and one sequence at a time
("cudnn_1by1"); the chunk continuing cached tokens uses a lower-right causal mask.

Each backend gets grouped-query attention natively (enable_gqa=True) where it accepts it, else
K and V repeated to all query heads (materialised before timing; the bandwidth still counts the
kv-head bytes, as for brisk). Timing: CUDA events around back-to-back calls (50 decode, 10
prefill), after warm-up, median of 5 (prefill 3) such batches. Writes one JSON line per
(backend, shape) to the file named by the first argument (appends) and prints a table.

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

# Prefill shapes (name, [(new tokens, context)] per sequence), 32 / 8 heads, head_dim 128, causal.
RAGGED_LENS = [100 + (i * 977 + 331) % 1901 for i in range(64)]  # same formula as the C++ case
PREFILL_SHAPES = [
    ("bf16 prefill 4x4096 32/8 hd 128", [(4096, 4096)] * 4),
    ("bf16 prefill 1x16384 32/8 hd 128", [(16384, 16384)]),
    ("bf16 prefill ragged 64x100-2000 32/8 hd 128", [(n, n) for n in RAGGED_LENS]),
    ("bf16 chunk 2048 after 14336 32/8 hd 128", [(2048, 16384)]),
]
PREFILL_HEADS, PREFILL_KV_HEADS = 32, 8
PREFILL_CALLS = 10
PREFILL_BATCHES = 3


def copy_gb_per_s(torch):
    """This card's device-to-device copy rate (bytes read and written), the decode shapes' limit as
    ops_parity measures it (tests/ops/ops_test_util.h)."""
    a = torch.empty(256 << 20, dtype=torch.bfloat16, device="cuda")
    b = torch.empty_like(a)
    us = time_call(lambda: b.copy_(a), torch, calls=10, batches=3)
    del a, b
    return 2 * 2 * (256 << 20) / us / 1e3


def time_call(fn, torch, calls=CALLS, batches=BATCHES):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls * 1e3)  # us per call
    return statistics.median(times)


def prefill_flops(seqs):
    return sum(4.0 * PREFILL_HEADS * HEAD_DIM * (q * (ctx - q) + 0.5 * q * q) for q, ctx in seqs)


def sdpa_caller(F, q, k, v, heads, kv_heads, causal):
    """A call of SDPA with GQA natively if the backend takes it, else with K / V repeated.
    causal: True (top-left, q and k equally long), or an attn_mask object."""
    kw = {"is_causal": True} if causal is True else {"attn_mask": causal}
    try:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=heads != kv_heads, **kw)
        return "enable_gqa", lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=heads != kv_heads, **kw)
    except RuntimeError:
        kk = k.repeat_interleave(heads // kv_heads, dim=1)
        vv = v.repeat_interleave(heads // kv_heads, dim=1)
        F.scaled_dot_product_attention(q, kk, vv, **kw)
        return "repeat_interleave", lambda: F.scaled_dot_product_attention(q, kk, vv, **kw)


def prefill_peers(torch, F, sdpa_kernel, backends):
    """Records of the prefill shapes (kind "prefill")."""
    try:
        from torch.nn.attention.bias import causal_lower_right
    except Exception:  # noqa: BLE001
        causal_lower_right = None
    lines = []
    h, kvh, d = PREFILL_HEADS, PREFILL_KV_HEADS, HEAD_DIM
    for shape, seqs in PREFILL_SHAPES:
        flops = prefill_flops(seqs)
        uniform = len(set(seqs)) == 1
        runs = []  # (peer, backend, builder) builder() -> (mode, fn)
        if uniform:
            q_len, ctx = seqs[0]
            batch = len(seqs)

            def build(q_len=q_len, ctx=ctx, batch=batch):
                q = torch.randn(batch, h, q_len, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(batch, kvh, ctx, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn_like(k)
                if q_len == ctx:
                    causal = True
                elif causal_lower_right is not None:
                    causal = causal_lower_right(q_len, ctx)
                else:
                    raise RuntimeError("no causal_lower_right in this torch")
                return sdpa_caller(F, q, k, v, h, kvh, causal)

            runs += [(name, backend, build) for name, backend in backends]
        else:
            longest = max(ctx for _, ctx in seqs)

            def build_padded():
                q = torch.randn(len(seqs), h, longest, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(len(seqs), kvh, longest, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn_like(k)
                return sdpa_caller(F, q, k, v, h, kvh, True)

            def build_one_by_one():
                calls = []
                for q_len, ctx in seqs:
                    q = torch.randn(1, h, q_len, d, device="cuda", dtype=torch.bfloat16)
                    k = torch.randn(1, kvh, ctx, d, device="cuda", dtype=torch.bfloat16)
                    v = torch.randn_like(k)
                    mode, fn = sdpa_caller(F, q, k, v, h, kvh, True)
                    calls.append(fn)

                def run_all():
                    for fn in calls:
                        fn()
                return mode + ", one at a time", run_all

            for name, backend in backends:
                runs.append((name, backend, build_padded))
                if name == "cudnn":
                    runs.append(("cudnn_1by1", backend, build_one_by_one))
        for name, backend, build in runs:
            record = {"op": "attention_peer", "kind": "prefill", "peer": name, "shape": shape,
                      "torch": torch.__version__}
            try:
                with sdpa_kernel([backend]):
                    mode, fn = build()
                    us = time_call(fn, torch, PREFILL_CALLS, PREFILL_BATCHES)
                record.update(mode=mode, time_us=round(us, 3), tflop_per_s=round(flops / us / 1e6, 3),
                              ratio_to_limit=round(flops / us / 1e6 / 692, 4))
            except Exception as e:  # noqa: BLE001 - a backend that cannot run the shape is reported
                record.update(error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
            lines.append(record)
            fn = None
            torch.cuda.empty_cache()
    return lines


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
    copy_rate = copy_gb_per_s(torch)
    torch.manual_seed(0)
    for batch, context, heads, kv_heads in SHAPES:
        q = torch.randn(batch, heads, 1, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, kv_heads, context, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kv_bytes = 2.0 * batch * context * kv_heads * HEAD_DIM * 2
        shape = f"bf16 B {batch} ctx {context} {heads}/{kv_heads} hd 128"
        for name, backend in backends:
            record = {"op": "attention_peer", "kind": "decode", "peer": name, "shape": shape,
                      "torch": torch.__version__}
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
                              ratio_to_limit=round(kv_bytes / us / 1e3 / copy_rate, 4))
                del kk, vv
            except Exception as e:  # noqa: BLE001 - a backend that cannot run the shape is reported
                record.update(error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
            lines.append(record)
            torch.cuda.empty_cache()
        del q, k, v
        torch.cuda.empty_cache()
    if "--decode-only" not in sys.argv:
        lines += prefill_peers(torch, F, sdpa_kernel, backends)
    if out_path:
        with open(out_path, "a") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    print(f"{'peer':10s} {'shape':44s} {'us':>9s} {'achieved':>14s} mode")
    for r in lines:
        if "error" in r:
            print(f"{r['peer']:10s} {r['shape']:44s} error: {r['error']}")
        elif r["kind"] == "decode":
            print(f"{r['peer']:10s} {r['shape']:44s} {r['time_us']:9.1f} {r['gb_per_s'] / 1e3:9.2f} TB/s {r['mode']}")
        else:
            print(f"{r['peer']:10s} {r['shape']:44s} {r['time_us']:9.1f} {r['tflop_per_s']:7.1f} TFLOP/s {r['mode']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
