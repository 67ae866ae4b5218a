#!/usr/bin/env python3
"""Creates brisk's tiny seeded random-weight test models and records Hugging Face goldens.

Runs on the GPU machine (it has torch + transformers; CI never does). For every model in
MODELS it builds the architecture with transformers, saves it with save_pretrained, reloads the
saved folder in float32 (so the goldens come from exactly what brisk will read) and records:
  - prefill logits of every position of each fixed prompt (goldens.safetensors, f32),
  - greedy continuations of NUM_GREEDY tokens (goldens.json),
computed in float32 on the CPU with eager attention, so that brisk's fp32 CPU reference can
match them tightly. Prompts are re-drawn until every greedy step has a clear top-1 margin, so
that tiny rounding differences cannot flip a token.

InternLM2 has no reference code in transformers: its folder is written by converting a Llama
test model (packed grouped wqkv, InternLM2 tensor names) and reuses that model's goldens.

Usage: python3 tools/make_test_models.py OUT_DIR   (then copy OUT_DIR/* into tests/data/models)
"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file
import transformers
from transformers import AutoModelForCausalLM

VOCAB = 512
MAX_POS = 256
NUM_GREEDY = 32
PROMPT_LENGTHS = [5, 12, 29]
MIN_MARGIN = 2e-3
BOS, EOS = 1, 2

COMMON = dict(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=MAX_POS,
              rms_norm_eps=1e-5, hidden_act="silu", initializer_range=0.25,
              bos_token_id=BOS, eos_token_id=EOS)

# name -> (config class name, extra config, storage dtype, config.json form)
# Qwen3's folder is saved in shards with model.safetensors.index.json, the others as one file.
MODELS = {
    "llama-gqa4-hd64-tied-llama3rope-bf16": ("LlamaConfig", dict(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=1,
        head_dim=64, tie_word_embeddings=True,
        rope={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
        torch.bfloat16, "legacy"),
    "llama-mha-hd128-linearrope-f32": ("LlamaConfig", dict(
        hidden_size=64, intermediate_size=128, num_attention_heads=2, num_key_value_heads=2,
        head_dim=128, tie_word_embeddings=False,
        rope={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}),
        torch.float32, "native"),
    # hidden_size == num_heads * head_dim: InternLM2 (converted from this one) derives head_dim.
    "llama-gqa2-hd32-bf16": ("LlamaConfig", dict(
        hidden_size=128, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
        tie_word_embeddings=False, rope={"rope_type": "default", "rope_theta": 10000.0}),
        torch.bfloat16, "legacy"),
    "mistral-gqa2-hd64-window16-bf16": ("MistralConfig", dict(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
        head_dim=64, tie_word_embeddings=False, sliding_window=16,
        rope={"rope_type": "default", "rope_theta": 1000000.0}),
        torch.bfloat16, "legacy"),
    "qwen2-gqa2-hd64-bias-tied-bf16": ("Qwen2Config", dict(
        hidden_size=128, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1,
        tie_word_embeddings=True, use_sliding_window=False,
        rope={"rope_type": "default", "rope_theta": 1000000.0}),
        torch.bfloat16, "native"),
    "qwen3-gqa4-hd128-qknorm-bf16": ("Qwen3Config", dict(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=1,
        head_dim=128, tie_word_embeddings=False, use_sliding_window=False,
        rope={"rope_type": "default", "rope_theta": 1000000.0}),
        torch.bfloat16, "native"),
}
INTERNLM2_FROM = ("llama-gqa2-hd32-bf16", "internlm2-gqa2-hd32-bf16")


def make_config(class_name, extra):
    extra = dict(extra)
    rope = extra.pop("rope")
    cls = getattr(transformers, class_name)
    kwargs = dict(COMMON, **extra)
    try:  # transformers >= 5 takes rope_parameters
        return cls(rope_parameters=dict(rope), **kwargs)
    except TypeError:
        legacy = {k: v for k, v in rope.items() if k not in ("rope_type", "rope_theta")}
        scaling = dict(legacy, rope_type=rope["rope_type"]) if rope["rope_type"] != "default" else None
        return cls(rope_theta=rope["rope_theta"], rope_scaling=scaling, **kwargs)


def to_legacy_config(path):
    """Rewrites config.json the way pre-v5 transformers (and most hub folders) write it."""
    with open(path) as f:
        cfg = json.load(f)
    rope = cfg.pop("rope_parameters", None)
    if rope is not None:
        rope = dict(rope)
        cfg["rope_theta"] = rope.pop("rope_theta", 10000.0)
        cfg["rope_scaling"] = None if rope.get("rope_type") == "default" else rope
    if "dtype" in cfg:
        cfg["torch_dtype"] = cfg.pop("dtype")
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


@torch.no_grad()
def greedy(model, prompt):
    ids = list(prompt)
    margins = []
    for _ in range(NUM_GREEDY):
        logits = model(torch.tensor([ids])).logits[0, -1].float()
        top = torch.topk(logits, 2)
        margins.append(float(top.values[0] - top.values[1]))
        ids.append(int(top.indices[0]))
    return ids[len(prompt):], min(margins)


@torch.no_grad()
def record_goldens(model_dir, seed):
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    gen = torch.Generator().manual_seed(seed)
    prompts, greedy_tokens, tensors, min_margin = [], [], {}, None
    for i, length in enumerate(PROMPT_LENGTHS):
        for attempt in range(50):
            prompt = [BOS] + torch.randint(3, VOCAB, (length - 1,), generator=gen).tolist()
            tokens, margin = greedy(model, prompt)
            if margin >= MIN_MARGIN:
                break
        else:
            raise RuntimeError(f"{model_dir}: no prompt of length {length} with a clear greedy margin")
        logits = model(torch.tensor([prompt])).logits[0].float().contiguous()
        tensors[f"logits.{i}"] = logits
        prompts.append(prompt)
        greedy_tokens.append(tokens)
        min_margin = margin if min_margin is None else min(min_margin, margin)
    return {"prompts": prompts, "greedy": greedy_tokens, "min_greedy_margin": min_margin,
            "transformers_version": transformers.__version__, "torch_version": torch.__version__}, tensors


def write_goldens(model_dir, meta, tensors):
    with open(os.path.join(model_dir, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1)
    save_file(tensors, os.path.join(model_dir, "goldens.safetensors"))


def make_model(out, name, spec, seed):
    class_name, extra, dtype, form = spec
    torch.manual_seed(seed)
    config = make_config(class_name, extra)
    model = getattr(transformers, class_name.replace("Config", "ForCausalLM"))(config)
    model = model.to(dtype)
    model_dir = os.path.join(out, name)
    shutil.rmtree(model_dir, ignore_errors=True)
    model.save_pretrained(model_dir, max_shard_size="300KB" if class_name == "Qwen3Config" else "1GB")
    if form == "legacy":
        to_legacy_config(os.path.join(model_dir, "config.json"))
    return model_dir


def convert_to_internlm2(llama_dir, out_dir):
    """Writes a Llama folder in InternLM2's format: grouped packed wqkv, InternLM2 names."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with open(os.path.join(llama_dir, "config.json")) as f:
        cfg = json.load(f)
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    group = nh // nkv
    src = load_file(os.path.join(llama_dir, "model.safetensors"))
    dst = {"model.tok_embeddings.weight": src["model.embed_tokens.weight"],
           "model.norm.weight": src["model.norm.weight"],
           "output.weight": src["lm_head.weight"]}
    for i in range(cfg["num_hidden_layers"]):
        p, q = f"model.layers.{i}.", f"model.layers.{i}."
        qw, kw, vw = (src[p + f"self_attn.{n}_proj.weight"] for n in "qkv")
        parts = []
        for h in range(nkv):
            parts += [qw[h * group * hd:(h + 1) * group * hd], kw[h * hd:(h + 1) * hd], vw[h * hd:(h + 1) * hd]]
        dst[q + "attention.wqkv.weight"] = torch.cat(parts).contiguous()
        dst[q + "attention.wo.weight"] = src[p + "self_attn.o_proj.weight"]
        dst[q + "feed_forward.w1.weight"] = src[p + "mlp.gate_proj.weight"]
        dst[q + "feed_forward.w3.weight"] = src[p + "mlp.up_proj.weight"]
        dst[q + "feed_forward.w2.weight"] = src[p + "mlp.down_proj.weight"]
        dst[q + "attention_norm.weight"] = src[p + "input_layernorm.weight"]
        dst[q + "ffn_norm.weight"] = src[p + "post_attention_layernorm.weight"]
    save_file(dst, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    rope_scaling = cfg.get("rope_scaling")
    internlm2 = {
        "architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2",
        "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config",
                     "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"},
        "bias": False, "hidden_act": "silu", "hidden_size": cfg["hidden_size"],
        "intermediate_size": cfg["intermediate_size"], "num_attention_heads": nh,
        "num_key_value_heads": nkv, "num_hidden_layers": cfg["num_hidden_layers"],
        "vocab_size": cfg["vocab_size"], "max_position_embeddings": cfg["max_position_embeddings"],
        "rms_norm_eps": cfg["rms_norm_eps"], "rope_theta": cfg.get("rope_theta", 10000.0),
        "rope_scaling": rope_scaling, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": 0, "attn_implementation": "eager",
    }
    if hd * nh != cfg["hidden_size"]:
        raise RuntimeError("InternLM2 derives head_dim from hidden_size / num_attention_heads")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(internlm2, f, indent=2, sort_keys=True)
    shutil.copy(os.path.join(llama_dir, "generation_config.json"), out_dir)
    for name in ("goldens.json", "goldens.safetensors"):
        shutil.copy(os.path.join(llama_dir, name), out_dir)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/models"
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    summary = {}
    for seed, (name, spec) in enumerate(MODELS.items(), start=1000):
        model_dir = make_model(out, name, spec, seed)
        meta, tensors = record_goldens(model_dir, seed)
        write_goldens(model_dir, meta, tensors)
        summary[name] = meta["min_greedy_margin"]
        print(f"{name}: min greedy margin {meta['min_greedy_margin']:.4f}", flush=True)
    llama_name, internlm2_name = INTERNLM2_FROM
    convert_to_internlm2(os.path.join(out, llama_name), os.path.join(out, internlm2_name))
    print(f"{internlm2_name}: converted from {llama_name}")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
