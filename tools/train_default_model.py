#!/usr/bin/env python3
"""Trains brisk's bundled default model, models/tiny-austen, and records its golden outputs.

A small Llama (GQA, RoPE, SwiGLU, tied embeddings) with its own byte-level BPE tokenizer, both
trained from scratch on Jane Austen's six novels (public domain; extracted from the Debian
package r-cran-janeaustenr by tools/prepare_corpus.py). It writes a normal Hugging Face folder:

    config.json  generation_config.json  model.safetensors (bf16)  tokenizer.json
    tokenizer_config.json (special tokens + a ChatML-style chat template)  special_tokens_map.json
    README.md (model card)  training_log.json

and the golden (tests/data/default_model_golden.json), recorded from the SAVED folder reloaded
with transformers in float32 on the CPU with eager attention: for each fixed prompt the prompt
ids (HF encode with special tokens, so BOS first), NUM_GREEDY greedy token ids, their text and
the top-1 margin of every greedy step. tests/e2e/default_model_test.cc pins brisk's tokenizer,
chat template and greedy tokens to it. Prompts are fixed (never re-drawn); the test checks each
prompt's tokens up to its first step whose top-1 margin is below MIN_MARGIN (a near tie that
rounding could flip); the prompt of `make run` (the golden's "make_run") has no such step.

Most sequences are plain text; a tenth are two consecutive paragraphs rendered as a one-turn chat
(user: a paragraph, assistant: the next one), so that `brisk generate --chat` continues in
Austen's style and ends with <|im_end|>. The model is a completion model, not an assistant.

Training keeps the weights of the best validation loss (the last 3% of each novel; the corpus is
small, so a longer run overfits). Runs on the GPU machine (torch + transformers + tokenizers) in
under a minute (on an H200: 45 s of training, 53 s in all); --smoke runs a tiny configuration on
the CPU for a few steps to check the script end to end. On the GPU machine, with `.corpus`
carried, write under $OUT and tar the result (model.safetensors is 19 MB):
    python3 tools/train_default_model.py --out $OUT/m/tiny-austen --golden $OUT/m/default_model_golden.json

Usage: python3 tools/train_default_model.py [--corpus .corpus/austen] [--out models/tiny-austen]
                                            [--golden tests/data/default_model_golden.json]
"""
import argparse
import glob
import json
import math
import os
import random
import shutil
import time

import torch
import torch.nn.functional as F
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

EOS, BOS, IM_START, IM_END = "<|endoftext|>", "<|begin_of_text|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [EOS, BOS, IM_START, IM_END]  # ids 0..3
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

# Fixed golden prompts, never re-drawn. `make run` and the README use the first one whose 48
# greedy steps all have a clear margin (the golden's "make_run" index).
PROMPTS = [
    "It was a fine morning, and Emma",
    "Mr. Darcy came into the room and",
    "\"I am sure,\" said Mrs. Bennet,",
    "The weather was so bad that",
    "She could not help thinking that",
    "Once upon a time",
]
CHAT_MESSAGES = [[{"role": "user", "content": "Tell me about the ball at Netherfield."}]]
NUM_GREEDY = 48
MIN_MARGIN = 2e-3

FULL = dict(vocab=8192, hidden=256, intermediate=1024, layers=8, heads=8, kv_heads=2, head_dim=32,
            seq=1024, batch=16, steps=1200, lr=1.5e-3, eval_every=100, warmup=100, dropout=0.2)
SMOKE = dict(vocab=1024, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16,
             seq=128, batch=4, steps=12, lr=3e-3, eval_every=6, warmup=2, dropout=0.2)


def read_books(corpus_dir):
    paths = sorted(glob.glob(os.path.join(corpus_dir, "*.txt")))
    if not paths:
        raise SystemExit(f"no *.txt under {corpus_dir}: run tools/prepare_corpus.py first")
    return {os.path.basename(p)[:-4]: open(p, encoding="utf-8").read() for p in paths}


def split_book(text, val_fraction):
    """Train and validation text: the last val_fraction of the book (at a paragraph boundary)."""
    cut = text.rfind("\n\n", 0, int(len(text) * (1 - val_fraction)))
    return text[:cut], text[cut + 2:]


