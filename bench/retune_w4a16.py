#!/usr/bin/env python3
"""Retunes the W4A16 kernels' table for one GPU (src/backend/cuda/tuning/<gpu>_w4a16.cc) from the
GemmW4A16Perf benchmarks of tests/ops/gemm_w4a16_parity_test.cc.

Runs GemmW4A16Perf.MmaConfigs and GemmW4A16Perf.Prefill (or reads their saved output: the
"[perf] ..." lines they print, or the JSON lines of BRISK_OPS_PERF_JSON), and per swept M takes
the configuration with the lowest time summed over the four Llama-3-8B shapes:
  mma_rules       the mma.sync kernel's configuration ("w4a16 cfgC shape" rows);
  wgmma_rules     the wgmma kernel's direct-x configuration ("w4a16-tT cfgC shape" rows; the
                  permuted "w4a16-tTp" ones serve groups that are not a multiple of 128);
  wgmma_min_rows  the first M where the best wgmma configuration beats the kernels without it
                  ("w4a16-deq shape" rows), wgmma_max_rows the last one before it stops doing so.
The table's other entries (passes, split and cost-estimate constants, fitted by hand) are carried
over from the previous table. docs/perf/w4a16.md says what each entry means.

Usage (on the GPU machine, with the bundle of scripts/gpu-check --bundle):
  python3 bench/retune_w4a16.py --binary build/gpu/ops_parity [--gpu "NVIDIA H200" --sms 132]
  python3 bench/retune_w4a16.py --from-log ops_perf.log [--gpu ... --sms ...]
  python3 bench/retune_w4a16.py --rewrite        (re-render the table as it is: checks its format)
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUNING_DIR = ROOT / "src" / "backend" / "cuda" / "tuning"
BENCHMARKS = "GemmW4A16Perf.MmaConfigs:GemmW4A16Perf.Prefill"
SHAPES = ("gate_up", "qkv", "o_proj", "down")
MMA_MAX_ROWS = 64  # kW4A16MmaMaxRows: the mma.sync rules must reach it
KNOWN_SMS = {"H200": 132, "H100": 132}

# "[perf] <op, padded> <shape, padded> <time> us ..." (report_perf in tests/ops/ops_test_util.h):
# the op may hold spaces, the shape starts with "M <m> N <n> K <k>".
PERF_LINE = re.compile(r"^\[perf\]\s+(?P<op>.+?)\s+M (?P<m>\d+) N (?P<n>\d+) K (?P<k>\d+)(?: \S+)?\s+(?P<us>[\d.]+) us\b")
SHAPE = re.compile(r"M (\d+) N (\d+) K (\d+)")
MMA_OP = re.compile(r"^w4a16 cfg(?P<config>\d+) (?P<shape>\w+)$")
WGMMA_OP = re.compile(r"^w4a16-t(?P<tokens>\d+)(?P<permuted>p?) cfg(?P<config>\d+) (?P<shape>\w+)$")
DEQ_OP = re.compile(r"^w4a16-deq (?P<shape>\w+)$")


def parse_perf(lines):
    """Records {op, m, n, k, time_us} from benchmark output: [perf] lines and JSON lines."""
    records = []
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            shape = SHAPE.search(r.get("shape", ""))
            if shape and "op" in r and "time_us" in r:
                records.append({"op": r["op"], "m": int(shape.group(1)), "n": int(shape.group(2)),
                                "k": int(shape.group(3)), "time_us": float(r["time_us"])})
            continue
        match = PERF_LINE.match(line)
        if match:
            records.append({"op": match.group("op"), "m": int(match.group("m")), "n": int(match.group("n")),
                            "k": int(match.group("k")), "time_us": float(match.group("us"))})
    return records


def totals(records, pattern, keep=lambda match: True):
    """{m: {config: time summed over SHAPES}} for the rows whose op matches pattern (key
    "config", or None without one), only where every shape was timed."""
    times = {}
    for r in records:
        match = pattern.match(r["op"])
        if not match or not keep(match):
            continue
        config = int(match.group("config")) if "config" in match.groupdict() else None
        times.setdefault(r["m"], {}).setdefault(config, {})[match.group("shape")] = r["time_us"]
    return {m: {c: sum(by_shape.values()) for c, by_shape in by_config.items() if set(SHAPES) <= set(by_shape)}
            for m, by_config in times.items()}


def rules_from_best(best):
    """[(max_m, config)] from {m: config}: the configuration of each swept M serves the M above
    the previous swept one; neighbours with the same configuration merge."""
    rules = []
    for m in sorted(best):
        if rules and rules[-1][1] == best[m]:
            rules[-1] = (m, best[m])
        else:
            rules.append((m, best[m]))
    return rules


def mma_rules(records):
    by_m = totals(records, MMA_OP)
    best = {m: min(t, key=t.get) for m, t in by_m.items() if t}
    if not best or max(best) != MMA_MAX_ROWS:
        raise ValueError(f"GemmW4A16Perf.MmaConfigs: no sweep up to M {MMA_MAX_ROWS} in the output")
    return rules_from_best(best)


def wgmma_rules(records):
    """(min_rows, max_rows, rules) of the wgmma kernel."""
    by_m = totals(records, WGMMA_OP, keep=lambda match: match.group("permuted") == "")
    deq = {m: t[None] for m, t in totals(records, DEQ_OP).items() if None in t}
    swept = sorted(m for m in by_m if by_m[m] and m in deq)
    if not swept:
        raise ValueError("GemmW4A16Perf.Prefill: no wgmma and w4a16-deq rows for all four shapes in the output")
    wins = [m for m in swept if min(by_m[m].values()) < deq[m]]
    if not wins:
        raise ValueError("GemmW4A16Perf.Prefill: the wgmma kernel beats the kernels without it at no M")
    min_rows, max_rows = wins[0], wins[0]
    for m in swept[swept.index(min_rows):]:
        if m not in wins:
            break
        max_rows = m
    best = {m: min(by_m[m], key=by_m[m].get) for m in swept if min_rows <= m <= max_rows}
    return min_rows, max_rows, rules_from_best(best)


# --- The table file -----------------------------------------------------------------------------

FIELD = re.compile(r"^\s*\.(?P<name>\w+) = (?P<value>.+),$")
RULES = re.compile(r"\{(\d+), (\d+)\}")
MEASURED = ("gpu", "num_sms", "num_mma_rules", "mma_rules", "wgmma_min_rows", "wgmma_max_rows", "num_wgmma_rules",
            "wgmma_rules")
CARRIED = ("mma_multi_pass_max_rows", "mma_min_warps_per_sm", "mma_warps_per_sm", "mma_max_splits",
           "wgmma_wave_choice_min_rows", "wgmma_chunk_us_256", "wgmma_chunk_us_128", "wgmma_split_us",
           "wgmma_partial_bytes_per_us", "wgmma_min_chunks_per_split")


def parse_table(text):
    """The fields of a table file as written by render_table: rules as [(max_m, config)], the
    GPU's name as a str, the other values as their C++ text."""
    fields = {}
    for line in text.splitlines():
        match = FIELD.match(line)
        if not match:
            continue
        name, value = match.group("name"), match.group("value")
        if name.endswith("_rules") and not name.startswith("num_"):
            fields[name] = [(int(a), int(b)) for a, b in RULES.findall(value)]
        elif name == "gpu":
            fields[name] = json.loads(value)
        else:
            fields[name] = value
    missing = [f for f in MEASURED + CARRIED if f not in fields]
    if missing:
        raise ValueError(f"tuning table: no {', '.join(missing)}")
    return fields


