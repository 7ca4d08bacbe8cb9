#!/usr/bin/env python3
"""Byte-level BPE tokenizer.json beside an ONNX model (issue 6): a random-weight Llama with a
676-token vocabulary is exported (export_llama.py), and byte_bpe_reference.py writes a
Llama-3-style tokenizer.json of 676 tokens beside it. Then
  - `kiln eval` (tokenizer.json found beside the model, and given with --tokenizer) runs and
    its prefill holds exactly BOS + the reference's ids for the prompt;
  - `kiln ppl` runs on tinystories-dev.txt;
  - `kiln compile` puts the tokenizer into the artifact, and `kiln-run generate` on it
    tokenizes the prompt to the same ids (its prefill) and generates the same greedy text as
    `kiln eval`.
Run with the Python that has torch, onnx and regex (KILN_TORCH_PYTHON).

  onnx_byte_bpe_e2e.py --kiln PATH --kiln-run PATH --models DIR --work DIR"""
import argparse
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from e2e_common import fail, need, run  # noqa: E402
import byte_bpe_reference  # noqa: E402

PROMPT = "Once upon a time, it's 12345 o'clock!\r\n  <|begin_of_text|>\xe9t\xe9 \U0001F600"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--kiln-run", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    calib = need(args.models, "tinystories-calib.txt")
    dev = need(args.models, "tinystories-dev.txt")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model_dir = os.path.join(args.work, "m")
    tok = os.path.join(model_dir, "tokenizer.json")
    run([sys.executable, os.path.join(HERE, "export_llama.py"), "--out", model_dir,
         "--vocab", "676", "--no-reference"])
    run([sys.executable, os.path.join(HERE, "byte_bpe_reference.py"), tok, "--train", calib])
    want = len(byte_bpe_reference.Encoder(tok).encode(PROMPT)) + 1  # BOS
    onnx = os.path.join(model_dir, "model.onnx")
    texts = []
    for extra in ([], ["--tokenizer", tok]):
        p = run([args.kiln, "eval", onnx, "--prompt", PROMPT, "-n", "8"] + extra)
        out = (p.stdout + p.stderr).decode(errors="replace")
        m = re.search(r"prefill: (\d+) tokens", out)
        if not m or int(m.group(1)) != want:
            fail(f"expected a prefill of {want} tokens (BOS + the reference's ids), got: {out!r}")
        texts.append(p.stdout)
        print(f"eval {' '.join(extra) or '(tokenizer.json beside)'}: prefill {want} tokens")
    p = run([args.kiln, "ppl", onnx, dev, "--ctx", "64"])
    if b"PPL = " not in p.stdout + p.stderr:
        fail(f"no PPL printed: {p.stdout!r}")
    artifact = os.path.join(args.work, "model.kiln")
    run([args.kiln, "compile", onnx, "-o", artifact])
    p = run([args.kiln_run, "generate", artifact, "-p", PROMPT, "-n", "8"])
    m = re.search(rb"prefill: (\d+) tokens", p.stderr)
    if not m or int(m.group(1)) != want:
        fail(f"kiln-run: expected a prefill of {want} tokens, got: {p.stderr!r}")
    if p.stdout.rstrip(b"\n") != texts[0].rstrip(b"\n"):
        fail(f"kiln-run generated {p.stdout!r}, kiln eval {texts[0]!r}")
    print(f"kiln-run on the artifact: prefill {want} tokens, the same 8 greedy tokens as eval")
    print("PASS")


if __name__ == "__main__":
    main()
