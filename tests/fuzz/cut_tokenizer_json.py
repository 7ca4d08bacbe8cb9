"""Prints a tokenizer.json cut to its first N vocabulary entries, the merges among them and
the added tokens: a real file's structure (Llama 3's, from the npm oracle) in a size the
tokenizer-json harness can mutate quickly.  Usage: cut_tokenizer_json.py FILE N"""
import json
import sys

tok = json.load(open(sys.argv[1], encoding="utf-8"))
n = int(sys.argv[2])
vocab = {t: i for t, i in tok["model"]["vocab"].items() if i < n}
merges = []
for m in tok["model"]["merges"]:
    a, b = m if isinstance(m, list) else m.split(" ", 1)
    if a in vocab and b in vocab and a + b in vocab:
        merges.append(m)
tok["model"]["vocab"] = vocab
tok["model"]["merges"] = merges
tok["added_tokens"] = tok.get("added_tokens", [])[:4]
json.dump(tok, sys.stdout, ensure_ascii=False)
