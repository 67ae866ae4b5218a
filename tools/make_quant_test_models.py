#!/usr/bin/env python3
"""Writes brisk's quantized test models: int4 (AutoAWQ, GPTQ) and FP8 (e4m3) folders made from
bf16 test models.

numpy only (runs anywhere; no torch, no autoawq, no compressed-tensors). The packing code here is
written from the published format descriptions, independently of brisk's C++
(src/model/int4_weight.*, the FP8 loader), so that the two check each other.

int4, every linear layer quantized round-to-nearest (AWQ: asymmetric; GPTQ: symmetric, zero 8):
  AutoAWQ "gemm": qweight int32 [K, N/8], nibble i of a word holds column 8j + [0,2,4,6,1,3,5,7][i];
                  qzeros int32 [K/G, N/8] packed the same way; scales f16 [K/G, N].
  GPTQ (v1):      qweight int32 [K/8, N], nibble i holds row 8r + i; qzeros int32 [K/G, N/8]
                  sequential along N, storing zero - 1; scales f16 [K/G, N]; g_idx int32 [K].

FP8: weight F8_E4M3 [N, K] (OCP e4m3fn codes: bias 7, max 448, no inf; encoding rounds to nearest,
ties to even code, saturating at +-448). Scale s = float32(max|w|) / 448 (1 for a zero max) over a
row ("channel"), the tensor ("tensor") or a 128x128 block ("block", partial at the edges), rounded
to its storage dtype; q = e4m3(w / s), dequant = q * s. Activations x (float32) are quantized the
same way on the fly: per token (channel), per token and 128-column group (block), or with a
stored static input_scale (tensor; a fused layer uses the maximum of its parts' input scales).
  channel: compressed-tensors FP8_DYNAMIC: weight_scale bf16 [N, 1]; dynamic per-token activations.
  tensor:  compressed-tensors FP8 (static): weight_scale f32 [1], input_scale f32 [1] (calibrated
           on a random sample, different per module).
  block:   Qwen3/DeepSeek "fp8": weight_scale_inv f32 [ceil(N/128), ceil(K/128)] (holds the
           scale); dynamic per-token, per-128-column-group activations.

Besides the model files, each folder gets probes.safetensors: for every canonical (fused) linear
layer of brisk (qkv = q|k|v rows, gate_up = gate|up rows; InternLM2's wqkv regrouped per KV
head), probe inputs x [3, K] and y = x @ dequant(W)^T computed here in float64 (FP8: with x
replaced by its quantized-dequantized value, and "{key}.x_scale" holding the activation scales:
[3, 1] per token, [3, ceil(K/128)] per group, [1] static). brisk's loader + gemm must reproduce y
(tests/e2e/quant_models_test.cc).

Usage: python3 tools/make_quant_test_models.py tests/data/models
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]

# output folder -> (source folder, method, group size)
INT4_MODELS = {
    "llama-gqa4-hd64-tied-awq-g32": ("llama-gqa4-hd64-tied-llama3rope-bf16", "awq", 32),
    "internlm2-gqa2-hd32-gptq-g64": ("internlm2-gqa2-hd32-bf16", "gptq", 64),
}

# output folder -> (source folder, weight scale strategy)
FP8_MODELS = {
    "llama-gqa4-hd64-tied-fp8-channel": ("llama-gqa4-hd64-tied-llama3rope-bf16", "channel"),
    "qwen2-gqa2-hd64-bias-tied-fp8-tensor": ("qwen2-gqa2-hd64-bias-tied-bf16", "tensor"),
    "qwen3-gqa4-hd128-qknorm-fp8-block": ("qwen3-gqa4-hd128-qknorm-bf16", "block"),
}

DTYPES = {"BF16": (np.uint16, 2), "F16": (np.float16, 2), "F32": (np.float32, 4), "I32": (np.int32, 4),
          "F8_E4M3": (np.uint8, 1)}

E4M3_MAX = np.float32(448)
FP8_BLOCK = 128


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data[base + begin:base + end], dtype=DTYPES[info["dtype"]][0])
        tensors[name] = (info["dtype"], raw.reshape(info["shape"]))
    return tensors


def write_safetensors(path, tensors):
    """tensors: name -> (dtype string, numpy array of the matching storage type)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, array = tensors[name]
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_model(src):
    """config.json and all tensors of a folder, single-file or sharded."""
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
    else:
        shards = ["model.safetensors"]
    tensors = {}
    for shard in shards:
        tensors.update(read_safetensors(os.path.join(src, shard)))
    return config, tensors


