"""brisk.Linear on host tensors (numpy, DLPack producers): CPU reference against a numpy
dequantize-and-matmul oracle, AutoAWQ packing round trips, and the errors for bad input."""

import numpy as np
import pytest

import brisk
from awq_oracle import dequantize, pack_awq, random_layer


def make_linear(in_features=256, out_features=64, group_size=128, bias=False, seed=0,
                scale_dtype=np.float16):
    rng = np.random.default_rng(seed)
    layer = brisk.Linear(in_features, out_features, bias=bias, quant_method="awq", w_bit=4,
                         group_size=group_size)
    group_size = layer.group_size  # -1: one group per row
    q, zeros, scales = random_layer(rng, in_features, out_features, group_size, scale_dtype)
    layer.qweight, layer.qzeros, layer.scales = pack_awq(q), pack_awq(zeros), scales
    bias_values = None
    if bias:
        bias_values = rng.standard_normal(out_features).astype(np.float32)
        layer.bias = bias_values
    layer.post_init()
    w = dequantize(q, zeros, scales, group_size)
    return layer, w, bias_values, rng


@pytest.mark.parametrize("in_features,out_features,group_size", [(256, 64, 128), (128, 48, 32), (512, 40, 64)])
@pytest.mark.parametrize("rows", [1, 5, 33])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_numpy_oracle_f32(in_features, out_features, group_size, rows, bias):
    layer, w, bias_values, rng = make_linear(in_features, out_features, group_size, bias)
    x = rng.standard_normal((rows, in_features)).astype(np.float32)
    y = layer(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (rows, out_features)
    ref = x.astype(np.float64) @ w + (0 if bias_values is None else bias_values)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_f16_activations_give_f16():
    layer, w, _, rng = make_linear(bias=True)
    x = rng.standard_normal((4, 256)).astype(np.float16)
    y = layer(x)
    assert y.dtype == np.float16 and y.shape == (4, 64)
    ref = x.astype(np.float64) @ w + layer.bias.astype(np.float64)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=2e-3 * np.abs(ref).max())


def test_leading_dimensions_and_strided_rows():
    layer, w, _, rng = make_linear()
    x = rng.standard_normal((2, 3, 256)).astype(np.float32)
    y = layer(x)
    assert y.shape == (2, 3, 64)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4 * np.abs(x @ w).max())
    wide = rng.standard_normal((5, 300)).astype(np.float32)
    rows = wide[:, 10:266]  # row stride 300: used in place
    np.testing.assert_allclose(layer(rows), rows @ w, rtol=1e-4, atol=1e-4 * np.abs(rows @ w).max())
    vector = rng.standard_normal(256).astype(np.float32)
    assert layer(vector).shape == (64,)


def test_out_argument_is_written_in_place():
    layer, w, _, rng = make_linear()
    x = rng.standard_normal((3, 256)).astype(np.float32)
    out = np.full((3, 64), np.nan, dtype=np.float32)
    assert layer(x, out=out) is out
    np.testing.assert_allclose(out, x @ w, rtol=1e-4, atol=1e-4 * np.abs(x @ w).max())


def test_read_only_input():
    layer, w, _, rng = make_linear()
    x = rng.standard_normal((2, 256)).astype(np.float32)
    x.setflags(write=False)
    np.testing.assert_allclose(layer(x), x @ w, rtol=1e-4, atol=1e-4 * np.abs(x @ w).max())


def test_one_group_per_row_and_f32_scales():
    layer, w, _, rng = make_linear(in_features=128, group_size=-1, scale_dtype=np.float32)
    assert layer.group_size == 128
    x = rng.standard_normal((2, 128)).astype(np.float32)
    np.testing.assert_allclose(layer(x), x @ w, rtol=1e-4, atol=1e-4 * np.abs(x @ w).max())


def test_awq_round_trip_and_dequantize():
    layer, w, _, _ = make_linear(out_features=48, group_size=32)
    qweight, qzeros, scales = layer._packed.to_awq()
    np.testing.assert_array_equal(qweight, layer.qweight)
    np.testing.assert_array_equal(qzeros, layer.qzeros)
    np.testing.assert_array_equal(scales, layer.scales)
    np.testing.assert_array_equal(layer.dequantize(), w.T.astype(np.float32))


