#!/usr/bin/env python3
"""Writes a GGUF file's SentencePiece vocabulary as a Hugging Face tokenizer.json, the way
transformers' LlamaConverter (convert_slow_tokenizer.py) writes one from tokenizer.model.

Plain python3, no third-party packages: the GGUF metadata (v2/v3) is read here. The oracle
for compiler/frontends/hf/TokenizerJson.cpp (tests/unit/TokenizerJsonTest.cpp): the ids of
the written file must equal the GGUF tokenizer's.

As LlamaConverter:
  vocab   piece -> id, scores of ids 0..2 (<unk>, <s>, </s>) taken as 0.0
  merges  SentencePieceExtractor: for every piece, every split into two pieces that are both
          in the vocabulary (ordered by the ids of the two halves), then all of them sorted
          by the merged piece's score, highest first (a stable sort, so pieces of one score
          keep id order). --order current also breaks score ties by the halves' lengths,
          longest left first, as transformers >= 4.45's generate_merges does.
  added_tokens  the UNKNOWN and CONTROL pieces, special; USER_DEFINED ones, not special
  normalizer    --style legacy: Sequence[Prepend("▁"), Replace(" ", "▁")] (legacy=True);
  pre_tokenizer --style metaspace: Metaspace(prepend_scheme "first", split false) instead
  post_processor TemplateProcessing "<s> $A" when add_bos_token (GGUF default true)
  --merges string writes "a b" (tokenizers < 0.20), --merges pairs writes ["a", "b"].
--encode TEXT --ids-out IDS also writes the ids of every line of TEXT by the BPE rule
(bpe_encode: what tokenizers' BPE model computes from the written file), a second oracle
that does not go through SentencePiece scores at all.
"""
import argparse
import json
import struct
import sys

SP = "\u2581"
GGUF_TYPES = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
              10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_BYTE = 1, 2, 3, 4, 6


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("string runs past the end of the file")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        if t not in GGUF_TYPES:
            raise ValueError(f"unknown GGUF value type {t}")
        return self.take(GGUF_TYPES[t])