def train_tokenizer(texts, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)

    def chunks():  # a few paragraphs at a time, so that paragraph breaks ("\n\n") get merged
        for text in texts:
            paragraphs = text.split("\n\n")
            for i in range(0, len(paragraphs), 8):
                yield "\n\n".join(paragraphs[i:i + 8])

    tok.train_from_iterator(chunks(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B:1", special_tokens=[(BOS, tok.token_to_id(BOS))])
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == i, (t, tok.token_to_id(t))
    return tok


def write_tokenizer_files(tok, out, max_len):
    tok.save(os.path.join(out, "tokenizer.json"))
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True} for i, t in enumerate(SPECIAL_TOKENS)}
    config = {
        "added_tokens_decoder": added, "bos_token": BOS, "eos_token": EOS, "pad_token": EOS,
        "unk_token": None, "clean_up_tokenization_spaces": False, "model_max_length": max_len,
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump({"bos_token": BOS, "eos_token": EOS, "pad_token": EOS}, f, indent=2)


def render_chat(user, assistant=None):
    """The chat template's output, written out (checked against transformers below)."""
    text = f"{BOS}{IM_START}user\n{user}{IM_END}\n{IM_START}assistant\n"
    return text if assistant is None else text + f"{assistant}{IM_END}\n"


def chat_pairs(text, rng, fraction=0.35):
    paragraphs = [p for p in text.split("\n\n")]
    pairs = []
    for a, b in zip(paragraphs, paragraphs[1:]):
        if 20 <= len(a) <= 700 and 20 <= len(b) <= 1200 and rng.random() < fraction:
            pairs.append(render_chat(a, b))
    return pairs


def make_config(cfg, tok):
    kwargs = dict(vocab_size=tok.get_vocab_size(), hidden_size=cfg["hidden"], intermediate_size=cfg["intermediate"],
                  num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                  num_key_value_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                  max_position_embeddings=cfg["seq"], rms_norm_eps=1e-5, hidden_act="silu",
                  initializer_range=0.02, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
                  bos_token_id=SPECIAL_TOKENS.index(BOS), eos_token_id=SPECIAL_TOKENS.index(EOS),
                  pad_token_id=SPECIAL_TOKENS.index(EOS))
    try:  # transformers >= 5
        return LlamaConfig(rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **kwargs)
    except TypeError:
        return LlamaConfig(rope_theta=10000.0, rope_scaling=None, **kwargs)


def to_legacy_config(path):
    """config.json as pre-v5 transformers (and most Hub folders) write it: rope_theta, torch_dtype."""
    with open(path) as f:
        cfg = json.load(f)
    rope = cfg.pop("rope_parameters", None)
    if rope is not None:
        cfg["rope_theta"] = rope.get("rope_theta", 10000.0)
        cfg["rope_scaling"] = None
    if "dtype" in cfg:
        cfg["torch_dtype"] = cfg.pop("dtype")
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


def add_dropout(model, p):
    """Residual-branch dropout (attention and MLP outputs) while training; the saved architecture is
    plain Llama."""
    def hook(module, inputs, output):
        if isinstance(output, tuple):
            return (F.dropout(output[0], p, module.training),) + tuple(output[1:])
        return F.dropout(output, p, module.training)
    for layer in model.model.layers:
        layer.self_attn.register_forward_hook(hook)
        layer.mlp.register_forward_hook(hook)


class Batcher:
    def __init__(self, plain, chat, seq, batch, chat_fraction, seed, device):
        self.plain, self.chat = plain, chat
        self.seq, self.batch, self.chat_fraction, self.device = seq, batch, chat_fraction, device
        self.gen = torch.Generator().manual_seed(seed)

    def next(self):
        rows = []
        for _ in range(self.batch):
            use_chat = self.chat.numel() > self.seq + 1 and torch.rand((), generator=self.gen) < self.chat_fraction
            stream = self.chat if use_chat else self.plain
            start = int(torch.randint(0, stream.numel() - self.seq - 1, (), generator=self.gen))
            rows.append(stream[start:start + self.seq + 1])
        x = torch.stack(rows).to(self.device, non_blocking=True)
        return x[:, :-1], x[:, 1:]


def loss_of(model, x, y, autocast):
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=autocast):
        logits = model(input_ids=x).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))


@torch.no_grad()
def evaluate(model, val, seq, batch, device, autocast):
    model.eval()
    n = (val.numel() - 1) // seq
    total, count = 0.0, 0
    for i in range(0, n, batch):
        rows = [val[j * seq:j * seq + seq + 1] for j in range(i, min(n, i + batch))]
        x = torch.stack(rows).to(device)
        total += float(loss_of(model, x[:, :-1], x[:, 1:], autocast)) * len(rows)
        count += len(rows)
    model.train()
    return total / max(count, 1)


