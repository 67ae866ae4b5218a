#!/usr/bin/env python3
"""Where a decode step's device time goes, kernel by kernel: the raw page of an Nsight Compute
report (`ncu --import R.ncu-rep --csv --page raw`) over `brisk bench latency`, with each kernel's
time (gpu__time_duration) and DRAM bytes (dram__bytes_read / _write). ncu runs the kernels one
at a time, so the sum is the step's kernel time without overlap; the step time `bench latency`
reports without ncu, minus this sum, is what launches, dependencies and ramps cost.

Kernels are grouped by name (template arguments dropped); steps end at the sampler's launch (one
a step), and only the steps after the first of them without a prefill kernel count (start-up, the
weights' generation and every prompt's prefill are left out). Prints per group: calls per step, us
per call, us per step, share, DRAM GB/s while it runs; then the totals per step.

Usage: python3 bench/ncu_summary.py RAW.csv [STEP_KERNEL]
  STEP_KERNEL: the kernel launched once a step (default sample_kernel).
"""
import csv
import re
import sys
from collections import defaultdict

TIME, READ, WRITE = "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"
SCALE = {"ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "nsecond": 1e-3, "second": 1e6,
         "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def short_name(name):
    name = name.strip().replace("(anonymous namespace)::", "")
    name = re.sub(r"\([^()]*\)$", "", name)  # parameters
    depth, out, first_arg = 0, [], []
    for ch in name:  # template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)  # ncu may cut a name inside its scope: "unnamed>::kernel"
        elif depth == 0:
            out.append(ch)
        elif depth == 1 and not (first_arg and first_arg[-1] == ","):
            first_arg.append(ch)
    base = "".join(out).split("::")[-1].split(" ")[-1].strip()
    if base in ("Kernel", "Kernel2", "device_kernel"):  # cuBLAS / CUTLASS: the configuration names it
        base = "".join(first_arg).rstrip(",").split("::")[-1].strip() or base
    return base or name[:60]


def main():
    path = sys.argv[1]
    step_kernel = sys.argv[2] if len(sys.argv) > 2 else "sample_kernel"
    rows = list(csv.reader(open(path, newline="")))
    header_at = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if header_at is None:
        print(f"{path}: no ncu raw page (see the ncu log)")
        return 1
    header = rows[header_at]
    col = {name: header.index(name) for name in ("Kernel Name", TIME, READ, WRITE) if name in header}
    if TIME not in col:
        print(f"{path}: no {TIME} column")
        return 1
    units = rows[header_at + 1]  # the raw page's second row holds the units
    unit_scale = {k: SCALE.get(units[i].strip(), 1.0) for k, i in col.items() if k != "Kernel Name"}

    groups = defaultdict(lambda: [0, 0.0, 0.0])  # calls, us, bytes
    started = False
    step = []  # (name, us, bytes) of the step so far
    for r in rows[header_at + 2:]:
        if len(r) <= max(col.values()):
            continue
        name = short_name(r[col["Kernel Name"]])
        if not started:
            started = name == step_kernel
            continue
        try:
            us = float(r[col[TIME]].replace(",", "")) * unit_scale[TIME]
            moved = sum(float(r[col[k]].replace(",", "")) * unit_scale[k] for k in (READ, WRITE) if k in col)
        except ValueError:
            continue
        step.append((name, us, moved))
        if name != step_kernel:
            continue
        if not any("prefill" in n for n, _, _ in step):
            for n, t, b in step:
                g = groups[n]
                g[0] += 1
                g[1] += t
                g[2] += b
        step = []
    steps = groups.get(step_kernel, [0])[0]
    if steps == 0:
        print(f"no {step_kernel} launches: per-step figures cannot be formed; totals over the run follow")
        steps = 1
    total = sum(g[1] for g in groups.values())
    print(f"{steps} steps; kernel time {total / steps:.1f} us a step (kernels one at a time, no overlap)")
    print(f"{'kernel':44s} {'calls/step':>10s} {'us/call':>8s} {'us/step':>8s} {'share':>6s} {'DRAM GB/s':>10s}")
    for name, (calls, us, moved) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        if us / total < 0.002:
            continue
        print(f"{name[:44]:44s} {calls / steps:10.1f} {us / calls:8.2f} {us / steps:8.1f} {100 * us / total:5.1f}% "
              f"{moved / (us * 1e-6) / 1e9 if us > 0 else 0:10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
