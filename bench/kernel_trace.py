#!/usr/bin/env python3
"""Where a decode step's time goes inside its CUDA graph, from the kernel trace that
tools/kernel_trace writes (each kernel's device start and end, the graph launch it belongs to).

Unlike Nsight Compute (bench/ncu_summary.py), which runs kernels one at a time with cold caches,
the trace keeps the programmatic-dependent overlap of a real step, so it shows what each kernel
adds to the step: its marginal time, the step's end moving from the latest end before it to its
own (the marginals of a step sum to its span). A kernel that starts before the one ahead of it
ends (a negative lead) was resident and waiting; a positive lead is time the GPU had no kernel of
the step running.

Per CUDA graph replayed at least --min-replays times (the decode graphs of `bench latency`, one
per batch size), grouped by kernel (name, grid and the kernel before it, so that the projections
stay apart): calls a replay, mean duration, mean lead, marginal us a replay and its share of the
span. Then the replays of all those graphs together by kernel name (grids merged: a serving run's
decode steps), the steps run outside graphs (mixed and prefill steps, each ending at the sampler's
launch) the same way, then the kernels launched outside graphs and all kernels by total time.

Usage: python3 bench/kernel_trace.py TRACE.csv [--min-replays N] [--top N] [--graphs N]
                                     [--step-kernel NAME] [--min-step-kernels N]
"""
import argparse
import csv
import functools
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_summary import short_name  # noqa: E402


@functools.lru_cache(maxsize=None)
def kernel_name(name):
    return short_name(name)


class Kernel:
    __slots__ = ("start", "end", "correlation", "graph", "name", "key")

    def __init__(self, row):
        self.start, self.end = int(row["start"]), int(row["end"])
        self.correlation, self.graph = int(row["correlation"]), int(row["graph"])
        self.name = kernel_name(row["name"])
        self.key = f"{self.name} [{row['grid_x']},{row['grid_y']},{row['grid_z']}]"


def read(path):
    with open(path, newline="") as f:
        return [Kernel(row) for row in csv.DictReader(f)]


def busy_ns(kernels):
    """The union of the kernels' intervals."""
    total, cur_start, cur_end = 0, None, None
    for k in sorted(kernels, key=lambda k: k.start):
        if cur_end is None or k.start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = k.start, k.end
        else:
            cur_end = max(cur_end, k.end)
    return total + (cur_end - cur_start if cur_end is not None else 0)


def graph_table(replays, top, by_name=False, unit="replay"):
    """replays: lists of kernels, one list a graph launch (or an eager step); rows by kernel name,
    grid and the kernel before it (which tells apart the projections of one grid: o_proj after the
    attention, down after silu_mul), or by name alone."""
    n = len(replays)
    stats = defaultdict(lambda: [0, 0, 0, 0])  # calls, duration ns, lead ns, marginal ns
    spans, busy = [], []
    for kernels in replays:
        kernels = sorted(kernels, key=lambda k: (k.start, k.end))
        spans.append(kernels[-1].end - kernels[0].start if kernels else 0)
        busy.append(busy_ns(kernels))
        latest, before = kernels[0].start, "start"
        for k in kernels:
            s = stats[k.name if by_name else f"{k.key} < {before}"]
            before = k.name
            s[0] += 1
            s[1] += k.end - k.start
            s[2] += k.start - latest
            s[3] += max(k.end - latest, 0)
            latest = max(latest, k.end)
    span = sum(spans) / n
    lines = [f"{n} {unit}s, {sum(len(r) for r in replays) / n:.0f} kernels a {unit}, "
             f"span {span / 1e3:.1f} us a {unit}, "
             f"GPU busy {100 * sum(busy) / max(sum(spans), 1):.1f}%",
             f"{'kernel' if by_name else 'kernel [grid] < the kernel before':58s} {'calls':>6s} {'us/call':>8s} "
             f"{'lead us':>8s} {'marg. us':>9s} {'share':>6s}"]
    rows = sorted(stats.items(), key=lambda kv: -kv[1][3])
    for key, (calls, duration, lead, marginal) in rows[:top]:
        lines.append(f"{key[:58]:58s} {calls / n:6.1f} {duration / calls / 1e3:8.2f} {lead / calls / 1e3:8.2f} "
                     f"{marginal / n / 1e3:9.1f} {100 * marginal / n / max(span, 1):5.1f}%")
    return lines


def eager_steps(eager, step_kernel):
    """The kernels launched outside graphs, in start order, cut after each step_kernel (the sampler,
    launched once a step)."""
    steps, step = [], []
    for k in eager:
        step.append(k)
        if k.name == step_kernel:
            steps.append(step)
            step = []
    return steps


def print_totals(title, kernels, top):
    if not kernels:
        return
    totals = defaultdict(lambda: [0, 0])
    for k in kernels:
        totals[k.name][0] += 1
        totals[k.name][1] += k.end - k.start
    all_ns = sum(t[1] for t in totals.values())
    span = max(k.end for k in kernels) - min(k.start for k in kernels)
    print(f"{title}: {len(kernels)}, {all_ns / 1e6:.1f} ms of kernel time over {span / 1e6:.1f} ms "
          f"(GPU busy {100 * busy_ns(kernels) / max(span, 1):.1f}%)")
    for name, (calls, ns) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{name[:58]:58s} {calls:8d} {ns / calls / 1e3:8.2f} us {100 * ns / all_ns:5.1f}%")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--min-replays", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--graphs", type=int, default=3, help="per-graph tables for this many graphs")
    parser.add_argument("--step-kernel", default="sample_kernel", help="the kernel that ends a step")
    parser.add_argument("--min-step-kernels", type=int, default=20,
                        help="eager steps with fewer kernels (a decode step's sampler) are left out")
    args = parser.parse_args()
    kernels = read(args.trace)
    if not kernels:
        print(f"{args.trace}: no kernels")
        return 1
    launches = defaultdict(list)  # (graph, correlation) -> kernels of one graph launch
    for k in kernels:
        if k.graph:
            launches[(k.graph, k.correlation)].append(k)
    by_graph = defaultdict(list)
    for (graph, _), ks in launches.items():
        by_graph[graph].append(ks)
    ranked = [kv for kv in sorted(by_graph.items(), key=lambda kv: -len(kv[1])) if len(kv[1]) >= args.min_replays]
    for graph, replays in ranked[:args.graphs]:
        print(f"graph {graph}: " + "\n".join(graph_table(replays, args.top)))
        print()
    if len(ranked) > 1:
        replays = [ks for _, rs in ranked for ks in rs]
        print(f"every graph above {args.min_replays - 1} replays ({len(ranked)} graphs), by kernel name: "
              + "\n".join(graph_table(replays, args.top, by_name=True)))
        print()
    eager = sorted((k for k in kernels if not k.graph), key=lambda k: k.start)
    steps = [step for step in eager_steps(eager, args.step_kernel) if len(step) >= args.min_step_kernels]
    if steps:
        table = graph_table(steps, args.top, by_name=True, unit="step")
        print(f"eager steps of {args.min_step_kernels} kernels or more (mixed and prefill steps, ending at "
              f"{args.step_kernel}), by kernel name: " + "\n".join(table))
        print()
    print_totals("kernels outside graphs", eager, args.top)
    print_totals("all kernels", kernels, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
