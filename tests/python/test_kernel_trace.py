"""bench/kernel_trace.py offline: a trace in tools/kernel_trace's CSV form summarized per graph
(marginal time, lead, busy fraction) and over all kernels."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = "start,end,correlation,graph,stream,grid_x,grid_y,grid_z,block_x,registers,dynamic_shared,name\n"


def kernel(start_us, end_us, correlation, graph, name, grid=(1, 1, 1)):
    return (f"{start_us * 1000},{end_us * 1000},{correlation},{graph},7,{grid[0]},{grid[1]},{grid[2]},128,64,0,"
            f"\"void brisk::cuda::(anonymous namespace)::{name}<1, false>(brisk::cuda::Args)\"\n")


def summarize(tmp_path, rows, *args):
    trace = tmp_path / "trace.csv"
    trace.write_text(HEADER + "".join(rows))
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "kernel_trace.py"), str(trace), *args],
                         capture_output=True, text=True, check=False)
    return out.returncode, out.stdout


def test_marginal_time_lead_and_busy_fraction_per_graph(tmp_path):
    rows = [kernel(0, 3, 1, 0, "eager_kernel")]
    for r in range(5):  # one graph (id 7) launched five times, 100 us apart
        t = 100 * (r + 1)
        rows += [kernel(t, t + 10, 10 + r, 7, "gemv_kernel", (256, 1, 1)),
                 kernel(t + 8, t + 15, 10 + r, 7, "decode_attention_kernel"),  # resident 2 us early
                 kernel(t + 17, t + 20, 10 + r, 7, "gemv_kernel", (384, 1, 1))]  # 2 us after
    code, out = summarize(tmp_path, rows)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "graph 7: 5 replays, 3 kernels a replay, span 20.0 us a replay, GPU busy 90.0%"
    table = {line[:58].strip(): line[58:].split() for line in lines[2:5]}
    assert table["gemv_kernel [256,1,1] < start"] == ["1.0", "10.00", "0.00", "10.0", "50.0%"]
    assert table["decode_attention_kernel [1,1,1] < gemv_kernel"] == ["1.0", "7.00", "-2.00", "5.0", "25.0%"]
    assert table["gemv_kernel [384,1,1] < decode_attention_kernel"] == ["1.0", "3.00", "2.00", "5.0", "25.0%"]
    assert "kernels outside graphs: 1, 0.0 ms of kernel time over 0.0 ms (GPU busy 100.0%)" in lines
    total = next(line for line in lines if line.startswith("all kernels"))
    assert total.startswith("all kernels: 16, 0.1 ms of kernel time")


def test_graphs_together_by_kernel_name(tmp_path):
    rows = []
    for r in range(10):  # two graphs (batch buckets): the same kernels with other grids
        t, graph, grid = 100 * r, 7 + r % 2, (256 + r % 2, 1, 1)
        rows += [kernel(t, t + 10, 10 + r, graph, "gemv_kernel", grid),
                 kernel(t + 10, t + 20, 10 + r, graph, "sample_kernel")]
    code, out = summarize(tmp_path, rows, "--graphs", "0")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("every graph above 4 replays (2 graphs), by kernel name: 10 replays, 2 kernels a replay, "
                        "span 20.0 us a replay, GPU busy 100.0%")
    table = {line[:58].strip(): line[58:].split() for line in lines[2:4]}
    assert table["gemv_kernel"] == ["1.0", "10.00", "0.00", "10.0", "50.0%"]


def test_graphs_with_few_replays_are_left_out_of_the_per_graph_tables(tmp_path):
    rows = [kernel(0, 5, 1, 3, "gemv_kernel"), kernel(10, 15, 2, 3, "gemv_kernel")]
    code, out = summarize(tmp_path, rows, "--min-replays", "3")
    assert code == 0
    assert not out.startswith("graph")
    assert "all kernels: 2" in out


def test_eager_steps_end_at_the_sampler(tmp_path):
    rows = []
    for r in range(3):  # three mixed steps: two kernels, then the sampler; and a decode step's lone sampler
        t = 100 * r
        rows += [kernel(t, t + 10, 3 * r, 0, "gemm_kernel"), kernel(t + 12, t + 20, 3 * r + 1, 0, "prefill_attention"),
                 kernel(t + 20, t + 25, 3 * r + 2, 0, "sample_kernel")]
    rows.append(kernel(400, 405, 99, 0, "sample_kernel"))
    code, out = summarize(tmp_path, rows, "--min-step-kernels", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("eager steps of 3 kernels or more (mixed and prefill steps, ending at sample_kernel), "
                               "by kernel name: 3 steps, 3 kernels a step, span 25.0 us a step")
    table = {line[:58].strip(): line[58:].split() for line in lines[2:5]}
    assert table["gemm_kernel"] == ["1.0", "10.00", "0.00", "10.0", "40.0%"]
    assert table["prefill_attention"] == ["1.0", "8.00", "2.00", "10.0", "40.0%"]
    assert table["sample_kernel"] == ["1.0", "5.00", "0.00", "5.0", "20.0%"]


def test_reports_an_empty_trace(tmp_path):
    code, out = summarize(tmp_path, [])
    assert code == 1
    assert "no kernels" in out
