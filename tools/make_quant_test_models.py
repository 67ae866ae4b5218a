#!/usr/bin/env python3
"""Writes brisk's int4 test models: AutoAWQ and GPTQ folders quantized from two bf16 test models.

numpy only (runs anywhere; no torch, no autoawq). The packing code here is written from the
published format descriptions, independently of brisk's C++ (src/model/int4_weight.*), so that
the two check each other:
  AutoAWQ "gemm": qweight int32 [K, N/8], nibble i of a word holds column 8j + [0,2,4,6,1,3,5,7][i];
                  qzeros int32 [K/G, N/8] packed the same way; scales f16 [K/G, N].
  GPTQ (v1):      qweight int32 [K/8, N], nibble i holds row 8r + i; qzeros int32 [K/G, N/8]
                  sequential along N, storing zero - 1; scales f16 [K/G, N]; g_idx int32 [K].
Every linear layer is quantized round-to-nearest (AWQ: asymmetric; GPTQ: symmetric, zero 8).

Besides the model files, each folder gets probes.safetensors: for every canonical (fused) linear
layer of brisk (qkv = q|k|v rows, gate_up = gate|up rows; InternLM2's wqkv regrouped per KV
head), probe inputs x [3, K] and y = x @ dequant(W)^T computed here in float64. brisk's loader +
gemm_w4a16 must reproduce y (tests/unit/model/quant_checkpoint_test.cc).

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
MODELS = {
    "llama-gqa4-hd64-tied-awq-g32": ("llama-gqa4-hd64-tied-llama3rope-bf16", "awq", 32),
    "internlm2-gqa2-hd32-gptq-g64": ("internlm2-gqa2-hd32-bf16", "gptq", 64),
}

DTYPES = {"BF16": (np.uint16, 2), "F16": (np.float16, 2), "F32": (np.float32, 4), "I32": (np.int32, 4)}


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


def as_f32(dtype, array):
    if dtype == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


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


def make(src, dst, method, group):
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(src, "model.safetensors"))
    fused = linear_names(config)
    modules = sorted({name for parts in fused.values() for name, _ in parts})
    out, dequantized = {}, {}
    for name, value in tensors.items():
        if not any(name == m + ".weight" for m in modules):
            out[name] = value
    for m in modules:
        w = as_f32(*tensors[m + ".weight"])
        q, zeros, scales = quantize(w, group, symmetric=(method == "gptq"))
        dequantized[m] = dequantize(q, zeros, scales, group)
        packed = pack_awq(q, zeros, scales) if method == "awq" else pack_gptq(q, zeros, scales, group)
        for suffix, value in packed.items():
            out[f"{m}.{suffix}"] = value
    os.makedirs(dst, exist_ok=True)
    write_safetensors(os.path.join(dst, "model.safetensors"), out)
    if method == "awq":
        config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": group,
                                         "zero_point": True, "version": "gemm", "modules_to_not_convert": None}
    else:
        config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": group,
                                         "desc_act": False, "sym": True, "checkpoint_format": "gptq"}
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copy(os.path.join(src, "generation_config.json"), dst)

    rng = np.random.default_rng(0)
    probes = {}
    for key, parts in fused.items():
        w = np.concatenate([dequantized[m] if rows is None else dequantized[m][rows] for m, rows in parts])
        x = rng.uniform(-1, 1, size=(3, w.shape[1])).astype(np.float32)
        probes[key + ".x"] = ("F32", x)
        probes[key + ".y"] = ("F32", (x.astype(np.float64) @ w.T).astype(np.float32))
    write_safetensors(os.path.join(dst, "probes.safetensors"), probes)


def main():
    models_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/models"
    for name, (source, method, group) in MODELS.items():
        make(os.path.join(models_dir, source), os.path.join(models_dir, name), method, group)
        print("wrote", os.path.join(models_dir, name))


if __name__ == "__main__":
    main()
