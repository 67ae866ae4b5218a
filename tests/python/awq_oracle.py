"""A test oracle for AutoAWQ's "gemm" packing, written from its description (model/int4_weight.h):
int32 words of 8 nibbles along out_features, nibble i holding column 8j + AWQ_ORDER[i]."""

import numpy as np

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def pack_awq(values):
    """int values in [0, 15] of shape [rows, N] -> int32 [rows, N / 8]."""
    words = np.zeros((values.shape[0], values.shape[1] // 8), dtype=np.uint32)
    for nibble, column in enumerate(AWQ_ORDER):
        words |= values[:, column::8].astype(np.uint32) << np.uint32(4 * nibble)
    return words.view(np.int32)


def random_layer(rng, in_features, out_features, group_size, scale_dtype=np.float16):
    """Random codes, zero points and scales; returns (q [K, N], zeros [K/g, N], scales [K/g, N])."""
    num_groups = in_features // group_size
    q = rng.integers(0, 16, size=(in_features, out_features))
    zeros = rng.integers(0, 16, size=(num_groups, out_features))
    scales = (rng.random((num_groups, out_features)) * 0.02 + 0.001).astype(scale_dtype)
    return q, zeros, scales


def dequantize(q, zeros, scales, group_size):
    """W [K, N] in float64: (q - zero) * scale of each element's group."""
    zero_k = np.repeat(zeros, group_size, axis=0)
    scale_k = np.repeat(scales.astype(np.float64), group_size, axis=0)
    return (q - zero_k) * scale_k
