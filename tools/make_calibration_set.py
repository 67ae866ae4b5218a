#!/usr/bin/env python3
"""Makes the calibration text of `brisk quantize --method awq` and the held-out text of its test.

Source: Jane Austen's six completed novels (public domain, from Project Gutenberg) as
tools/prepare_corpus.py extracts them from the Debian package r-cran-janeaustenr (the R package
janeaustenr by Julia Silge, MIT license): run that script first.

Writes
    data/calibration/austen.txt    excerpts of whole paragraphs spread evenly over the first 97%
                                   of each novel (the part models/tiny-austen was trained on), about
                                   30 KB per novel; excerpts are separated by a blank line
    tests/data/austen-heldout.txt  about 8 KB from the last 3% of Persuasion and of Emma (held out
                                   from models/tiny-austen's training), for tests that measure
                                   quantization error on text no calibration or training saw

Usage: python3 tools/make_calibration_set.py [CORPUS_DIR]   (default: .corpus/austen)
Deterministic: the same corpus gives the same files.
"""
import os
import sys

NOVELS = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]
VAL_FRACTION = 0.03          # as tools/train_default_model.py holds out
EXCERPTS_PER_NOVEL = 6
EXCERPT_CHARS = 5000         # an excerpt is whole paragraphs up to about this many characters
HELDOUT_CHARS = 4000         # per held-out novel


def split_book(text):
    """The training part and the held-out tail (at a paragraph boundary), as the training script."""
    cut = text.rfind("\n\n", 0, int(len(text) * (1 - VAL_FRACTION)))
    return text[:cut], text[cut + 2:]


def take_paragraphs(paragraphs, start, limit):
    out, size = [], 0
    for p in paragraphs[start:]:
        if size and size + len(p) > limit:
            break
        out.append(p)
        size += len(p) + 2
    return "\n\n".join(out)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else ".corpus/austen"
    if not os.path.isfile(os.path.join(corpus, "emma.txt")):
        sys.exit(f"{corpus}: no corpus; run tools/prepare_corpus.py first")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    excerpts, heldout = [], []
    for name in NOVELS:
        train, tail = split_book(open(os.path.join(corpus, f"{name}.txt"), encoding="utf-8").read())
        paragraphs = [p for p in train.split("\n\n") if p.strip()]
        for i in range(EXCERPTS_PER_NOVEL):
            start = (2 * i + 1) * len(paragraphs) // (2 * EXCERPTS_PER_NOVEL)
            excerpts.append(take_paragraphs(paragraphs, start, EXCERPT_CHARS))
        if name in ("persuasion", "emma"):
            heldout.append(take_paragraphs([p for p in tail.split("\n\n") if p.strip()], 0, HELDOUT_CHARS))
    calibration = "\n\n".join(excerpts) + "\n"
    with open(os.path.join(root, "data/calibration/austen.txt"), "w", encoding="utf-8") as f:
        f.write(calibration)
    with open(os.path.join(root, "tests/data/austen-heldout.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(heldout) + "\n")
    print(f"calibration: {len(calibration.encode())} bytes; held out: {sum(len(h) for h in heldout)} characters")


if __name__ == "__main__":
    main()