def read_metadata(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.take("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} (expected 2 or 3)")
    r.take("<Q")  # tensor count
    n_kv = r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    return meta


def generate_merges(vocab, vocab_scores, order):
    """transformers' SentencePieceExtractor with vocab_scores given (reverse=True)."""
    scores = dict(vocab_scores)
    merges = []
    for merge, piece_score in scores.items():
        local = []
        for index in range(1, len(merge)):
            left, right = merge[:index], merge[index:]
            if left in vocab and right in vocab:
                local.append((left, right, piece_score))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    if order == "current":
        merges.sort(key=lambda v: (v[2], len(v[0]), len(v[1])), reverse=True)
    else:
        merges.sort(key=lambda v: v[2], reverse=True)
    return [(v[0], v[1]) for v in merges]


def added(idx, text, special):
    return {"id": idx, "content": text, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": not special, "special": special}


def convert(meta, style, merges_format, order):
    if meta.get("tokenizer.ggml.model") != "llama":
        raise ValueError("tokenizer.ggml.model is not \"llama\" (SentencePiece)")
    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta.get("tokenizer.ggml.scores", [0.0] * len(tokens))
    types = meta.get("tokenizer.ggml.token_type", [TYPE_NORMAL] * len(tokens))
    bos = tokens[meta.get("tokenizer.ggml.bos_token_id", 1)]
    unk = tokens[meta.get("tokenizer.ggml.unknown_token_id", 0)]
    add_prefix = meta.get("tokenizer.ggml.add_space_prefix", True)
    add_bos = meta.get("tokenizer.ggml.add_bos_token", True)

    # LlamaConverter.vocab: ids 0..2 get score 0.0, the rest keep the model's.
    vocab_scores = [(t, 0.0 if i < 3 else s) for i, (t, s) in enumerate(zip(tokens, scores))]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = generate_merges(vocab, vocab_scores, order)
    if merges_format == "string":
        merges = [f"{a} {b}" for a, b in merges]
    else:
        merges = [[a, b] for a, b in merges]

    added_tokens = []
    for i, t in enumerate(types):
        if t in (TYPE_UNKNOWN, TYPE_CONTROL):
            added_tokens.append(added(i, tokens[i], True))
        elif t == TYPE_USER_DEFINED:
            added_tokens.append(added(i, tokens[i], False))

    if style == "legacy":
        seq = [{"type": "Prepend", "prepend": SP}] if add_prefix else []
        seq.append({"type": "Replace", "pattern": {"String": " "}, "content": SP})
        normalizer, pre_tokenizer = {"type": "Sequence", "normalizers": seq}, None
    else:
        normalizer = None
        pre_tokenizer = {"type": "Metaspace", "replacement": SP,
                         "prepend_scheme": "first" if add_prefix else "never", "split": False}

    seq_a = {"Sequence": {"id": "A", "type_id": 0}}
    seq_b = {"Sequence": {"id": "B", "type_id": 1}}
    if add_bos:
        bos_item = lambda tid: {"SpecialToken": {"id": bos, "type_id": tid}}
        post = {"type": "TemplateProcessing", "single": [bos_item(0), seq_a],
                "pair": [bos_item(0), seq_a, bos_item(1), seq_b],
                "special_tokens": {bos: {"id": bos, "ids": [vocab[bos]], "tokens": [bos]}}}
    else:
        post = None

    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def bpe_encode(doc, text):
    """Ids for `text` by the BPE rule as tokenizers' BPE model (merge_word, merge_all) applies
    it to a file written by convert(): the normalizer or Metaspace makes spaces U+2581 and puts
    one in front of non-empty text; characters not in the vocabulary become <0xNN> tokens;
    then the adjacent pair with the lowest merge rank is merged (leftmost first) until none
    is left. No BOS."""
    model = doc["model"]
    vocab = model["vocab"]
    ranks = {}
    for rank, m in enumerate(model["merges"]):
        a, b = m.split(" ") if isinstance(m, str) else m
        ranks.setdefault((a, b), rank)
    if not text:
        return []
    prepend = (doc["normalizer"] is not None and
               doc["normalizer"]["normalizers"][0]["type"] == "Prepend") or \
              (doc["pre_tokenizer"] is not None and
               doc["pre_tokenizer"]["prepend_scheme"] != "never")
    text = (SP if prepend else "") + text.replace(" ", SP)
    syms = []
    for ch in text:
        if ch in vocab:
            syms.append(ch)
        else:
            syms.extend(f"<0x{b:02X}>" for b in ch.encode("utf-8"))
    while True:
        best = None
        for i in range(len(syms) - 1):
            rank = ranks.get((syms[i], syms[i + 1]))
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    return [vocab[t] for t in syms]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--style", choices=["legacy", "metaspace"], default="legacy")
    ap.add_argument("--merges", choices=["string", "pairs"], default="string")
    ap.add_argument("--order", choices=["current", "legacy"], default="current")
    ap.add_argument("--encode", metavar="TEXT",
                    help="also encode each line of TEXT by the BPE rule (bpe_encode) ...")
    ap.add_argument("--ids-out", metavar="IDS", help="... writing one line of ids per line here")
    args = ap.parse_args()
    if bool(args.encode) != bool(args.ids_out):
        ap.error("--encode and --ids-out go together")
    try:
        doc = convert(read_metadata(args.gguf), args.style, args.merges, args.order)
    except (OSError, ValueError, KeyError, IndexError, struct.error) as e:
        print(f"gguf_to_tokenizer_json: {e}", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(doc['model']['vocab'])} tokens, "
          f"{len(doc['model']['merges'])} merges")
    if args.encode:
        with open(args.encode, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        with open(args.ids_out, "w") as f:
            for line in lines:
                f.write(" ".join(str(i) for i in bpe_encode(doc, line)) + "\n")
        print(f"wrote {args.ids_out}: {len(lines)} lines encoded by the BPE rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
