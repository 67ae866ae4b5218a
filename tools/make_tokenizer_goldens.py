#!/usr/bin/env python3
"""Writes tests/data/tokenizer/*.json: encode/decode goldens for brisk's tokenizer tests.

References: Hugging Face `tokenizers` (PyPI) for tokenizer.json / vocab+merges tokenizers, and
`sentencepiece` (PyPI) for tokenizer.model files. Also writes two small synthetic
tokenizer.json files (trained here) that exercise what the real files do not: byte-level BPE
with a Split regex, ignore_merges, NFKC, added tokens with lstrip/rstrip/single_word/normalized,
TemplateProcessing with BOS+EOS; and a Metaspace + byte_fallback model.

Usage: scripts/python tools/make_tokenizer_goldens.py [--shared ../shared/testdata]
"""
import argparse
import json
import os
import random
import sys

from tokenizers import Tokenizer, AddedToken, decoders, models, normalizers, pre_tokenizers, processors, Regex
from tokenizers.trainers import BpeTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer")

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")

TEXTS = [
    "",
    " ",
    "Hello world",
    " Hello World!",
    "The quick brown fox jumps over the lazy dog. It's 3.14159 o'clock; we've 1234567 apples.",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < 10; ++i) { sum += a[i] * b[i]; }  // C++",
    "    \t\tindented\n\n\n   trailing   ",
    "          long   run     of      spaces          ",
    "\n\n\n\n",
    "日本語のテキストです。中文文本测试。한국어 텍스트입니다.",
    "Emoji: 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇯🇵",
    "مرحبا بالعالم! هذا نص عربي.",
    "שלום עולם, זה טקסט בעברית",
    "Ελληνικά, Русский текст, Ελλάδα",
    "Numbers: 0 1 12 123 1234 12345 3,000,000.50 1e-9 ٣٤٥ ①②",
    "Mixed: café naïve résumé Å Å ﬁ ﬀ ㌀ Ｈｅｌｌｏ",
    "Special <s> inside </s> text",
    "<s>[INST] What is 2+2? [/INST]",
    "<|endoftext|>Hello<|endoftext|> world",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|user|>\nWhat is AI?<|end|>\n<|assistant|>\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "  <mask>  and <mask>word and word<mask> and [SEP] here",
    "Zero\u200bwidth\u200djoiner and soft\u00adhyphen and tab\tand CR\r\nLF",
    "Ünïcödé ÀÉÎÕÜ ß ẞ ǅ İstanbul",
    "URL: https://example.com/path?q=1&b=two#frag email@test.org",
    "ааааааааааааааааааааааааааааааааааааааааааааааааааааааааааааааааа",
    "!!!???...,,,;;;:::---___===+++***",
    "\u00a0non-breaking\u3000ideographic\u2028line",
]


def ids_of(encoding):
    return list(encoding.ids)


def hf_cases(tok, texts, rng, num_random):
    """encode with/without specials; decode of those ids and of random id lists, skip on/off."""
    cases = []
    for text in texts:
        ids = ids_of(tok.encode(text, add_special_tokens=False))
        ids_special = ids_of(tok.encode(text, add_special_tokens=True))
        cases.append({
            "text": text,
            "ids": ids,
            "ids_special": ids_special,
            "decode": tok.decode(ids_special, skip_special_tokens=False),
            "decode_skip": tok.decode(ids_special, skip_special_tokens=True),
        })
    return cases, random_decodes(lambda ids, skip: tok.decode(ids, skip_special_tokens=skip), tok.get_vocab_size(),
                                 special_ids(tok), byte_ids(tok), rng, num_random)


def special_ids(tok):
    return sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special)


def byte_ids(tok):
    vocab = tok.get_vocab()
    return sorted(vocab[k] for k in vocab if len(k) == 6 and k.startswith("<0x") and k.endswith(">"))


def random_decodes(decode, vocab_size, specials, bytes_, rng, count):
    out = []
    for _ in range(count):
        n = rng.randint(1, 12)
        ids = []
        for _ in range(n):
            r = rng.random()
            if r < 0.15 and specials:
                ids.append(rng.choice(specials))
            elif r < 0.45 and bytes_:
                ids.append(rng.choice(bytes_))
            else:
                ids.append(rng.randrange(vocab_size))
        out.append({"ids": ids, "decode": decode(ids, False), "decode_skip": decode(ids, True)})
    return out


def fixed_llama2_json(path):
    """HF 0.23 rejects merges written as strings with more than one space (tokens that contain
    spaces); rewrite them as pairs, splitting where both halves and their join are tokens."""
    data = json.load(open(path, encoding="utf-8"))
    vocab = data["model"]["vocab"]
    merges = []
    for m in data["model"]["merges"]:
        if isinstance(m, list):
            merges.append(m)
            continue
        parts = None
        for i, c in enumerate(m):
            if c == " " and m[:i] in vocab and m[i + 1:] in vocab and m[:i] + m[i + 1:] in vocab:
                parts = [m[:i], m[i + 1:]]
                break
        merges.append(parts or m.split(" ", 1))
    data["model"]["merges"] = merges
    return Tokenizer.from_str(json.dumps(data))


def gpt2_tokenizer(folder):
    model = models.BPE.from_file(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    return tok


def qwen2_tokenizer(folder):
    model = models.BPE.from_file(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
    tok = Tokenizer(model)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]])
    assert tok.token_to_id("<|im_end|>") == 151645
    return tok


def training_corpus():
    corpus = []
    for t in TEXTS:
        corpus += [t] * 3
    corpus += ["the cat sat on the mat with another cat", "tokenizers are fun to write and test",
               "hello hello hello world world", "yesterday was a good day, today is a better day"] * 20
    return corpus


