#!/usr/bin/env python3
"""Golden token masks for brisk's grammar engine (src/grammar), made with xgrammar.

For every case of tests/data/grammar/corpus.json (JSON schema, regex, EBNF, builtin JSON) and
every tokenizer of ../shared/testdata/tokenizers, xgrammar compiles the grammar and makes a few
seeded random walks of accepted tokens; at every step it records the allowed-token set as a count
plus an order-free 64-bit hash (and the ids themselves when there are few). The C++ test
(tests/unit/grammar/golden_mask_test.cc) replays the walks and compares brisk's masks exactly.
It also records xgrammar's EBNF for each case, so that brisk's matcher can be checked on
xgrammar's own grammar apart from brisk's converters.

xgrammar imports torch and transformers at import time but needs neither for compiling and
matching on the CPU with numpy bitmasks: stand-in modules take their place (CI has no torch).

    scripts/python -m pip install --no-deps xgrammar apache-tvm-ffi   # + numpy, pydantic
    scripts/python tools/make_grammar_goldens.py            # writes tests/data/grammar/goldens/
    scripts/python tools/make_grammar_goldens.py --full DIR # full id lists, for debugging
"""
import argparse
import json
import random
import sys
import types
from pathlib import Path

import numpy as np
import tvm_ffi  # noqa: F401  (imported before the stand-ins: it probes for torch itself)


class _StandIn(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[0].islower():
            return lambda *args, **kwargs: None
        return type(name, (), {})


sys.modules.setdefault("torch", _StandIn("torch"))
sys.modules.setdefault("transformers", _StandIn("transformers"))
import xgrammar as xgr  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKENIZERS = ROOT.parent / "shared" / "testdata" / "tokenizers"
WALKS = 3
MAX_STEPS = 32
LIST_LIMIT = 24  # masks with at most this many tokens are stored as id lists
MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def mask_hash(ids):
    return sum(splitmix64(int(i)) for i in ids) & MASK64


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def load_vocab(name):
    """(pieces, vocab_type, special flags, stop ids) as brisk's tokenizer loads the folder."""
    folder = TOKENIZERS / name
    if (folder / "tokenizer.json").exists():
        spec = json.loads((folder / "tokenizer.json").read_text())
        vocab = dict(spec["model"]["vocab"])
        special_ids = set()
        for added in spec["added_tokens"]:
            vocab[added["content"]] = added["id"]
            if added["special"]:
                special_ids.add(added["id"])
        decoder = json.dumps(spec.get("decoder"))
        vocab_type = xgr.VocabType.BYTE_FALLBACK if "ByteFallback" in decoder else (
            xgr.VocabType.BYTE_LEVEL if "ByteLevel" in decoder else xgr.VocabType.RAW)
        config = json.loads((folder / "tokenizer_config.json").read_text())
        eos = config["eos_token"]
        eos = eos["content"] if isinstance(eos, dict) else eos
        stop = [vocab[eos]]
    else:
        vocab = json.loads((folder / "vocab.json").read_text())
        vocab_type = xgr.VocabType.BYTE_LEVEL
        special_ids = {vocab["<|endoftext|>"]} if "<|endoftext|>" in vocab else set()
        if name == "qwen2":  # the specials follow vocab.json (../shared/testdata/README.md)
            for i, text in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]):
                vocab[text] = 151643 + i
                special_ids.add(151643 + i)
        stop = [vocab["<|endoftext|>"]]
    size = max(vocab.values()) + 1
    pieces = [""] * size
    for text, idx in vocab.items():
        pieces[idx] = text
    special = [i in special_ids for i in range(size)]
    return pieces, vocab_type, special, stop


def vocab_digest(info, special, stop):
    """FNV-1a over (id, kind, length, bytes) of every token, as the C++ test computes it."""
    decoded = info.decoded_vocab
    h = 0xCBF29CE484222325
    for i, raw in enumerate(decoded):
        kind = 2 if i in stop else (1 if special[i] or len(raw) == 0 else 0)
        data = b"" if kind else bytes(raw)
        h = fnv1a(i.to_bytes(4, "little") + bytes([kind]) + len(data).to_bytes(4, "little") + data, h)
    return f"{h:016x}"


