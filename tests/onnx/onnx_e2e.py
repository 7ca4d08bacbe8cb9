"""End-to-end check of the ONNX frontend (issue 6) on one exported test model: export it with
export_llama.py (torch, Debian's /usr/bin/python3) into a scratch directory, then run
`kiln eval` on the GGUF holding the same weights and on the ONNX file, and compare:
  - logits (`kiln eval --dump-logits`): GGUF vs ONNX, and each vs the torch logits recorded
    at export time, max abs diff <= 1e-4;
  - greedy text: GGUF vs ONNX vs torch's greedy tokens;
  - kiln IR: `kiln import` prints the same module for the ONNX file and the GGUF (one IR for
    both formats: same weights, names, formats and hyper-parameters);
  - stories260K only: the ONNX text equals kiln's text on ../shared/models/stories260K.gguf,
    and with --kiln-run, `kiln compile` of the ONNX file and of stories260K.gguf (q8_0) give
    artifacts whose `kiln-run generate` prints the same text.

  onnx_e2e.py VARIANT --kiln PATH --models DIR --work DIR [--kiln-run PATH] [--gguf-only]
              [--text-only]

Run it with the Python that has torch, onnx and numpy (CMake's KILN_TORCH_PYTHON).
--gguf-only stops before the ONNX half; --text-only skips the logit comparisons (for a kiln
without --dump-logits). Both are for development: the ctests use neither."""
import argparse
import array
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_common import PROMPT, fail, need, run  # noqa: E402

TOL = 1e-4
# name -> (export_llama.py options, tokens to generate)
VARIANTS = {
    "opset14": (["--opset", "14"], 8),
    "opset17": (["--opset", "17"], 8),
    "opset14-past": (["--opset", "14", "--past"], 8),
    "opset17-past": (["--opset", "17", "--past"], 8),
    "f16": (["--dtype", "f16"], 8),
    "f16-past": (["--dtype", "f16", "--past"], 8),
    "external-data": (["--external-data", "--past"], 8),
    "tied": (["--tied"], 8),
    # unfolded: Transpose(W [out, in]) -> MatMul, one table for a tied embedding and lm_head
    "nofold-past": (["--opset", "14", "--past", "--no-constant-folding"], 8),
    "tied-nofold-f16": (["--tied", "--no-constant-folding", "--dtype", "f16"], 8),
    # Meta's adjacent-pair RoPE (real-valued, q/k rows unpermuted); same GGUF as rotate-half
    "adjacent": (["--rope", "adjacent"], 8),
    "adjacent-past": (["--rope", "adjacent", "--past"], 8),
    # Llama 3 RoPE scaling folded into inv_freq (pairs 3.. divided by 8, pair 2 smoothed):
    # raised to freq_factors, and the GGUF's rope_freqs.weight, equal to torch
    "llama3-rope": (["--llama3-rope", "96"], 8),
    "stories260k": (["--llama2c", "{models}/stories260K.bin"], 64),
    "stories260k-past": (["--llama2c", "{models}/stories260K.bin", "--past", "--external-data"], 64),
}


def read_dump(path, vocab):
    data = array.array("f")
    with open(path, "rb") as f:
        data.frombytes(f.read())
    if sys.byteorder != "little":
        data.byteswap()
    if len(data) % vocab:
        fail(f"{path}: {len(data)} floats is not a whole number of {vocab}-long rows")
    return [data[i:i + vocab] for i in range(0, len(data), vocab)]


def max_diff(a_rows, b_rows, what):
    if len(a_rows) != len(b_rows):
        fail(f"{what}: {len(a_rows)} logit rows vs {len(b_rows)}")
    worst = 0.0
    for a, b in zip(a_rows, b_rows):
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b)))
    print(f"{what}: max abs diff {worst:.3g} over {len(a_rows)} rows")
    if not worst <= TOL:
        fail(f"{what}: max abs diff {worst:.3g} > {TOL}")
    return worst