def gpu_slug(gpu):
    match = re.search(r"\b([A-Z]\d{2,4})\b", gpu)
    if not match:
        raise ValueError(f"cannot name a table for GPU '{gpu}'")
    return match.group(1).lower()


def render_table(fields):
    slug = gpu_slug(fields["gpu"])
    var = f"kW4A16Tuning{slug.upper()}"

    def rules(r):
        return "{" + ", ".join(f"{{{m}, {c}}}" for m, c in r) + "}"

    lines = [
        "// Generated by bench/retune_w4a16.py: do not edit by hand (rerun the tool; docs/perf/w4a16.md).",
        f"// Measured: GemmW4A16Perf.MmaConfigs and GemmW4A16Perf.Prefill on an {fields['gpu']} ({fields['num_sms']} SMs).",
        '#include "backend/cuda/tuning/w4a16_tuning.h"',
        "",
        "namespace brisk::cuda {",
        "",
        f"constexpr W4A16Tuning {var} = {{",
        f"    .gpu = {json.dumps(fields['gpu'])},",
        f"    .num_sms = {fields['num_sms']},",
        f"    .num_mma_rules = {len(fields['mma_rules'])},",
        f"    .mma_rules = {rules(fields['mma_rules'])},",
        f"    .wgmma_min_rows = {fields['wgmma_min_rows']},",
        f"    .wgmma_max_rows = {fields['wgmma_max_rows']},",
        f"    .num_wgmma_rules = {len(fields['wgmma_rules'])},",
        f"    .wgmma_rules = {rules(fields['wgmma_rules'])},",
        "    // Carried over from the previous table.",
    ] + [f"    .{name} = {fields[name]}," for name in CARRIED] + [
        "};",
        f'static_assert(w4a16_tuning_valid({var}), "{slug}_w4a16.cc: rules out of order or naming a wrong configuration");',
        "",
        "}  // namespace brisk::cuda",
        "",
    ]
    return "\n".join(lines)


