"""Llama 3 RoPE scaling against llama.cpp: a synthetic Llama 3-style model (rope_freqs for
an original context of 8,192, theta 500,000, tied embeddings) runs 8,400 token ids through
kiln's reference executor and through llama.cpp (node-llama-cpp's prebuilt CPU build, f32
KV cache); the logits at positions before and past 8,192 must agree. The same weights
without rope_freqs must not, so the check sees the scaling.

Tolerance: both sides compute in fp32 and differ only in summation order (about 1e-5 on
logits of magnitude ~50 here); 1e-3 leaves a 100x margin and is still 1000x below what
dropping the scaling changes past the original context."""
import argparse
import array
import json
import os
import random
import subprocess

from e2e_common import fail, need_oracles, run

POSITIONS = [10, 4000, 8300, 8399]
N_IDS = 8400
VOCAB = 320
BOUND = 1e-3


def rows(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--oracles", required=True, help="where install-deps put node-llama-cpp")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    need_oracles(args.node, args.oracles)
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)
    shape = ["--dim", "64", "--heads", "4", "--kv-heads", "2", "--layers", "2", "--ffn", "128",
             "--vocab", str(VOCAB), "--ctx", "131072", "--rope-theta", "500000", "--tied"]
    run([args.kiln, "synth", "-o", w("scaled.gguf"), "--llama3-rope", "8192"] + shape)
    run([args.kiln, "synth", "-o", w("unscaled.gguf")] + shape)
    rng = random.Random(7)
    with open(w("ids.txt"), "w") as f:
        f.write(" ".join(str(rng.randrange(3, VOCAB)) for _ in range(N_IDS)))

    env = dict(os.environ, KILN_NODE_ORACLES=args.oracles)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_logits.mjs")
    cmd = [args.node, script, w("scaled.gguf"), w("ids.txt"),
           ",".join(map(str, POSITIONS)), w("llamacpp.json")]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True)
    if p.returncode != 0:
        fail(f"llama.cpp oracle exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    oracle = json.load(open(w("llamacpp.json")))

    for name in ("scaled", "unscaled"):
        run([args.kiln, "eval", w(name + ".gguf"), "--prompt-ids", w("ids.txt"), "-n", "0",
             "--ctx", str(N_IDS), "--dump-logits", w(name + ".bin")])
    scaled, unscaled = rows(w("scaled.bin")), rows(w("unscaled.bin"))
    if len(scaled) != N_IDS * VOCAB:
        fail(f"kiln dumped {len(scaled)} logits, expected {N_IDS * VOCAB}")
    argmax = lambda v: max(range(len(v)), key=lambda i: v[i])
    for pos in POSITIONS:
        ref = oracle[str(pos)]
        got = scaled[pos * VOCAB:(pos + 1) * VOCAB]
        off = unscaled[pos * VOCAB:(pos + 1) * VOCAB]
        d = max(abs(a - b) for a, b in zip(ref, got))
        d_off = max(abs(a - b) for a, b in zip(ref, off))
        print(f"position {pos}: max |kiln - llama.cpp| {d:.2e} (without rope_freqs {d_off:.2e}),"
              f" top token {argmax(got)} vs {argmax(ref)}")
        if d > BOUND or argmax(got) != argmax(ref):
            fail(f"position {pos}: kiln's logits are {d:.2e} from llama.cpp's (bound {BOUND})")
        if pos > 8192 and d_off < 100 * BOUND:
            fail(f"position {pos}: the model without rope_freqs is only {d_off:.2e} from "
                 f"llama.cpp, so this check does not see the scaling")
    print("PASS")


if __name__ == "__main__":
    main()
