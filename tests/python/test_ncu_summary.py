"""bench/ncu_summary.py offline: a raw page in ncu's CSV form (header, units row, kernels in
launch order) grouped per decode step, start-up left out, cuBLAS kernels named by their
configuration."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RAW = """\
"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"
"","","nsecond","Mbyte","Kbyte"
"0","void brisk::cuda::fill_random_kernel(float*, long)","100,000","500","0"
"1","void brisk::cuda::sample_kernel<8>(brisk::cuda::SampleArgs)","5,000","0.1","0"
"2","void brisk::cuda::(anonymous namespace)::fp8_mma_kernel<1, false, 4>(brisk::cuda::GemmFp8Args)","8,000","16.8","10"
"3","void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8, int>(T1::Params)","2,000","2","0"
"4","void brisk::cuda::sample_kernel<8>(brisk::cuda::SampleArgs)","5,000","0.1","0"
"5","void brisk::cuda::(anonymous namespace)::fp8_mma_kernel<1, false, 4>(brisk::cuda::GemmFp8Args)","8,000","16.8","10"
"6","void brisk::cuda::sample_kernel<8>(brisk::cuda::SampleArgs)","5,000","0.1","0"
"""


def summarize(tmp_path, text):
    raw = tmp_path / "raw.csv"
    raw.write_text(text)
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "ncu_summary.py"), str(raw)],
                         capture_output=True, text=True, check=False)
    return out.returncode, out.stdout


def test_groups_kernels_per_step_after_the_first_sample(tmp_path):
    code, out = summarize(tmp_path, RAW)
    assert code == 0
    lines = out.splitlines()
    # 2 steps after the first sampler launch; the start-up kernel is not counted.
    assert lines[0].startswith("2 steps; kernel time 14.0 us a step")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert "fill_random_kernel" not in rows
    assert rows["fp8_mma_kernel"][:3] == ["1.0", "8.00", "8.0"]
    assert rows["sample_kernel"][:3] == ["1.0", "5.00", "5.0"]
    # 16.8 MB read + 10 KB written in 8 us.
    assert rows["fp8_mma_kernel"][4] == "2101"
    assert any(name.startswith("cutlass_80_wmma_tensorop_bf16") for name in rows)


def test_reports_a_file_without_a_raw_page(tmp_path):
    code, out = summarize(tmp_path, "==PROF== Disconnected\n")
    assert code == 1
    assert "no ncu raw page" in out
