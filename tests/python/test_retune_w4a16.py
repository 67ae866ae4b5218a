"""bench/retune_w4a16.py offline: its parser on GemmW4A16Perf output in report_perf's format
(tests/data/perf/w4a16_perf_sample.log: the H200 times of docs/perf/w4a16.md), the rules it derives
from it, and the checked-in tables being exactly what it writes."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "perf" / "w4a16_perf_sample.log"


def load_tool():
    spec = importlib.util.spec_from_file_location("retune_w4a16", ROOT / "bench" / "retune_w4a16.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = load_tool()


def sample_records():
    return tool.parse_perf(SAMPLE.read_text().splitlines())


def test_parses_perf_lines_with_spaces_in_the_op():
    records = tool.parse_perf([
        "[ RUN      ] GemmW4A16Perf.Prefill",
        "[perf] w4a16-t64 cfg4 gate_up M 17 N 28672 K 4096 g128                            54.9 us   "
        "1139.1 GB/s     72.7 TFLOP/s  23.7% of H200 limit",
        "[perf] w4a16 cfg0 qkv    M 1 N 6144 K 4096 g128                                11.1 us   "
        "1195.1 GB/s      4.5 TFLOP/s  24.9% of H200 limit",
    ])
    assert records == [
        {"op": "w4a16-t64 cfg4 gate_up", "m": 17, "n": 28672, "k": 4096, "time_us": 54.9},
        {"op": "w4a16 cfg0 qkv", "m": 1, "n": 6144, "k": 4096, "time_us": 11.1},
    ]


def test_parses_json_lines():
    line = json.dumps({"op": "w4a16-deq down", "shape": "M 8192 N 4096 K 14336 g128", "time_us": 1240.0,
                       "gb_per_s": 1.0, "tflop_per_s": 1.0, "ratio_to_limit": 0.1})
    assert tool.parse_perf([line, "not json {"]) == [
        {"op": "w4a16-deq down", "m": 8192, "n": 4096, "k": 14336, "time_us": 1240.0}]


def test_sample_has_every_row():
    records = sample_records()
    assert len(records) == 4 * 11 + 4 * 8 * 8  # MmaConfigs, then Prefill's 6 configurations + deq + dense


def test_mma_rules_from_the_sample():
    assert tool.mma_rules(sample_records()) == [(8, 0), (16, 2), (32, 3), (64, 4)]


def test_wgmma_rules_from_the_sample():
    # Direct x only: the sample's permuted 256-token configuration is fastest at M 512.
    assert tool.wgmma_rules(sample_records()) == (17, 4096, [(64, 4), (128, 2), (4096, 3)])


def test_wgmma_range_stops_where_the_kernels_without_it_win():
    records = [r for r in sample_records() if r["m"] != 8192]
    fast_deq = [dict(r, time_us=r["time_us"] / 10) if r["op"].startswith("w4a16-deq") and r["m"] == 512 else r
                for r in records]
    assert tool.wgmma_rules(fast_deq)[:2] == (17, 256)


def test_a_shape_missing_from_the_output_is_an_error():
    records = [r for r in sample_records() if not (r["op"].startswith("w4a16 cfg") and r["m"] == 64)]
    with pytest.raises(ValueError, match="M 64"):
        tool.mma_rules(records)


def test_checked_in_tables_are_the_tools_output():
    for table in (ROOT / "src" / "backend" / "cuda" / "tuning").glob("*_w4a16.cc"):
        text = table.read_text()
        assert tool.render_table(tool.parse_table(text)) == text, table.name


def test_retune_replaces_the_measured_entries_and_keeps_the_rest():
    fields = tool.parse_table((ROOT / "src" / "backend" / "cuda" / "tuning" / "h200_w4a16.cc").read_text())
    records = [dict(r, time_us=r["time_us"] * (0.5 if r["op"].startswith("w4a16 cfg1 ") else 1.0))
               for r in sample_records()]
    new = tool.retune(fields, records, gpu="NVIDIA H100 80GB HBM3", num_sms=132)
    assert new["mma_rules"] == [(8, 1), (16, 2), (32, 3), (64, 4)]
    assert all(new[name] == fields[name] for name in tool.CARRIED)
    text = tool.render_table(new)
    assert "constexpr W4A16Tuning kW4A16TuningH100 = {" in text
    assert "    .mma_rules = {{8, 1}, {16, 2}, {32, 3}, {64, 4}}," in text
    assert tool.parse_table(text)["wgmma_rules"] == [(64, 4), (128, 2), (4096, 3)]