def compile_case(compiler, case):
    kind, source = case["kind"], case["source"]
    if kind == "json_schema":
        return compiler.compile_json_schema(json.dumps(source)), str(xgr.Grammar.from_json_schema(json.dumps(source)))
    if kind == "regex":
        return compiler.compile_regex(source), str(xgr.Grammar.from_regex(source))
    if kind == "ebnf":
        return compiler.compile_grammar(source), str(xgr.Grammar.from_ebnf(source))
    if kind == "builtin_json":
        return compiler.compile_builtin_json_grammar(), str(xgr.Grammar.builtin_json_grammar())
    raise ValueError(kind)


def allowed_ids(matcher, bitmask, vocab_size):
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:vocab_size]
    return np.nonzero(bits)[0]


def pick(rng, ids, decoded, stop):
    ids = [int(i) for i in ids]
    stops = [i for i in ids if i in stop]
    if stops and rng.random() < 0.25:
        return stops[0]
    short = [i for i in ids if i not in stop and len(decoded[i]) <= 2]
    if short and rng.random() < 0.6:
        return rng.choice(short)
    return rng.choice(ids)


def walk(compiled, seed, vocab_size, decoded, stop, full):
    rng = random.Random(seed)
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = np.zeros((1, (vocab_size + 31) // 32), dtype=np.int32)
    steps = []
    for _ in range(MAX_STEPS):
        ids = allowed_ids(matcher, bitmask, vocab_size)
        step = {"count": len(ids), "hash": f"{mask_hash(ids):016x}",
                "jump": matcher.find_jump_forward_string()}
        if len(ids) <= LIST_LIMIT or full:
            step["ids"] = [int(i) for i in ids]
        if len(ids) == 0:
            steps.append(step)
            break
        token = pick(rng, ids, decoded, stop)
        step["token"] = token
        steps.append(step)
        assert matcher.accept_token(token)
        if matcher.is_terminated():
            break
    return {"seed": seed, "steps": steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", help="write goldens with every allowed id into this folder instead")
    parser.add_argument("--tokenizers", default="llama2,qwen2,gpt2,phi3")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    corpus = json.loads((ROOT / "tests/data/grammar/corpus.json").read_text())
    if args.cases:
        wanted = set(args.cases.split(","))
        corpus = [c for c in corpus if c["name"] in wanted]
    out_dir = Path(args.full) if args.full else ROOT / "tests/data/grammar/goldens"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.tokenizers.split(","):
        pieces, vocab_type, special, stop = load_vocab(name)
        # Special tokens never match grammar text: xgrammar treats empty pieces as special.
        encoded = ["" if special[i] and i not in stop else p for i, p in enumerate(pieces)]
        info = xgr.TokenizerInfo(encoded, vocab_type, vocab_size=len(pieces), stop_token_ids=stop)
        decoded = info.decoded_vocab
        compiler = xgr.GrammarCompiler(info, max_threads=4)
        cases = []
        for case in corpus:
            try:
                compiled, ebnf = compile_case(compiler, case)
            except Exception as e:  # noqa: BLE001
                print(f"{name}/{case['name']}: xgrammar rejects it: {str(e).splitlines()[0]}")
                cases.append({"name": case["name"], "xgrammar_error": str(e).splitlines()[0]})
                continue
            seed_base = fnv1a(f"{name}/{case['name']}".encode()) & 0xFFFF
            walks = [walk(compiled, seed_base + w, len(pieces), decoded, set(stop), bool(args.full))
                     for w in range(WALKS)]
            cases.append({"name": case["name"], "xgrammar_ebnf": ebnf, "walks": walks})
        golden = {"generator": "tools/make_grammar_goldens.py", "xgrammar": xgr.__version__ if hasattr(xgr, "__version__") else "0.2.9",
                  "tokenizer": name, "vocab_size": len(pieces), "stop_ids": stop,
                  "vocab_digest": vocab_digest(info, special, set(stop)), "cases": cases}
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(golden, separators=(",", ":"), ensure_ascii=False) + "\n")
        print(f"{path}: {len(cases)} cases, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
