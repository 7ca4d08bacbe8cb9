#!/usr/bin/env python3
"""Byte-level BPE reference (Llama 3 / GPT-2 style), the oracle for
compiler/frontends/hf/ByteLevelBpe.cpp (tests/unit/TokenizerJsonTest.cpp).

Pure Python plus the `regex` module (Debian's python3-regex, for \\p{L} and \\p{N}); it does
not share code or tables with the C++ side.

  train  (default): learns --merges N byte-level BPE merges on --train TEXT (pre-tokenized
         with the Llama 3 regex; each step merges the most frequent adjacent pair, ties to
         the smallest pair) and writes OUT as a Hugging Face tokenizer.json shaped like
         Llama 3's: model BPE (byte_fallback false, ignore_merges per --ignore-merges),
         vocab = the 256 byte characters (GPT-2's bytes_to_unicode, ids = byte values), one
         token per merge, then --whole-words frequent pieces no merge produces (only
         ignore_merges reaches them, as in Llama 3's vocabulary), added_tokens <|begin_of_text|>, <|end_of_text|>,
         <|reserved_special_token_0|> (special, normalized false) and "[kiln]" (not special,
         normalized true), pre_tokenizer Sequence[Split(Llama 3 regex, Isolated),
         ByteLevel(use_regex false)] (--pattern gpt2: ByteLevel(use_regex true) alone),
         post_processor Sequence[ByteLevel, TemplateProcessing "<|begin_of_text|> $A"],
         decoder ByteLevel.
  --classes OUT: one character per code point 0..0x10FFFF: L, N or S when `regex` matches
         \\p{L}, \\p{N} or \\s, O otherwise, and "-" for code points unassigned in
         Python's unicodedata (whose Unicode version the C++ tables come from) and surrogates.
  --encode-hex IN --ids-out OUT: reads OUT's tokenizer.json back (any file of that shape)
         and writes the ids (no BOS) of every line of IN, each line a hex-encoded UTF-8
         string, one line of space-separated ids per input line.

Encoding as Hugging Face tokenizers does: added tokens are cut out first (normalized false,
then normalized true; leftmost, longest at one place), the rest is split by the regex
(every match its own piece), each piece's bytes mapped to GPT-2's characters; with
ignore_merges a piece that is a vocabulary token is that token, else BPE merges the
lowest-ranked adjacent pair, leftmost on ties, until no pair is a merge.
"""
import argparse
import collections
import json
import sys

import unicodedata

import regex

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
          list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHAR = bytes_to_unicode()


def to_chars(piece):
    return "".join(BYTE_CHAR[b] for b in piece.encode("utf-8"))


def train(text, n_merges, pattern):
    words = collections.Counter(to_chars(p) for p in regex.findall(pattern, text))
    words = {tuple(w): c for w, c in words.items()}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        joined = best[0] + best[1]
        new = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        words = new
    return merges


def whole_words(text, merges, count, pattern):
    """The `count` most frequent pieces of 2+ bytes that no merge produces: vocabulary tokens
    only ignore_merges can reach (Llama 3's vocabulary has such tokens too)."""
    made = {a + b for a, b in merges}
    pieces = collections.Counter(to_chars(p) for p in regex.findall(pattern, text))
    return sorted((w for w in pieces if len(w) > 1 and w not in made),
                  key=lambda w: (-pieces[w], w))[:count]


def write_tokenizer_json(path, merges, extra, ignore_merges, pattern, merge_form):
    vocab = {BYTE_CHAR[b]: b for b in range(256)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    for w in extra:
        vocab[w] = len(vocab)
    n = len(vocab)
    added = [
        {"id": n, "content": "<|begin_of_text|>", "special": True, "normalized": False},
        {"id": n + 1, "content": "<|end_of_text|>", "special": True, "normalized": False},
        {"id": n + 2, "content": "<|reserved_special_token_0|>", "special": True,
         "normalized": False},
        {"id": n + 3, "content": "[kiln]", "special": False, "normalized": True},
    ]
    for a in added:
        a.update({"single_word": False, "lstrip": False, "rstrip": False})
    if pattern == "llama3":
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]}
    else:
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": True}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {
                 "id": "<|begin_of_text|>", "ids": [n], "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": [[a, b] if merge_form == "pairs" else a + " " + b for a, b in merges],
        },
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


