#!/usr/bin/env python3
"""The W4A16 table of issue #8: brisk's GemmW4A16Perf numbers (ops_parity perf JSON lines) joined
with the peers of bench/w4a16_peers.py measured in the same gpu-check run; then brisk's dense bf16
gemm (GemmPerf.Llama8B) beside cuBLAS on the same shapes.

Per (shape, M): brisk's time; the int4 weight bandwidth (N K / 2 bytes over the time, TB/s) and
TFLOP/s; the ratio to the H200's physical limits (4.8 TB/s, ~790 dense bf16 TFLOP/s; the larger
of the two); each peer's time and peer time / brisk time (> 1: brisk is faster).

Usage: python3 bench/w4a16_table.py OPS_PERF.jsonl W4A16_PEERS.jsonl
"""
import json
import re
import sys

LIMIT_TBPS, LIMIT_TFLOPS = 4.8, 790.0
SHAPE_RE = re.compile(r"M (\d+) N (\d+) K (\d+)")


def load(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except OSError:
        return []


def main():
    perf, peers = load(sys.argv[1]), load(sys.argv[2])
    ours, dense = {}, {}
    for p in perf:
        parts = p["op"].split()
        m = SHAPE_RE.search(p["shape"])
        if len(parts) != 2 or not m:
            continue  # tuning rows ("w4a16 cfgN name") are listed by gpu-check
        key = (parts[1], int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if parts[0] == "w4a16":
            ours[key] = p["time_us"]
        elif parts[0] == "gemm":
            dense[key] = p["time_us"]
    by_peer = {(r["peer"], r["shape"], r["m"], r["n"], r["k"]): r for r in peers}
    keys = list(ours) + [(r["shape"], r["m"], r["n"], r["k"]) for r in peers
                         if (r["shape"], r["m"], r["n"], r["k"]) not in ours]
    if not keys and not dense:
        return

    def peer_cols(peer, key, mine):
        r = by_peer.get((peer,) + key)
        if r is None:
            return f"{'-':>9s} {'-':>6s}"
        if "error" in r:
            return f"{'err':>9s} {'-':>6s}"
        ratio = f"{r['time_us'] / mine:6.2f}" if mine else f"{'-':>6s}"
        return f"{r['time_us']:9.1f} {ratio}"

    print(f"\n{'w4a16 (bf16 x, g128)':22s} {'M':>6s} {'brisk us':>9s} {'int4 TB/s':>9s} {'TFLOP/s':>8s} "
          f"{'of limit':>8s} {'cuBLAS':>9s} {'x':>6s} {'cuBLAS16':>9s} {'x':>6s} {'torch i4':>9s} {'x':>6s}")
    for key in dict.fromkeys(keys):
        name, m, n, k = key
        mine = ours.get(key)
        if mine:
            tbps = n * k / 2 / mine / 1e6
            tflops = 2.0 * m * n * k / mine / 1e6
            limit = max(tbps / LIMIT_TBPS, tflops / LIMIT_TFLOPS)
            head = f"{mine:9.1f} {tbps:9.2f} {tflops:8.1f} {limit:8.2f}"
        else:
            head = f"{'-':>9s} {'-':>9s} {'-':>8s} {'-':>8s}"
        print(f"{name + f' {k}x{n}':22s} {m:6d} {head} {peer_cols('cublas_bf16', key, mine)} "
              f"{peer_cols('cublas_f16', key, mine)} {peer_cols('torch_int4', key, mine)}")
    if dense:
        print(f"\n{'dense bf16 gemm':22s} {'M':>6s} {'brisk us':>9s} {'TB/s':>9s} {'TFLOP/s':>8s} "
              f"{'of limit':>8s} {'cuBLAS':>9s} {'x':>6s}")
        for key, mine in dense.items():
            name, m, n, k = key
            tbps = 2.0 * n * k / mine / 1e6
            tflops = 2.0 * m * n * k / mine / 1e6
            limit = max(tbps / LIMIT_TBPS, tflops / LIMIT_TFLOPS)
            print(f"{name + f' {k}x{n}':22s} {m:6d} {mine:9.1f} {tbps:9.2f} {tflops:8.1f} {limit:8.2f} "
                  f"{peer_cols('cublas_bf16', key, mine)}")


if __name__ == "__main__":
    main()
