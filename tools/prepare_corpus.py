#!/usr/bin/env python3
"""Extracts the training text of brisk's default model (models/tiny-austen) from a Debian package.

Corpus: Jane Austen's six completed novels (Sense and Sensibility, Pride and Prejudice,
Mansfield Park, Emma, Northanger Abbey, Persuasion), as shipped by the Debian package
`r-cran-janeaustenr` (bookworm: 1.0.0-1; the R package janeaustenr by Julia Silge, MIT
license). The texts come from Project Gutenberg and are in the public domain.

The package keeps each novel as an R character vector (one element per printed line) in R's
lazy-load database data/Rdata.rdb, indexed by data/Rdata.rdx. This script reads that format
with the Python standard library alone (a small reader for R's XDR serialization of plain
character vectors), rejoins the hard-wrapped lines into paragraphs, drops the `_italics_`
underscores of the Gutenberg transcription and writes one UTF-8 file per novel:

    OUT_DIR/<novel>.txt      paragraphs separated by one blank line
    OUT_DIR/SOURCE.json      package name, version, sha256 of the .deb, license

Runs here (the developer machine): it needs `apt-get download` and `dpkg-deb`, no root.
Usage: python3 tools/prepare_corpus.py [OUT_DIR]      (default: .corpus/austen; keep it out of commits)
"""
import glob
import gzip
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

PACKAGE = "r-cran-janeaustenr"
DATA_DIR = "usr/lib/R/site-library/janeaustenr/data"
# The R object names in the package, in publication order.
NOVELS = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]


class XdrReader:
    """R's XDR serialization (format 'X'), for the two shapes the package uses: the .rdx index
    (a named list) and the novels (character vectors). Anything else raises."""

    NILVALUE, SYMSXP, LISTSXP, CHARSXP, LGLSXP, INTSXP, STRSXP, VECSXP, REFSXP = 254, 1, 2, 9, 10, 13, 16, 19, 255

    def __init__(self, data):
        if data[:2] != b"X\n":
            raise ValueError("not an R XDR serialization")
        self.data, self.pos, self.refs = data, 2, []
        version = self.int()
        self.int(), self.int()  # writer and minimal reader versions
        if version == 3:
            length = self.int()  # then the native encoding's name
            self.pos += length
        elif version != 2:
            raise ValueError(f"unsupported serialization version {version}")

    def int(self):
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return value

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if kind == self.NILVALUE:
            return None
        if kind == self.REFSXP:
            return self.refs[(flags >> 8) - 1]
        if kind == self.SYMSXP:
            name = self.item()
            self.refs.append(name)
            return name
        if kind == self.CHARSXP:
            length = self.int()
            if length == -1:
                return None
            text = self.data[self.pos:self.pos + length].decode("utf-8" if flags & (1 << 15) else "latin-1")
            self.pos += length
            return text
        if kind == self.LISTSXP:  # pairlist: returned as a dict of tag -> value
            out = {}
            while kind == self.LISTSXP:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else str(len(out))
                out[tag] = self.item()
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, bool(flags & (1 << 9)), bool(flags & (1 << 10))
            if kind != self.NILVALUE:
                raise ValueError(f"pairlist ends in type {kind}")
            return out
        if kind in (self.STRSXP, self.VECSXP, self.INTSXP, self.LGLSXP):
            length = self.int()
            if kind in (self.INTSXP, self.LGLSXP):
                value = list(struct.unpack_from(f">{length}i", self.data, self.pos))
                self.pos += 4 * length
            else:
                value = [self.item() for _ in range(length)]
            attrs = self.item() if has_attr else None
            names = attrs.get("names") if attrs else None
            return dict(zip(names, value)) if names else value
        raise ValueError(f"unsupported R object type {kind}")


def read_lazyload_db(data_dir):
    index = XdrReader(gzip.decompress(open(os.path.join(data_dir, "Rdata.rdx"), "rb").read())).item()
    blob = open(os.path.join(data_dir, "Rdata.rdb"), "rb").read()
    objects = {}
    for name, (offset, length) in index["variables"].items():
        chunk = blob[offset:offset + length]
        (size,) = struct.unpack(">I", chunk[:4])
        raw = zlib.decompress(chunk[4:])
        if len(raw) != size:
            raise ValueError(f"{name}: expected {size} bytes, got {len(raw)}")
        objects[name] = XdrReader(raw).item()
    return objects


def to_paragraphs(lines):
    paragraphs, current = [], []
    for line in lines + [""]:
        line = (line or "").strip()
        if line:
            current.append(line)
        elif current:
            text = " ".join(current).replace("_", "")
            paragraphs.append(re.sub(r"\s+", " ", text))
            current = []
    return paragraphs


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else ".corpus/austen"
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, check=True)
        (deb,) = glob.glob(os.path.join(tmp, f"{PACKAGE}_*.deb"))
        sha256 = hashlib.sha256(open(deb, "rb").read()).hexdigest()
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(tmp, "x")], check=True)
        objects = read_lazyload_db(os.path.join(tmp, "x", DATA_DIR))
        copyright_text = open(os.path.join(tmp, "x", "usr/share/doc", PACKAGE, "copyright")).read()
    stats = {}
    for name in NOVELS:
        paragraphs = to_paragraphs(objects[name])
        text = "\n\n".join(paragraphs) + "\n"
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write(text)
        stats[name] = {"paragraphs": len(paragraphs), "chars": len(text)}
        print(f"{name}: {len(paragraphs)} paragraphs, {len(text)} characters")
    source = {
        "package": PACKAGE, "deb": os.path.basename(deb), "sha256": sha256,
        "package_license": "MIT (the R package janeaustenr, Julia Silge)",
        "text_license": "public domain (Jane Austen's novels, from Project Gutenberg)",
        "novels": stats, "copyright_file": copyright_text,
    }
    with open(os.path.join(out_dir, "SOURCE.json"), "w") as f:
        json.dump(source, f, indent=1)


if __name__ == "__main__":
    main()
