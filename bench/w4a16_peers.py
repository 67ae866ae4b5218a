#!/usr/bin/env python3
"""W4A16 GEMM peers (issue #8), measured in the same gpu-check run as brisk's GemmW4A16Perf.

Peers, on the shapes tests/ops/gemm_w4a16_parity_test.cc times (Llama-3-8B layers K x N over an
M sweep, and M = K = N = 16384):
  cublas_bf16  torch.matmul on a dense bf16 weight (cuBLAS)
  cublas_f16   the same in fp16 (the issue's square-GEMM reference)
  torch_int4   PyTorch's int4 kernel: torch._convert_weight_to_int4pack (once, at load time) and
               torch._weight_int4pack_mm, group 128, bf16 activations
Weights rotate over several copies (at least 256 MB in all) so that reads come from DRAM, not
the 50 MB L2, as for brisk. Timing: CUDA events around back-to-back calls after warm-up, as many
calls as fit in ~0.1 s (3 to 50), median of 3 batches. Writes one JSON line per (peer, shape, M)
to the file named by the first argument (appends).

Run on the GPU machine: python3 bench/w4a16_peers.py OUT.jsonl
"""
import json
import math
import statistics
import sys

LLAMA_SHAPES = [("gate_up", 28672, 4096), ("qkv", 6144, 4096), ("o_proj", 4096, 4096), ("down", 4096, 14336)]
M_SWEEP = [1, 2, 4, 8, 16, 32, 64, 128, 168, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192]
SQUARE = ("square", 16384, 16384, 16384)  # name, M, N, K
GROUP = 128


def time_call(torch, fn):
    fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    calls = max(3, min(50, int(0.1 / max(start.elapsed_time(end) / 1e3, 1e-6))))
    times = []
    for _ in range(3):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(times)


def copies_for(nbytes):
    return max(1, math.ceil(256e6 / nbytes))


def dense_weights(torch, n, k, dtype):
    w = torch.randn(n, k, device="cuda", dtype=dtype) * 0.02
    return [w] + [w.clone() for _ in range(copies_for(2 * n * k) - 1)]


def int4_weights(torch, n, k):
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, device="cuda")
    packed_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)  # [N, K / 2], high nibble first
    packed = torch._convert_weight_to_int4pack(packed_u8, 8)
    scales_zeros = torch.rand(k // GROUP, n, 2, device="cuda", dtype=torch.bfloat16) * 0.02
    return [(packed, scales_zeros)] + [(packed.clone(), scales_zeros.clone())
                                       for _ in range(copies_for(n * k / 2 + n * k / GROUP * 4) - 1)]


def rotate(fns):
    state = {"i": 0}

    def call():
        fns[state["i"] % len(fns)]()
        state["i"] += 1
    return call


def measure(torch, peer, name, m, n, k, weights, make_fn, x):
    try:
        us = time_call(torch, rotate([make_fn(x, w) for w in weights]))
        return {"peer": peer, "shape": name, "m": m, "n": n, "k": k, "time_us": us,
                "tflop_per_s": 2.0 * m * n * k / us / 1e6}
    except Exception as e:  # record why a peer could not run (e.g. an unsupported shape)
        return {"peer": peer, "shape": name, "m": m, "n": n, "k": k, "error": str(e)[:300]}


def write_records(records, out_path):
    """Prints the JSON lines and appends them to out_path (when given)."""
    for r in records:
        print(json.dumps(r))
    if out_path:
        with open(out_path, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else None
    import torch
    torch.manual_seed(0)
    dense = lambda x, w: (lambda: torch.matmul(x, w.t()))
    int4 = lambda x, w: (lambda: torch._weight_int4pack_mm(x, w[0], GROUP, w[1]))
    records = []
    for name, n, k in LLAMA_SHAPES:
        wd = dense_weights(torch, n, k, torch.bfloat16)
        try:
            wq = int4_weights(torch, n, k)
        except Exception as e:
            wq, err = None, str(e)[:300]
        for m in M_SWEEP:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            records.append(measure(torch, "cublas_bf16", name, m, n, k, wd, dense, x))
            if wq is not None:
                records.append(measure(torch, "torch_int4", name, m, n, k, wq, int4, x))
            else:
                records.append({"peer": "torch_int4", "shape": name, "m": m, "n": n, "k": k, "error": err})
        del wd, wq
        torch.cuda.empty_cache()
    name, m, n, k = SQUARE
    for peer, dtype in (("cublas_f16", torch.float16), ("cublas_bf16", torch.bfloat16)):
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        records.append(measure(torch, peer, name, m, n, k, [torch.randn(n, k, device="cuda", dtype=dtype)], dense, x))
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    records.append(measure(torch, "torch_int4", name, m, n, k, int4_weights(torch, n, k)[:1], int4, x))
    write_records(records, out_path)


if __name__ == "__main__":
    main()
