"""The SentencePiece vocabulary kiln needs in a GGUF (tokenizer.ggml.*), and a reference
encoder/decoder in Python so reference.json can hold the ids and text kiln will use."""
from gguf_writer import ARRAY, F32, I32, STRING, U32

NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
SPACE = "\u2581"


def random_vocab(n):
    """<unk> <s> </s>, the 256 byte tokens, then filler pieces (as kiln's SyntheticLlama.cpp
    writes them): '\u2581a'.., 'a'.., 'aa'.., scores falling so longer merges rank below."""
    if n < 259:
        raise ValueError("the vocabulary needs at least 259 tokens (3 special + 256 bytes)")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    scores = [0.0] * len(tokens)
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces = [SPACE + c for c in letters] + list(letters) + [a + b for a in letters for b in letters]
    for i in range(n - len(tokens)):
        tokens.append(pieces[i] if i < len(pieces) else f"<extra_{i}>")
        types.append(NORMAL)
        scores.append(-float(i))
    return {"tokenizer.ggml.model": (STRING, "llama", None),
            "tokenizer.ggml.tokens": (ARRAY, tokens, STRING),
            "tokenizer.ggml.scores": (ARRAY, scores, F32),
            "tokenizer.ggml.token_type": (ARRAY, types, I32),
            "tokenizer.ggml.unknown_token_id": (U32, 0, None),
            "tokenizer.ggml.bos_token_id": (U32, 1, None),
            "tokenizer.ggml.eos_token_id": (U32, 2, None)}


class SpmTokenizer:
    """llama.cpp's llm_tokenizer_spm: space prefix, ' ' -> U+2581, UTF-8 characters merged
    pairwise by the highest-scoring resulting piece (leftmost on ties), byte fallback."""

    def __init__(self, kv):
        self.tokens = kv["tokenizer.ggml.tokens"][1]
        self.scores = kv["tokenizer.ggml.scores"][1]
        self.types = kv["tokenizer.ggml.token_type"][1]
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.bos = kv.get("tokenizer.ggml.bos_token_id", (U32, 1, None))[1]
        self.eos = kv.get("tokenizer.ggml.eos_token_id", (U32, 2, None))[1]

    def encode(self, text, bos=True):
        syms = list((" " + text).replace(" ", SPACE))
        while True:
            best = None
            for i in range(len(syms) - 1):
                tid = self.ids.get(syms[i] + syms[i + 1])
                if tid is not None and (best is None or self.scores[tid] > best[0]):
                    best = (self.scores[tid], i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        out = [self.bos] if bos else []
        for s in syms:
            if s in self.ids:
                out.append(self.ids[s])
            else:
                out += [self.ids[f"<0x{b:02X}>"] for b in s.encode("utf-8")]
        return out

    def decode_piece(self, tid):
        """The bytes kiln prints for one generated token."""
        t, kind = self.tokens[tid], self.types[tid]
        if kind == BYTE:
            return bytes([int(t[3:5], 16)])
        if kind in (CONTROL, UNKNOWN):
            return b""
        return t.replace(SPACE, " ").encode("utf-8")