def synthetic_bytelevel():
    """Llama-3-like byte-level tokenizer.json with every added-token option."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                         special_tokens=["<|begin_of_text|>", "<|end_of_text|>"], show_progress=False)
    tok.train_from_iterator(training_corpus(), trainer)
    tok.add_special_tokens([
        AddedToken("<|eot_id|>", special=True, normalized=False),
        AddedToken("<mask>", special=True, lstrip=True, rstrip=True, normalized=False),
        AddedToken("[SEP]", special=True, single_word=True, normalized=False),
    ])
    tok.add_tokens([
        AddedToken("word", single_word=True, normalized=True),
        AddedToken("ｈｅｌｌｏ", normalized=True),  # NFKC turns it into "hello": matched in normalized text
        AddedToken("日本語", normalized=False),
    ])
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A <|end_of_text|>",
                                      special_tokens=[("<|begin_of_text|>", 0), ("<|end_of_text|>", 1)]),
    ])
    return tok


def synthetic_metaspace():
    """Mistral-like tokenizer.json: Metaspace pre-tokenizer and decoder, byte_fallback."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    trainer = BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
                         limit_alphabet=120)
    tok.train_from_iterator(training_corpus(), trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    for b in range(256):  # byte pieces for characters outside the small alphabet
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    data["model"]["byte_fallback"] = True
    data["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    data["post_processor"] = {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                       {"Sequence": {"id": "B", "type_id": 1}}],
                              "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


# SentencePiece reference, with the conventions brisk documents in sentencepiece_tokenizer.h:
# control/unknown pieces written in the text are tokens (the text between them is encoded on
# its own), and decode renders them as their piece text; only the start of the whole output
# loses its leading space.
class SpmReference:
    def __init__(self, path):
        import sentencepiece as spm
        self.sp = spm.SentencePieceProcessor(model_file=path)
        n = self.sp.get_piece_size()
        self.specials = {i for i in range(n) if self.sp.is_control(i) or self.sp.is_unknown(i)}
        self.special_text = {self.sp.id_to_piece(i): i for i in self.specials}
        self.anchor = self.sp.piece_to_id("a")
        self.anchor_text = self.sp.decode([self.anchor])

    def encode(self, text, add_special):
        ids = [self.sp.bos_id()] if add_special else []
        pos, start = 0, 0
        while pos < len(text):
            best = max((t for t in self.special_text if text.startswith(t, pos)), key=len, default=None)
            if best is None:
                pos += 1
                continue
            if start < pos:
                ids += self.sp.encode(text[start:pos])
            ids.append(self.special_text[best])
            pos += len(best)
            start = pos
        if start < len(text):
            ids += self.sp.encode(text[start:])
        return ids

    def decode(self, ids, skip):
        out, run, after = "", [], False

        def flush():
            nonlocal out, run, after
            if run:
                if after:
                    out += self.sp.decode([self.anchor] + run)[len(self.anchor_text):]
                else:
                    out += self.sp.decode(run)
                after = True
                run = []

        for i in ids:
            if i in self.specials:
                if skip:
                    continue
                flush()
                out += self.sp.id_to_piece(i)
                after = True
            else:
                run.append(i)
        flush()
        return out


def spm_cases(path, rng, num_random):
    ref = SpmReference(path)
    cases = []
    for text in TEXTS:
        ids_special = ref.encode(text, True)
        cases.append({"text": text, "ids": ref.encode(text, False), "ids_special": ids_special,
                      "decode": ref.decode(ids_special, False), "decode_skip": ref.decode(ids_special, True)})
    bytes_ = [i for i in range(ref.sp.get_piece_size()) if ref.sp.is_byte(i)]
    return cases, random_decodes(ref.decode, ref.sp.get_piece_size(), sorted(ref.specials), bytes_, rng, num_random)


def write(name, source, cases, decodes):
    path = os.path.join(OUT, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"tokenizer": source, "cases": cases, "decodes": decodes}, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "testdata"))
    args = parser.parse_args()
    tokdir = os.path.join(args.shared, "tokenizers")
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(1234)
    num_random = 40

    for name, builder in [("synthetic_bytelevel", synthetic_bytelevel), ("synthetic_metaspace", synthetic_metaspace)]:
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        tok = builder()
        tok.save(os.path.join(folder, "tokenizer.json"))
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        write(name, f"tests/data/tokenizer/{name}", *hf_cases(tok, TEXTS, rng, num_random))

    real = [
        ("llama2_json", "llama2/tokenizer.json",
         lambda: fixed_llama2_json(os.path.join(tokdir, "llama2", "tokenizer.json"))),
        ("phi3_json", "phi3/tokenizer.json", lambda: Tokenizer.from_file(os.path.join(tokdir, "phi3", "tokenizer.json"))),
        ("gpt2_vocab_merges", "gpt2", lambda: gpt2_tokenizer(os.path.join(tokdir, "gpt2"))),
        ("qwen2_vocab_merges", "qwen2", lambda: qwen2_tokenizer(os.path.join(tokdir, "qwen2"))),
    ]
    for name, source, builder in real:
        write(name, source, *hf_cases(builder(), TEXTS, rng, num_random))
    for name, source in [("llama2_spm", "llama2/tokenizer.model"), ("internlm2_spm", "internlm2/tokenizer.model")]:
        write(name, source, *spm_cases(os.path.join(tokdir, source), rng, num_random))


if __name__ == "__main__":
    sys.exit(main())