def train(cfg, config, plain, chat, val, device, time_budget, log):
    torch.manual_seed(1234)
    model = LlamaForCausalLM(config).to(device)
    model.train()
    add_dropout(model, cfg["dropout"])
    autocast = device.type == "cuda"
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(0.9, 0.95), eps=1e-8, fused=device.type == "cuda")
    batcher = Batcher(plain, chat, cfg["seq"], cfg["batch"], 0.1, 42, device)
    total_steps = cfg["steps"]
    best = (float("inf"), None, 0)
    start = time.time()
    step_times = []
    for step in range(1, 10 ** 9):
        if step > total_steps:
            break
        progress = (step - cfg["warmup"]) / max(1, total_steps - cfg["warmup"])
        lr_scale = step / cfg["warmup"] if step <= cfg["warmup"] else 0.1 + 0.45 * (1 + math.cos(math.pi * progress))
        for group in opt.param_groups:
            group["lr"] = cfg["lr"] * lr_scale
        t0 = time.time()
        x, y = batcher.next()
        loss = loss_of(model, x, y, autocast)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step == 40 and time_budget:  # fit the schedule to the time budget
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = sum(step_times[10:]) / len(step_times[10:])
            fit = int(time_budget / (per_step * 1.08))  # evaluation takes a few percent
            if fit < total_steps:
                print(f"{per_step * 1000:.1f} ms/step: {fit} steps fit in {time_budget:.0f} s", flush=True)
                total_steps = max(fit, 200)
        if step % 20 == 0 or step == 1:
            train_loss = loss.item()
            if step % 100 == 0 or step == 1:
                print(f"step {step}/{total_steps} loss {train_loss:.3f} lr {cfg['lr'] * lr_scale:.2e} "
                      f"{time.time() - start:.0f}s", flush=True)
        if device.type == "cuda" and step <= 40:
            torch.cuda.synchronize()
        step_times.append(time.time() - t0)
        if step % cfg["eval_every"] == 0 or step == total_steps:
            val_loss = evaluate(model, val, cfg["seq"], cfg["batch"], device, autocast)
            log.append({"step": step, "train_loss": round(loss.item(), 4), "val_loss": round(val_loss, 4),
                        "seconds": round(time.time() - start, 1)})
            print(f"step {step}: train {loss.item():.3f} val {val_loss:.3f}", flush=True)
            if val_loss < best[0]:
                best = (val_loss, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}, step)
    model.load_state_dict(best[1])
    return model, {"steps": total_steps, "best_step": best[2], "best_val_loss": round(best[0], 4),
                   "train_seconds": round(time.time() - start, 1)}


@torch.no_grad()
def greedy(model, ids, n):
    ids = list(ids)
    out, margins = [], []
    for _ in range(n):
        logits = model(torch.tensor([ids])).logits[0, -1].float()
        top = torch.topk(logits, 2)
        margins.append(round(float(top.values[0] - top.values[1]), 5))
        ids.append(int(top.indices[0]))
        out.append(ids[-1])
    return out, margins


def pinned_length(margins):
    for i, m in enumerate(margins):
        if m < MIN_MARGIN:
            return i
    return len(margins)


@torch.no_grad()
def record_golden(model_dir, path, num_greedy):
    """Greedy outputs of the saved folder, reloaded in float32 (CPU, eager) as brisk reads it."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    golden = {"model": os.path.basename(os.path.normpath(model_dir)), "num_greedy": num_greedy,
              "min_margin": MIN_MARGIN, "transformers_version": transformers.__version__,
              "torch_version": torch.__version__, "prompts": [], "chats": []}
    for prompt in PROMPTS:
        ids = tok(prompt)["input_ids"]
        tokens, margins = greedy(model, ids, num_greedy)
        n = pinned_length(margins)
        golden["prompts"].append({"prompt": prompt, "prompt_ids": ids, "greedy_ids": tokens,
                                  "text": tok.decode(tokens, skip_special_tokens=True),
                                  "pinned_text": tok.decode(tokens[:n], skip_special_tokens=True),
                                  "pinned": n, "margins": margins})
        print(f"{prompt!r} -> {tok.decode(tokens)!r} (pinned {n}/{num_greedy}, min margin {min(margins):.4f})")
    full = [i for i, p in enumerate(golden["prompts"]) if p["pinned"] == num_greedy]
    if not full:
        raise RuntimeError("no prompt whose every greedy step has a clear margin: add prompts")
    golden["make_run"] = full[0]  # the prompt `make run` and the README show
    print(f"make run prompt: {PROMPTS[full[0]]!r}")
    for messages in CHAT_MESSAGES:
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert rendered == render_chat(messages[0]["content"]), rendered
        ids = tok(rendered, add_special_tokens=False)["input_ids"]
        tokens, margins = greedy(model, ids, num_greedy)
        n = pinned_length(margins)
        golden["chats"].append({"messages": messages, "rendered": rendered, "prompt_ids": ids,
                                "greedy_ids": tokens, "text": tok.decode(tokens, skip_special_tokens=True),
                                "pinned": n, "margins": margins})
        print(f"chat {messages[0]['content']!r} -> {tok.decode(tokens)!r} (pinned {n}/{num_greedy})")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(golden, f, indent=1, ensure_ascii=False)
    return golden


MODEL_CARD = """---
language: en
library_name: transformers
pipeline_tag: text-generation
---
# tiny-austen

