"""A model folder whose real weights make it write a fixed script: after any prompt, greedy or
sampled, it writes the script's pieces in order and then its end-of-turn token. Each piece is an
added token of the tokenizer; the weights are a bigram table (token -> next token) built into the
embedding and lm_head, with every layer's output projections zero. The server tests use it to
make the model emit tool calls and reasoning exactly as real models format them.

    python tests/server/scripted_model.py OUT_DIR   # the tool-calling script, to try by hand
"""
import array
import json
import pathlib
import struct
import sys

import tiny_model

HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 2, 1, 32
# Logit of the scripted next token (others are 0): sampling at temperature 1 still follows it.
LOGIT = 80.0

# ChatML with tools and tool calls, as Qwen2.5's template renders them (Hermes format).
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- if tools -%}{{- '<|im_start|>system\\nYou may call tools, each in <tool_call></tool_call> tags:\\n' -}}"
    "{%- for tool in tools -%}{{- tool | tojson -}}{{- '\\n' -}}{%- endfor -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' and message['tool_calls'] -%}"
    "{{- '<|im_start|>assistant\\n' + (message['content'] or '') -}}"
    "{%- for call in message['tool_calls'] -%}"
    "{{- '<tool_call>\\n' -}}"
    "{{- {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson -}}"
    "{{- '\\n</tool_call>' -}}{%- endfor -%}{{- '<|im_end|>\\n' -}}"
    "{%- elif message['role'] == 'tool' -%}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

# Thinking, then one tool call whose arguments arrive in three pieces.
TOOL_SCRIPT = [
    "<think>", "\nThe user asks for the weather.\n", "</think>", "\n\n",
    "<tool_call>", "\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": ", "\"Paris\", \"unit\": ",
    "\"celsius\"}}\n", "</tool_call>",
]


def safetensors(tensors):
    """The safetensors bytes of {name: (shape, array('f'))}."""
    header, offset = {}, 0
    for name, (shape, values) in tensors.items():
        size = len(values) * 4
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob)) + blob + b"".join(v.tobytes() for _, v in tensors.values())


def write(out: pathlib.Path, script=TOOL_SCRIPT) -> pathlib.Path:
    assert len(script) < HIDDEN and len(set(script)) == len(script), "pieces must be distinct, fewer than HIDDEN"
    tiny_model.write(out)
    tok = json.loads((out / "tokenizer.json").read_text())
    end_of_turn = next(t["id"] for t in tok["added_tokens"] if t["content"] == tiny_model.IM_END)
    next_id = max(t["id"] for t in tok["added_tokens"]) + 1
    ids = list(range(next_id, next_id + len(script)))
    assert ids[-1] < tiny_model.VOCAB_SIZE
    for i, piece in zip(ids, script):
        tok["added_tokens"].append({"id": i, "content": piece, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": False})
    (out / "tokenizer.json").write_text(json.dumps(tok))
    config = json.loads((out / "tokenizer_config.json").read_text())
    config["chat_template"] = CHAT_TEMPLATE
    (out / "tokenizer_config.json").write_text(json.dumps(config))

    # Hidden dimension 0 holds every token outside the script, dimension k + 1 the script's
    # k-th piece; lm_head maps each dimension to the token that follows.
    vocab = tiny_model.VOCAB_SIZE
    embed = array.array("f", bytes(4 * vocab * HIDDEN))
    for token in range(vocab):
        embed[token * HIDDEN + (ids.index(token) + 1 if token in ids else 0)] = 1.0
    lm_head = array.array("f", bytes(4 * vocab * HIDDEN))
    for dim, successor in enumerate(ids + [end_of_turn]):
        lm_head[successor * HIDDEN + dim] = LOGIT / 8.0  # RMSNorm scales a one-hot row by sqrt(HIDDEN)

    def zeros(*shape):
        n = 1
        for d in shape:
            n *= d
        return list(shape), array.array("f", bytes(4 * n))

    def ones(n):
        return [n], array.array("f", [1.0] * n)

    tensors = {"model.embed_tokens.weight": ([vocab, HIDDEN], embed), "lm_head.weight": ([vocab, HIDDEN], lm_head),
               "model.norm.weight": ones(HIDDEN)}
    for layer in range(LAYERS):
        p = f"model.layers.{layer}."
        tensors.update({
            p + "input_layernorm.weight": ones(HIDDEN), p + "post_attention_layernorm.weight": ones(HIDDEN),
            p + "self_attn.q_proj.weight": zeros(HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.k_proj.weight": zeros(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.v_proj.weight": zeros(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.o_proj.weight": zeros(HIDDEN, HEADS * HEAD_DIM),
            p + "mlp.gate_proj.weight": zeros(INTERMEDIATE, HIDDEN),
            p + "mlp.up_proj.weight": zeros(INTERMEDIATE, HIDDEN),
            p + "mlp.down_proj.weight": zeros(HIDDEN, INTERMEDIATE)})
    (out / "model.safetensors").write_bytes(safetensors(tensors))
    return out


if __name__ == "__main__":
    print(write(pathlib.Path(sys.argv[1])))
