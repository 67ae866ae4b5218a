"""A tiny Llama model folder for the server tests: config.json for random weights
(--dummy-weights), the repository's synthetic byte-level tokenizer with ChatML tokens added,
and a ChatML chat template. Outputs are noise, but every path of the server is exercised.

    python tests/server/tiny_model.py OUT_DIR     # to try `brisk serve` / `brisk chat` by hand
"""
import json
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = REPO / "tests/data/tokenizer/synthetic_bytelevel/tokenizer.json"

BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
VOCAB_SIZE = 768  # covers the tokenizer's 708 ids
MAX_MODEL_LEN = 512

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- if tools -%}{{- '<|im_start|>system\\nTools: ' -}}"
    "{%- for tool in tools -%}{{- tool['function']['name'] -}}{%- if not loop.last -%}, {% endif -%}{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def write(out: pathlib.Path, max_model_len: int = MAX_MODEL_LEN) -> pathlib.Path:
    out.mkdir(parents=True, exist_ok=True)
    tok = json.loads(TOKENIZER.read_text())
    next_id = max(t["id"] for t in tok["added_tokens"]) + 1
    im_start, im_end = next_id, next_id + 1
    for i, content in ((im_start, IM_START), (im_end, IM_END)):
        tok["added_tokens"].append({"id": i, "content": content, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
    # Llama-3 style: BOS only (the synthetic tokenizer also appends EOS).
    for processor in tok["post_processor"]["processors"]:
        if processor["type"] == "TemplateProcessing":
            processor["single"] = [{"SpecialToken": {"id": BOS, "type_id": 0}},
                                   {"Sequence": {"id": "A", "type_id": 0}}]
    (out / "tokenizer.json").write_text(json.dumps(tok))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": BOS, "eos_token": IM_END, "add_bos_token": True, "chat_template": CHAT_TEMPLATE}))
    (out / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "vocab_size": VOCAB_SIZE, "max_position_embeddings": max_model_len, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32",
        "bos_token_id": 0, "eos_token_id": [1, im_end]}))
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": 0, "eos_token_id": [1, im_end]}))
    return out


if __name__ == "__main__":
    print(write(pathlib.Path(sys.argv[1])))
