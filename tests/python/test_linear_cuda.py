"""brisk.Linear on PyTorch CUDA tensors (the GPU machine: scripts/gpu-check): the product against
x @ dequant(W) computed by PyTorch on the GPU, output allocated by torch and written in place,
and the work queued on PyTorch's current stream. Skipped without torch, a GPU or a CUDA build."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import brisk  # noqa: E402
from awq_oracle import AWQ_ORDER, pack_awq, random_layer  # noqa: E402

pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and brisk.has_cuda),
                                reason="needs a CUDA GPU and brisk built with CUDA")
DEVICE = "cuda"


def unpack_awq_torch(words):
    """AutoAWQ int32 [rows, N / 8] -> int32 [rows, N] in torch (on the words' device)."""
    shifts = torch.tensor([4 * AWQ_ORDER.index(c) for c in range(8)], dtype=torch.int32, device=words.device)
    values = (words.unsqueeze(-1) >> shifts) & 0xF  # [rows, N / 8, 8]: column 8j + c
    return values.reshape(words.shape[0], -1)


def dequant_torch(qweight, qzeros, scales, group_size):
    """W [K, N] float32 on the GPU from AutoAWQ tensors."""
    q = unpack_awq_torch(qweight).float()
    zeros = unpack_awq_torch(qzeros).float().repeat_interleave(group_size, dim=0)
    return (q - zeros) * scales.float().repeat_interleave(group_size, dim=0)


def make_layer(in_features, out_features, group_size, bias=False, seed=0):
    rng = np.random.default_rng(seed)
    q, zeros, scales = random_layer(rng, in_features, out_features, group_size)
    layer = brisk.Linear(in_features, out_features, bias=bias, group_size=group_size)
    layer.qweight = torch.from_numpy(pack_awq(q)).to(DEVICE)
    layer.qzeros = torch.from_numpy(pack_awq(zeros)).to(DEVICE)
    layer.scales = torch.from_numpy(scales).to(DEVICE)
    if bias:
        layer.bias = torch.randn(out_features, device=DEVICE, dtype=torch.float16)
    layer.post_init()
    assert layer.device.startswith("cuda")
    w = dequant_torch(layer.qweight, layer.qzeros, layer.scales, group_size)
    return layer, w


def check_close(y, x, w, bias, dtype):
    ref = x.float() @ w + (0 if bias is None else bias.float())
    tol = {torch.float32: 2e-3, torch.float16: 1e-2, torch.bfloat16: 3e-2}[dtype]
    err = (y.float() - ref).abs().max().item()
    assert err <= tol * ref.abs().max().item(), f"max error {err} vs max |ref| {ref.abs().max().item()}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("rows", [1, 7, 64])  # 64: above the decode kernel's rows (dequantize + GEMM)
@pytest.mark.parametrize("bias", [False, True])
def test_matches_torch_dequant_matmul(dtype, rows, bias):
    layer, w = make_layer(512, 256, 128, bias=bias)
    x = torch.randn(rows, 512, device=DEVICE, dtype=dtype)
    y = layer(x)
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.dtype == dtype
    assert y.shape == (rows, 256)
    torch.cuda.synchronize()
    check_close(y, x, w, layer.bias, dtype)


def test_llama_shape_group_64():
    layer, w = make_layer(4096, 1024, 64)
    x = torch.randn(2, 3, 4096, device=DEVICE, dtype=torch.float16)
    y = layer(x)
    assert y.shape == (2, 3, 1024)
    check_close(y.reshape(6, 1024), x.reshape(6, 4096), w, None, torch.float16)


def test_zero_copy_in_and_out():
    layer, w = make_layer(256, 128, 128)
    wide = torch.randn(5, 384, device=DEVICE, dtype=torch.bfloat16)
    x = wide[:, 64:320]  # rows of stride 384: read in place
    out = torch.empty(5, 128, device=DEVICE, dtype=torch.bfloat16)
    pointer = out.data_ptr()
    assert layer(x, out=out) is out and out.data_ptr() == pointer
    check_close(out, x, w, None, torch.bfloat16)
    before = torch.cuda.memory_allocated()
    y = layer(x)  # allocated by torch's caching allocator: counted by it
    assert torch.cuda.memory_allocated() - before >= y.numel() * y.element_size()


def test_runs_on_the_current_stream():
    layer, w = make_layer(512, 256, 128)
    x_values = torch.randn(4, 512, device=DEVICE, dtype=torch.bfloat16)
    x = torch.zeros_like(x_values)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time queued on `side`
        x.copy_(x_values)  # x gets its values only after the sleep, on `side`
        y = layer(x)
        # Queued, not waited for: the host did not block on the GPU.
        assert not side.query()
    side.synchronize()
    check_close(y, x_values, w, None, torch.bfloat16)  # brisk read x after the copy: same stream


def test_weights_and_input_on_different_devices():
    layer = brisk.Linear(256, 64)  # numpy zeros: repacked on the host
    layer.post_init()
    with pytest.raises(ValueError, match="cuda"):
        layer(torch.zeros(1, 256, device=DEVICE))


def test_group_size_the_cuda_kernels_lack():
    layer, _ = make_layer(256, 128, 16)  # the CUDA backend needs multiples of 32
    with pytest.raises(ValueError, match="group_size"):
        layer(torch.randn(1, 256, device=DEVICE, dtype=torch.float16))


def test_other_dlpack_producer_on_the_legacy_default_stream():
    cupy = pytest.importorskip("cupy")
    if not hasattr(cupy.ndarray, "__array_namespace__"):
        pytest.skip("this CuPy has no array-API namespace to allocate the result from")
    layer, w = make_layer(256, 128, 128)
    x = cupy.random.standard_normal((3, 256), dtype=cupy.float32)
    y = layer(x)
    assert isinstance(y, cupy.ndarray) and y.shape == (3, 128)
    cupy.cuda.Stream.null.synchronize()
    check_close(torch.from_dlpack(y), torch.from_dlpack(x), w, None, torch.float32)