def kiln_eval(kiln, model, extra, n, dump):
    cmd = [kiln, "eval", model, "-p", PROMPT, "-n", str(n), "--temp", "0"] + extra
    if dump:
        cmd += ["--dump-logits", dump]
    return run(cmd).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", choices=sorted(VARIANTS))
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True, help="scratch directory (emptied first)")
    ap.add_argument("--kiln-run", help="also compile (stories260K cases) and run the artifacts")
    ap.add_argument("--gguf-only", action="store_true")
    ap.add_argument("--text-only", action="store_true")
    args = ap.parse_args()

    opts, n = VARIANTS[args.variant]
    stories = args.variant.startswith("stories")
    if stories:
        need(args.models, "stories260K.bin")
        shared_gguf = need(args.models, "stories260K.gguf")
        opts = [o.format(models=args.models) for o in opts] + ["--tokenizer-gguf", shared_gguf]
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    run([sys.executable, os.path.join(HERE, "export_llama.py"), "--out", args.work,
         "-n", str(n), "--prompt", PROMPT] + opts)
    with open(os.path.join(args.work, "reference.json")) as f:
        ref = json.load(f)
    vocab = len(ref["logits"][0])
    gguf = os.path.join(args.work, "model.gguf")

    # torch's greedy tokens as the bytes kiln prints (the prompt first)
    sys.path.insert(0, HERE)
    from gguf_writer import GgufReader
    from spm_vocab import SpmTokenizer
    tok = SpmTokenizer(GgufReader(gguf).kv)
    want = PROMPT.encode() + b"".join(tok.decode_piece(t) for t in ref["generated_ids"]
                                      if t != tok.eos)

    def check(name, model, extra):
        dump = None if args.text_only else os.path.join(args.work, name + ".logits")
        out = kiln_eval(args.kiln, model, extra, n, dump)
        if out.rstrip(b"\n") != want:
            fail(f"{name}: kiln printed {out!r}, torch's greedy tokens read {want!r}")
        print(f"{name}: greedy text equals torch's ({len(ref['generated_ids'])} tokens)")
        if args.text_only:
            print(f"{name}: logits NOT compared (--text-only)")
            return None, out
        rows = read_dump(dump, vocab)
        max_diff(rows, ref["logits"], f"{name} vs torch")
        return rows, out

    g_rows, g_out = check("gguf", gguf, [])
    if stories:
        shared_dump = None if args.text_only else os.path.join(args.work, "shared.logits")
        shared_out = kiln_eval(args.kiln, shared_gguf, [], n, shared_dump)
        if shared_out != g_out:
            fail(f"exported GGUF printed {g_out!r} but stories260K.gguf printed {shared_out!r}")
        print("gguf: text equals kiln's on the shared stories260K.gguf")
        if not args.text_only:
            max_diff(g_rows, read_dump(shared_dump, vocab), "gguf vs stories260K.gguf")
    if args.gguf_only:
        print("PASS (GGUF half only" + (", text only)" if args.text_only else ")"))
        return
    tokenizer = shared_gguf if stories else gguf
    o_rows, o_out = check("onnx", os.path.join(args.work, "model.onnx"), ["--tokenizer", tokenizer])
    if not args.text_only:
        max_diff(o_rows, g_rows, "onnx vs gguf")
    ir_onnx = run([args.kiln, "import", os.path.join(args.work, "model.onnx")]).stdout
    ir_gguf = run([args.kiln, "import", gguf]).stdout
    if ir_onnx != ir_gguf:
        fail("kiln import prints different IR for model.onnx and model.gguf")
    print(f"kiln import: the same IR from model.onnx and model.gguf ({len(ir_onnx)} bytes)")
    if o_out != g_out:
        fail(f"onnx printed {o_out!r} but gguf printed {g_out!r}")
    if stories and args.kiln_run:
        texts = []
        for name, model, extra in (("onnx", os.path.join(args.work, "model.onnx"),
                                    ["--tokenizer", tokenizer]), ("gguf", shared_gguf, [])):
            artifact = os.path.join(args.work, name + ".kiln")
            run([args.kiln, "compile", model, "--weights", "q8_0", "-o", artifact] + extra)
            texts.append(run([args.kiln_run, "generate", artifact, "-p", PROMPT, "-n",
                              str(n)]).stdout)
        if texts[0] != texts[1]:
            fail(f"compiled ONNX printed {texts[0]!r} but compiled GGUF printed {texts[1]!r}")
        print(f"kiln compile: the ONNX and GGUF q8_0 artifacts print the same text under kiln-run")
    print("PASS")


if __name__ == "__main__":
    main()