brisk's bundled default model: a {params_m:.1f}M-parameter Llama ({layers} layers, hidden {hidden},
{heads} query heads and {kv_heads} key/value heads of dimension {head_dim} (GQA), SwiGLU {intermediate},
RoPE theta 10000, tied embeddings, context {seq}) with its own {vocab}-token byte-level BPE tokenizer,
both trained from scratch by `tools/train_default_model.py` in the brisk repository.
It continues English prose in the style of Jane Austen; it is a toy, not an assistant.

Training text: Jane Austen's six completed novels (public domain, from Project Gutenberg), as
shipped by the Debian package `r-cran-janeaustenr` (the R package janeaustenr by Julia Silge,
MIT license), extracted by `tools/prepare_corpus.py`. The last 3% of each novel was held out for
validation. {steps} steps of {batch} x {seq} tokens (AdamW, lr {lr}, cosine, dropout {dropout}, bf16
autocast) on {device} in {train_seconds:.0f} s; weights of the best validation loss
({best_val_loss:.3f} at step {best_step}; training log in training_log.json). A tenth of the
sequences are two consecutive paragraphs in the chat template (user, then assistant).

Chat template (tokenizer_config.json): ChatML-like, `<|begin_of_text|>` then
`<|im_start|>role\\ncontent<|im_end|>\\n` per message; generation stops at `<|endoftext|>` or
`<|im_end|>`.

License: the training text is in the public domain (the R package that ships it is MIT-licensed);
the weights and tokenizer are made from that text alone by brisk's own script and are
distributed with brisk on brisk's terms.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=".corpus/austen")
    ap.add_argument("--out", default="models/tiny-austen")
    ap.add_argument("--golden", default="tests/data/default_model_golden.json")
    ap.add_argument("--time-budget", type=float, default=210.0, help="seconds of training (fits the step count)")
    ap.add_argument("--smoke", action="store_true", help="tiny configuration, a few steps (CPU check)")
    args = ap.parse_args()
    cfg = dict(SMOKE if args.smoke else FULL)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    t_start = time.time()
    random.seed(0)

    books = read_books(args.corpus)
    train_texts, val_texts = {}, {}
    for name, text in books.items():
        train_texts[name], val_texts[name] = split_book(text, 0.03)
    tok = train_tokenizer(list(train_texts.values()), cfg["vocab"])
    print(f"tokenizer: {tok.get_vocab_size()} tokens ({time.time() - t_start:.0f}s)", flush=True)
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)

    def encode(text):
        return tok.encode(text, add_special_tokens=False).ids

    plain, val, chat = [], [], []
    rng = random.Random(0)
    for name in sorted(books):
        plain += [bos] + encode(train_texts[name]) + [eos]
        val += encode(val_texts[name]) + [eos]
        for pair in chat_pairs(train_texts[name], rng):
            chat += encode(pair)
    plain, val, chat = (torch.tensor(t, dtype=torch.long) for t in (plain, val, chat))
    print(f"tokens: train {plain.numel()}, chat {chat.numel()}, validation {val.numel()}", flush=True)

    config = make_config(cfg, tok)
    log = []
    model, summary = train(cfg, config, plain, chat, val, device, None if args.smoke else args.time_budget, log)
    params = sum(p.numel() for p in model.parameters())
    print(f"{params / 1e6:.2f}M parameters; best val loss {summary['best_val_loss']} at step {summary['best_step']}")

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    model = model.to("cpu", torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=[eos, tok.token_to_id(IM_END)],
                                               pad_token_id=eos)
    model.save_pretrained(args.out)
    to_legacy_config(os.path.join(args.out, "config.json"))
    write_tokenizer_files(tok, args.out, cfg["seq"])
    summary.update(parameters=params, corpus_tokens=int(plain.numel()), chat_tokens=int(chat.numel()),
                   validation_tokens=int(val.numel()), config=cfg,
                   device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                   torch_version=torch.__version__, transformers_version=transformers.__version__, log=log)
    with open(os.path.join(args.out, "training_log.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(MODEL_CARD.format(params_m=params / 1e6, **cfg, **{k: v for k, v in summary.items() if k not in cfg}))
    for extra in os.listdir(args.out):  # keep the folder to what brisk and transformers read
        if extra not in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                         "tokenizer_config.json", "special_tokens_map.json", "README.md", "training_log.json"):
            raise RuntimeError(f"unexpected file {extra} in {args.out}")
    record_golden(args.out, args.golden, 8 if args.smoke else NUM_GREEDY)
    print(f"done in {time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