def write_model(src, dst, config, tensors, probes):
    os.makedirs(dst, exist_ok=True)
    write_safetensors(os.path.join(dst, "model.safetensors"), tensors)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copy(os.path.join(src, "generation_config.json"), dst)
    write_safetensors(os.path.join(dst, "probes.safetensors"), probes)


def as_f32(dtype, array):
    if dtype == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def to_bf16(x):
    """float32 array -> bf16 bits (uint16), rounded to nearest even."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def quantize(w, group, symmetric):
    """w [N, K] f32 -> q [N, K] ints in [0, 15], zeros [N, K/G] ints, scales [N, K/G] f16."""
    n, k = w.shape
    groups = w.reshape(n, k // group, group)
    if symmetric:
        scales = (np.abs(groups).max(axis=2) / 7.0).clip(min=1e-5).astype(np.float16)
        zeros = np.full(scales.shape, 8, dtype=np.int64)
    else:
        lo, hi = groups.min(axis=2), groups.max(axis=2)
        scales = ((hi - lo).clip(min=1e-5) / 15.0).astype(np.float16)
        zeros = np.clip(-np.round(lo / scales.astype(np.float32)), 0, 15).astype(np.int64)
    s = scales.astype(np.float32)[:, :, None]
    q = np.clip(np.round(groups / s) + zeros[:, :, None], 0, 15).astype(np.int64)
    return q.reshape(n, k), zeros, scales


def dequantize(q, zeros, scales, group):
    z = np.repeat(zeros, group, axis=1)
    s = np.repeat(scales.astype(np.float64), group, axis=1)
    return (q - z) * s


def pack_words(nibbles):
    """nibbles [..., 8] ints -> int32 words, nibble i at bits 4i."""
    words = np.zeros(nibbles.shape[:-1], dtype=np.uint32)
    for i in range(8):
        words |= nibbles[..., i].astype(np.uint32) << np.uint32(4 * i)
    return words.view(np.int32)


def pack_awq(q, zeros, scales):
    n, k = q.shape
    cols = q.T.reshape(k, n // 8, 8)[:, :, AWQ_ORDER]  # [K, N/8, 8] in AWQ's nibble order
    zcols = zeros.T.reshape(-1, n // 8, 8)[:, :, AWQ_ORDER]
    return {"qweight": ("I32", pack_words(cols)), "qzeros": ("I32", pack_words(zcols)),
            "scales": ("F16", np.ascontiguousarray(scales.T))}


def pack_gptq(q, zeros, scales, group):
    n, k = q.shape
    rows = q.T.reshape(k // 8, 8, n).transpose(0, 2, 1)  # [K/8, N, 8]: nibble i = row 8r + i
    stored = (zeros - 1).T.reshape(-1, n // 8, 8)        # v1 stores zero - 1, sequential along N
    g_idx = (np.arange(k) // group).astype(np.int32)
    return {"qweight": ("I32", pack_words(rows)), "qzeros": ("I32", pack_words(stored)),
            "scales": ("F16", np.ascontiguousarray(scales.T)), "g_idx": ("I32", g_idx)}


def e4m3_table():
    """float64 values of the 256 e4m3fn codes; NaN for 0x7F and 0xFF."""
    codes = np.arange(256)
    exponent, mantissa = (codes >> 3) & 0xF, codes & 7
    magnitude = np.where(exponent == 0, mantissa * 2.0 ** -9, (8 + mantissa) * 2.0 ** (exponent - 10.0))
    values = np.where(codes & 0x80, -magnitude, magnitude)
    values[(codes & 0x7F) == 0x7F] = np.nan
    return values


E4M3_VALUES = e4m3_table()
E4M3_POSITIVE = E4M3_VALUES[:0x7F]  # codes 0x00..0x7E: 0 .. 448, ascending, index = code
assert np.all(np.diff(E4M3_POSITIVE) > 0) and E4M3_POSITIVE[-1] == 448


def encode_e4m3(v):
    """float32 array -> e4m3 codes (uint8): nearest value, ties to the even code, saturating."""
    a = np.minimum(np.abs(v.astype(np.float64)), 448.0)
    hi = np.searchsorted(E4M3_POSITIVE, a).clip(1, 0x7E)  # first code with value >= a
    lo = hi - 1
    below, above = a - E4M3_POSITIVE[lo], E4M3_POSITIVE[hi] - a
    code = np.where(below < above, lo, np.where(above < below, hi, np.where(lo % 2 == 0, lo, hi)))
    return (code | np.where(np.signbit(v), 0x80, 0)).astype(np.uint8)


def absmax_scale(maxabs):
    """float32 max|.| -> float32 scale max / 448, 1 where the max is 0."""
    maxabs = np.asarray(maxabs, dtype=np.float32)
    return np.where(maxabs == 0, np.float32(1), maxabs / E4M3_MAX).astype(np.float32)


def block_absmax(w, rows, cols):
    """Max |w| over each rows x cols block of w [N, K] (partial blocks at the edges)."""
    n, k = w.shape
    nb, kb = -(-n // rows), -(-k // cols)
    padded = np.zeros((nb * rows, kb * cols), dtype=np.float32)
    padded[:n, :k] = np.abs(w)
    return padded.reshape(nb, rows, kb, cols).max(axis=(1, 3))


def expand_blocks(s, rows, cols, shape):
    """Per-block values [nb, kb] -> per-element [N, K]."""
    return np.repeat(np.repeat(s, rows, axis=0), cols, axis=1)[:shape[0], :shape[1]]


def quantize_fp8(w, strategy):
    """w [N, K] f32 -> (checkpoint tensors {suffix: (dtype, array)}, dequantized weight f64 [N, K])."""
    if strategy == "channel":
        scale_bits = to_bf16(absmax_scale(np.abs(w).max(axis=1, keepdims=True)))
        scale = as_f32("BF16", scale_bits)  # [N, 1]
        stored = {"weight_scale": ("BF16", scale_bits)}
        full = scale
    elif strategy == "tensor":
        scale = absmax_scale(np.abs(w).max()).reshape(1)
        stored = {"weight_scale": ("F32", scale)}
        full = scale
    else:
        scale = absmax_scale(block_absmax(w, FP8_BLOCK, FP8_BLOCK))
        stored = {"weight_scale_inv": ("F32", scale)}
        full = expand_blocks(scale, FP8_BLOCK, FP8_BLOCK, w.shape)
    q = encode_e4m3(w / full)
    stored["weight"] = ("F8_E4M3", q)
    return stored, E4M3_VALUES[q] * full.astype(np.float64)


def quantize_activations(x, strategy, input_scale):
    """x [M, K] f32 -> (x_scale as brisk computes it, dequantized x f64 [M, K])."""
    if strategy == "channel":
        x_scale = absmax_scale(np.abs(x).max(axis=1, keepdims=True))  # [M, 1]
        full = x_scale
    elif strategy == "tensor":
        x_scale = input_scale  # [1]
        full = x_scale
    else:
        x_scale = absmax_scale(block_absmax(x, 1, FP8_BLOCK))  # [M, ceil(K/128)]
        full = expand_blocks(x_scale, 1, FP8_BLOCK, x.shape)
    return x_scale, E4M3_VALUES[encode_e4m3(x / full)] * full.astype(np.float64)


def calibrate_input_scales(modules, tensors, rng):
    """Static per-tensor input scales: max|x| / 448 of a random sample [16, K], scaled per module."""
    scales = {}
    for m in modules:
        k = tensors[m + ".weight"][1].shape[1]
        factor = np.float32(rng.uniform(0.5, 2))
        x = rng.uniform(-1, 1, size=(16, k)).astype(np.float32) * factor
        scales[m] = absmax_scale(np.abs(x).max()).reshape(1)
    return scales


def fp8_quantization_config(strategy):
    if strategy == "block":
        return {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                "weight_block_size": [FP8_BLOCK, FP8_BLOCK]}
    static = strategy == "tensor"
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
            "ignore": ["lm_head"],
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": strategy, "dynamic": False,
                            "symmetric": True},
                "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor" if static else "token",
                                      "dynamic": not static, "symmetric": True}}}}


def linear_names(config):
    """Checkpoint module names of the linear layers, and brisk's fused layers as row lists."""
    layers = config["num_hidden_layers"]
    if config["architectures"][0] == "InternLM2ForCausalLM":
        heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
        d = config["hidden_size"] // heads
        g = heads // kv
        blocks = ([((h // g) * (g + 2) + h % g) * d for h in range(heads)] +
                  [(j * (g + 2) + g) * d for j in range(kv)] + [(j * (g + 2) + g + 1) * d for j in range(kv)])
        qkv_rows = [r for b in blocks for r in range(b, b + d)]
        fused = {}
        for i in range(layers):
            p = f"model.layers.{i}."
            fused[f"{i}.qkv"] = [(p + "attention.wqkv", qkv_rows)]
            fused[f"{i}.o_proj"] = [(p + "attention.wo", None)]
            fused[f"{i}.gate_up"] = [(p + "feed_forward.w1", None), (p + "feed_forward.w3", None)]
            fused[f"{i}.down"] = [(p + "feed_forward.w2", None)]
        return fused
    fused = {}
    for i in range(layers):
        p = f"model.layers.{i}."
        fused[f"{i}.qkv"] = [(p + "self_attn.q_proj", None), (p + "self_attn.k_proj", None),
                             (p + "self_attn.v_proj", None)]
        fused[f"{i}.o_proj"] = [(p + "self_attn.o_proj", None)]
        fused[f"{i}.gate_up"] = [(p + "mlp.gate_proj", None), (p + "mlp.up_proj", None)]
        fused[f"{i}.down"] = [(p + "mlp.down_proj", None)]
    return fused


def fused_weight(parts, dequantized):
    return np.concatenate([dequantized[m] if rows is None else dequantized[m][rows] for m, rows in parts])


def dense_tensors(tensors, modules):
    """The tensors that are not linear-layer weights, unchanged."""
    weights = {m + ".weight" for m in modules}
    return {name: value for name, value in tensors.items() if name not in weights}


def make_int4(src, dst, method, group):
    config, tensors = read_model(src)
    fused = linear_names(config)
    modules = sorted({name for parts in fused.values() for name, _ in parts})
    out, dequantized = dense_tensors(tensors, modules), {}
    for m in modules:
        w = as_f32(*tensors[m + ".weight"])
        q, zeros, scales = quantize(w, group, symmetric=(method == "gptq"))
        dequantized[m] = dequantize(q, zeros, scales, group)
        packed = pack_awq(q, zeros, scales) if method == "awq" else pack_gptq(q, zeros, scales, group)
        for suffix, value in packed.items():
            out[f"{m}.{suffix}"] = value
    if method == "awq":
        config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": group,
                                         "zero_point": True, "version": "gemm", "modules_to_not_convert": None}
    else:
        config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": group,
                                         "desc_act": False, "sym": True, "checkpoint_format": "gptq"}

    rng = np.random.default_rng(0)
    probes = {}
    for key, parts in fused.items():
        w = fused_weight(parts, dequantized)
        x = rng.uniform(-1, 1, size=(3, w.shape[1])).astype(np.float32)
        probes[key + ".x"] = ("F32", x)
        probes[key + ".y"] = ("F32", (x.astype(np.float64) @ w.T).astype(np.float32))
    write_model(src, dst, config, out, probes)


def make_fp8(src, dst, strategy):
    config, tensors = read_model(src)
    fused = linear_names(config)
    modules = sorted({name for parts in fused.values() for name, _ in parts})
    out, dequantized = dense_tensors(tensors, modules), {}
    for m in modules:
        stored, dequantized[m] = quantize_fp8(as_f32(*tensors[m + ".weight"]), strategy)
        for suffix, value in stored.items():
            out[f"{m}.{suffix}"] = value
    input_scales = {}
    if strategy == "tensor":
        input_scales = calibrate_input_scales(modules, tensors, np.random.default_rng(1))
        for m, scale in input_scales.items():
            out[m + ".input_scale"] = ("F32", scale)
    config["quantization_config"] = fp8_quantization_config(strategy)

    rng = np.random.default_rng(0)
    probes = {}
    for key, parts in fused.items():
        w = fused_weight(parts, dequantized)
        x = rng.uniform(-1, 1, size=(3, w.shape[1])).astype(np.float32)
        input_scale = np.max([input_scales[m] for m, _ in parts], axis=0) if input_scales else None
        x_scale, xq = quantize_activations(x, strategy, input_scale)
        probes[key + ".x"] = ("F32", x)
        probes[key + ".x_scale"] = ("F32", x_scale)
        probes[key + ".y"] = ("F32", (xq @ w.T).astype(np.float32))
    write_model(src, dst, config, out, probes)


def main():
    models_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/models"
    for name, (source, method, group) in INT4_MODELS.items():
        make_int4(os.path.join(models_dir, source), os.path.join(models_dir, name), method, group)
        print("wrote", os.path.join(models_dir, name))
    for name, (source, strategy) in FP8_MODELS.items():
        make_fp8(os.path.join(models_dir, source), os.path.join(models_dir, name), strategy)
        print("wrote", os.path.join(models_dir, name))


if __name__ == "__main__":
    main()