class DLPackOnly:
    """A DLPack producer that is not a numpy array (array API: namespace, shape, dtype, device)."""

    def __init__(self, array):
        self._array = array
        self.shape, self.dtype, self.device = array.shape, array.dtype, array.device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __array_namespace__(self):
        return np


def test_any_dlpack_producer():
    layer, w, _, rng = make_linear()
    x = rng.standard_normal((3, 256)).astype(np.float32)
    y = layer(DLPackOnly(x))
    assert isinstance(y, np.ndarray)  # from x's array namespace
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4 * np.abs(x @ w).max())


@pytest.mark.parametrize("kwargs,message", [
    (dict(quant_method="gptq"), "quant_method"),
    (dict(w_bit=8), "w_bit"),
    (dict(group_size=100), "group_size"),
    (dict(group_size=0), "group_size"),
    (dict(in_features=260, group_size=-1), "in_features"),
    (dict(out_features=60), "out_features"),
])
def test_bad_layer_parameters(kwargs, message):
    args = dict(in_features=256, out_features=64, bias=False, quant_method="awq", w_bit=4, group_size=128)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        brisk.Linear(**args)
    with pytest.raises(TypeError, match="in_features"):
        brisk.Linear(256.0, 64)


def test_not_post_initialized():
    layer = brisk.Linear(256, 64)
    with pytest.raises(RuntimeError, match="post_init"):
        layer(np.zeros((1, 256), np.float32))
    layer, _, _, _ = make_linear()
    layer.scales = layer.scales * 2  # stale until post_init() again
    with pytest.raises(RuntimeError, match="post_init"):
        layer(np.zeros((1, 256), np.float32))
    layer.post_init()
    assert layer(np.zeros((1, 256), np.float32)).shape == (1, 64)


@pytest.mark.parametrize("name,value,error,message", [
    ("qweight", np.zeros((256, 4), np.int32), ValueError, "qweight"),
    ("qweight", np.zeros((256, 8), np.int64), TypeError, "qweight"),
    ("qzeros", np.zeros((4, 8), np.int32), ValueError, "qzeros"),
    ("scales", np.zeros((2, 64), np.int32), TypeError, "scales"),
    ("scales", np.zeros((2, 32), np.float16), ValueError, "scales"),
    ("qweight", np.zeros((8, 256), np.int32).T, ValueError, "contiguous"),
])
def test_bad_weights(name, value, error, message):
    layer = brisk.Linear(256, 64)
    setattr(layer, name, value)
    with pytest.raises(error, match=message):
        layer.post_init()


def test_bad_bias():
    with pytest.raises(ValueError, match="bias=False"):
        brisk.Linear(256, 64).bias = np.zeros(64, np.float32)
    layer = brisk.Linear(256, 64, bias=True)
    layer.bias = np.zeros(32, np.float32)
    with pytest.raises(ValueError, match="bias"):
        layer.post_init()


@pytest.mark.parametrize("x,out,error,message", [
    (np.zeros((2, 128), np.float32), None, ValueError, "in_features"),
    (np.zeros((2, 256), np.int32), None, TypeError, "x is i32"),
    (np.zeros((2, 256), np.float64), None, TypeError, "x"),
    (np.zeros((2, 512), np.float32)[:, ::2], None, ValueError, "contiguous"),
    (np.zeros((2, 256), np.float32), np.zeros((2, 32), np.float32), ValueError, "out"),
    (np.zeros((2, 256), np.float32), np.zeros((2, 64), np.float16), TypeError, "out"),
    (np.array(1.0, np.float32), None, ValueError, "scalar"),
    ([[0.0] * 256], None, TypeError, "list"),
])
def test_bad_inputs(x, out, error, message):
    layer, _, _, _ = make_linear()
    with pytest.raises(error, match=message):
        layer(x, out=out)
