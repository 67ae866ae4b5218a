#!/usr/bin/env python3
"""FP8 GEMM peers (issue #33), measured in the same gpu-check run as brisk's GemmFp8Perf.

On the shapes tests/ops/gemm_fp8_parity_test.cc times (Llama-3-8B gate_up, K 4096 x N 28672):
  cublaslt_fp8_tensor  torch._scaled_mm with per-tensor scales (cuBLASLt), bf16 out
  torch_fp8_rowwise    torch._scaled_mm with per-row x per-column scales (PyTorch's rowwise kernel)
Inputs are already e4m3 (brisk's times include quantizing x). Timing: w4a16_peers.py's. Writes
one JSON line per (peer, M) to the file named by the first argument (appends).

Run on the GPU machine: python3 bench/fp8_peers.py OUT.jsonl
"""
import sys

from w4a16_peers import time_call, write_records

N, K = 28672, 4096
M_SWEEP = [16, 256, 2048, 8192]


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else None
    import torch
    torch.manual_seed(0)
    w = (torch.randn(N, K, device="cuda") * 0.02).to(torch.float8_e4m3fn)
    records = []
    for m in M_SWEEP:
        x = torch.randn(m, K, device="cuda").to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        peers = {
            "cublaslt_fp8_tensor": lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            "torch_fp8_rowwise": lambda: torch._scaled_mm(
                x, w.t(), scale_a=torch.ones(m, 1, device="cuda"), scale_b=torch.ones(1, N, device="cuda"),
                out_dtype=torch.bfloat16),
        }
        for peer, fn in peers.items():
            try:
                us = time_call(torch, fn)
                records.append({"peer": peer, "m": m, "n": N, "k": K, "time_us": us,
                                "tflop_per_s": 2.0 * m * N * K / us / 1e6})
            except Exception as e:  # record why a peer could not run
                records.append({"peer": peer, "m": m, "n": N, "k": K, "error": str(e)[:300]})
    write_records(records, out_path)


if __name__ == "__main__":
    main()