def retune(fields, records, gpu=None, num_sms=None):
    """The table's fields with the measured entries replaced from benchmark records."""
    new = dict(fields)
    new["mma_rules"] = mma_rules(records)
    new["wgmma_min_rows"], new["wgmma_max_rows"], new["wgmma_rules"] = wgmma_rules(records)
    if gpu:
        new["gpu"] = gpu
    if num_sms:
        new["num_sms"] = num_sms
    return new


def run_benchmarks(binary, log_path):
    env = dict(os.environ, BRISK_OPS_PERF="1")
    binary = Path(binary).resolve()
    env["LD_LIBRARY_PATH"] = f"{binary.parent}:/usr/local/cuda/lib64:{env.get('LD_LIBRARY_PATH', '')}"
    out = subprocess.run([str(binary), f"--gtest_filter={BENCHMARKS}"], env=env, capture_output=True, text=True)
    if log_path:
        Path(log_path).write_text(out.stdout + out.stderr)
    if out.returncode != 0:
        sys.exit(f"retune_w4a16: {binary} failed ({out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return out.stdout.splitlines()


def gpu_name():
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--binary", help="the ops_parity test binary to run the benchmarks with")
    source.add_argument("--from-log", help="saved output of the two benchmarks ([perf] or JSON lines)")
    source.add_argument("--rewrite", action="store_true", help="re-render the table without measuring")
    ap.add_argument("--gpu", help="the device name (cudaDeviceProp::name); default: nvidia-smi's, else the table's")
    ap.add_argument("--sms", type=int, help="its SM count; default: known parts, else the table's")
    ap.add_argument("--table", help="the table to start from (default: the GPU's, else the H200's)")
    ap.add_argument("--log", help="where --binary's output goes")
    args = ap.parse_args()

    gpu = args.gpu or (gpu_name() if args.binary else None)
    slug = gpu_slug(gpu) if gpu else "h200"
    base = Path(args.table) if args.table else TUNING_DIR / f"{slug}_w4a16.cc"
    if not base.exists():
        base = TUNING_DIR / "h200_w4a16.cc"
    fields = parse_table(base.read_text())
    if not args.rewrite:
        lines = run_benchmarks(args.binary, args.log) if args.binary else Path(args.from_log).read_text().splitlines()
        sms = args.sms or KNOWN_SMS.get(slug.upper()) or (int(fields["num_sms"]) if gpu is None else None)
        if sms is None:
            sys.exit(f"retune_w4a16: give --sms for {gpu}")
        fields = retune(fields, parse_perf(lines), gpu, sms)
    out = TUNING_DIR / f"{gpu_slug(fields['gpu'])}_w4a16.cc"
    new_file = not out.exists()
    out.write_text(render_table(fields))
    print(f"wrote {out.relative_to(ROOT)}: mma_rules {fields['mma_rules']}, wgmma M {fields['wgmma_min_rows']}-"
          f"{fields['wgmma_max_rows']} rules {fields['wgmma_rules']}")
    if new_file:
        var = f"kW4A16Tuning{gpu_slug(fields['gpu']).upper()}"
        print(f"new GPU: declare `extern const W4A16Tuning {var};` in w4a16_tuning.h and list it in w4a16_tuning.cc")


if __name__ == "__main__":
    main()