class Encoder:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        model = doc["model"]
        self.vocab = model["vocab"]
        self.ignore_merges = bool(model.get("ignore_merges"))
        self.ranks = {}
        for r, m in enumerate(model["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            self.ranks[(a, b)] = r
        pre = doc["pre_tokenizer"]
        if pre["type"] == "ByteLevel":
            self.pattern = regex.compile(GPT2)
        else:
            self.pattern = regex.compile(pre["pretokenizers"][0]["pattern"]["Regex"])
        # longest first, so the first match at a place is the longest
        by_len = sorted(doc.get("added_tokens") or [], key=lambda a: -len(a["content"]))
        self.added_raw = [(a["content"], a["id"]) for a in by_len if not a.get("normalized")]
        self.added_norm = [(a["content"], a["id"]) for a in by_len if a.get("normalized")]

    def bpe(self, chars):
        if self.ignore_merges and chars in self.vocab:
            return [self.vocab[chars]]
        syms = list(chars)
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        return [self.vocab[s] for s in syms]

    @staticmethod
    def split_added(text, added, plain, out):
        start = i = 0
        while i < len(text):
            hit = next(((c, t) for c, t in added if text.startswith(c, i)), None)
            if hit is None:
                i += 1
                continue
            if i > start:
                plain(text[start:i], out)
            out.append(hit[1])
            i += len(hit[0])
            start = i
        if start < len(text):
            plain(text[start:], out)

    def encode_plain(self, text, out):
        for piece in self.pattern.findall(text):
            out.extend(self.bpe(to_chars(piece)))

    def encode(self, text):
        out = []
        self.split_added(
            text, self.added_raw,
            lambda s, o: self.split_added(s, self.added_norm, self.encode_plain, o), out)
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="tokenizer.json to write (or, with --encode-hex, to read)")
    ap.add_argument("--train", help="training text (train mode)")
    ap.add_argument("--merges", type=int, default=400)
    ap.add_argument("--whole-words", type=int, default=16,
                    help="extra vocabulary tokens no merge produces (see whole_words)")
    ap.add_argument("--ignore-merges", choices=["true", "false"], default="true")
    ap.add_argument("--pattern", choices=["llama3", "gpt2"], default="llama3")
    ap.add_argument("--merge-form", choices=["string", "pairs"], default="pairs")
    ap.add_argument("--classes", action="store_true", help="write the class map to OUT")
    ap.add_argument("--encode-hex", help="file of hex-encoded UTF-8 lines to encode")
    ap.add_argument("--ids-out", help="where --encode-hex writes the ids")
    args = ap.parse_args()
    if args.classes:
        cls = regex.compile(r"(\p{L})|(\p{N})|(\s)")
        out = []
        for cp in range(0x110000):
            c = chr(cp)
            if 0xD800 <= cp <= 0xDFFF or unicodedata.category(c) == "Cn":
                out.append("-")
                continue
            m = cls.match(c)
            out.append("LNS"[m.lastindex - 1] if m else "O")
        with open(args.out, "w") as f:
            f.write("".join(out))
        return
    if args.encode_hex:
        enc = Encoder(args.out)
        with open(args.encode_hex) as f, open(args.ids_out, "w") as out:
            for line in f:
                text = bytes.fromhex(line.strip()).decode("utf-8")
                out.write(" ".join(str(i) for i in enc.encode(text)) + "\n")
        return
    if not args.train:
        sys.exit("need --train TEXT (or --encode-hex)")
    with open(args.train, encoding="utf-8") as f:
        text = f.read()
    pattern = LLAMA3 if args.pattern == "llama3" else GPT2
    merges = train(text, args.merges, pattern)
    extra = whole_words(text, merges, args.whole_words, pattern)
    write_tokenizer_json(args.out, merges, extra, args.ignore_merges == "true", args.pattern,
                         args.merge_form)


if __name__ == "__main__":
    main()
