#!/usr/bin/env python3
"""End-to-end checks of runtime-min (kiln-run and the embedding example) on artifacts that
`kiln compile` makes from the real stories260K model, against the reference executor.

Usage: kiln_run.py CASE --kiln PATH --kiln-run PATH --embed PATH --work DIR [--models DIR]
The models directory is $KILN_MODELS_DIR, else --models (CMake passes ../shared/models).
A missing model file is a failure with a message, never a skip.

Cases:
  generate-f32   `kiln-run generate` prints exactly the text `kiln eval` prints, with the
                 weights mapped and read into 2 MiB pages; a bad `--weights` is refused
  ppl-f32        `kiln-run ppl --ctx 256` equals `kiln ppl --ctx 256` within 0.1%
  ppl-q8_0       a q8_0 artifact's PPL is within 0.5% of the f32 reference PPL
  embed-example  tests/e2e/embed_example.c (the program in docs/runtime-api.md, checked to be
                 the same text) prints what `kiln-run generate -n 16` prints
  bench          `kiln-run bench` runs and reports every number, with the weights mapped
                 and read into 2 MiB pages
  fusion         artifacts compiled with `--fusion all` and `--fusion none` print
                 exactly the text `kiln eval` prints; `kiln inspect` lists each fusion and
                 its count; a bad `--fusion` is refused with one line
  ppl-kv-split   an int8 K / f16 V cache costs at most 0.3% PPL against an f32 cache on
                 tinystories-dev.txt (--ctx 256), and `kiln inspect` reports each
                 cache's bytes per token as the layout formula gives them
  source-formats llama.cpp's Q4_0 and Q8_0 files compiled with no --weights keep their
                 formats (`kiln inspect`: every tensor lossless, the Q4_0 file's f32
                 ffn_down stays f32), also the Q4_0 file with --fusion all (q/k/v and
                 gate/up stacked from the file's blocks), and each artifact's PPL is
                 llama.cpp's within 0.3%
"""
import argparse
import os
import re
import subprocess
import sys

from e2e_common import PROMPT, fail, need

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()}")
    sys.stdout.write(p.stderr.decode(errors="replace"))
    return p


def compile_model(a, gguf, weights, ctx=None, fusion=None, extra=()):
    os.makedirs(a.work, exist_ok=True)
    tag = re.sub(r"[^A-Za-z0-9_.]+", "_", "-".join(extra))
    out = os.path.join(a.work, f"stories260K-{weights}-{ctx or 'default'}-{fusion or 'rope'}"
                               f"{'-' + tag if tag else ''}.kiln")
    cmd = [a.kiln, "compile", gguf, "--target", "host", "--weights", weights, "-o", out]
    if ctx:
        cmd += ["--ctx", str(ctx)]
    if fusion:
        cmd += ["--fusion", fusion]
    run(cmd + list(extra))
    return out


def ppl_of(p):
    m = re.search(rb"PPL = ([0-9.]+)", p.stdout)
    if not m:
        fail(f"no PPL in output: {p.stdout!r}")
    return float(m.group(1))


def check_docs_example():
    """docs/runtime-api.md must show embed_example.c verbatim."""
    with open(os.path.join(HERE, "embed_example.c")) as f:
        src = f.read()
    with open(os.path.join(HERE, "..", "..", "docs", "runtime-api.md")) as f:
        doc = f.read()
    if src.strip() not in doc:
        fail("docs/runtime-api.md does not show tests/e2e/embed_example.c verbatim; "
             "copy the file into the doc's example block")


def kv_bytes_per_token(inspect):
    m = re.search(rb"^kv cache: \S+, ([0-9]+) bytes per token$", inspect, re.M)
    if not m:
        fail(f"kiln inspect prints no KV bytes per token:\n{inspect.decode()}")
    return int(m.group(1))


def ppl_kv_split(a, gguf, dev):
    # stories260K: 5 layers, 4 KV heads of 8: f32 K and V 5*32*(4+4) = 1280 bytes a token;
    # int8 K (+ a 4-byte scale per head) and f16 V 5*(32*(1+2)+4*4) = 560
    results = {}
    for kv, want_bytes in (("f32", 1280), ("k=int8,v=f16", 560)):
        art = compile_model(a, gguf, "f32", 256, extra=["--kv", kv])
        got_bytes = kv_bytes_per_token(run([a.kiln, "inspect", art]).stdout)
        if got_bytes != want_bytes:
            fail(f"--kv {kv}: kiln inspect says {got_bytes} bytes per token, the layout "
                 f"{want_bytes}")
        results[kv] = ppl_of(run([a.kiln_run, "ppl", art, dev, "--ctx", "256",
                                  "--threads", "2"]))
        print(f"--kv {kv}: PPL {results[kv]:.4f}, {got_bytes} KV bytes per token")
    rel = results["k=int8,v=f16"] / results["f32"] - 1
    print(f"split cache against f32: {rel * 100:+.4f}% (allowed +0.3%)")
    if rel > 0.003:
        fail("the int8 K / f16 V cache costs more than 0.3% PPL")


# llama.cpp's PPLs of its own files (../shared/models/README.md; tests/e2e/stories260k.py)
SOURCE_FILES = [("stories260K-Q4_0.gguf", "q4_0", 7.1502, []),
                ("stories260K-Q8_0.gguf", "q8_0", 6.6315, []),
                ("stories260K-Q4_0.gguf", "q4_0", 7.1502, ["--fusion", "all"])]


def source_formats(a, models, calib):
    os.makedirs(a.work, exist_ok=True)
    for name, fmt, want, extra in SOURCE_FILES:
        art = os.path.join(a.work, name.replace(".gguf", "-".join([""] + extra) + ".kiln"))
        log = run([a.kiln, "compile", need(models, name), "--target", "host", "--ctx", "256",
                   "-o", art] + extra).stderr.decode()
        if "weights source (" not in log:
            fail(f"the compile log does not say the weights kept their source formats: {log!r}")
        inspect = run([a.kiln, "inspect", art]).stdout.decode()
        rows = re.findall(r"^  (\S+)\s+(\S+)\s+\[.*\](?:\s+\d+){5}\s+(.+)$", inspect, re.M)
        tensors = [r for r in rows if not r[0].startswith("rope.")]
        stacked = [r for r in tensors if r[0].startswith(("fused_rows(", "interleaved_rows("))]
        if extra and not stacked:
            fail(f"{name} {extra}: no stacked q/k/v or gate/up tensor in:\n{inspect}")
        if len(tensors) < (25 if extra else 40):
            fail(f"{name}: kiln inspect lists {len(tensors)} tensors:\n{inspect}")
        in_format = 0
        for tensor, stored, source in tensors:
            if source != "lossless":
                fail(f"{name}: {tensor} is stored {stored}, '{source}', not as the file has it")
            in_format += stored.split("_r")[0] == fmt
        # stories260K-Q4_0: llama.cpp keeps the 172-wide ffn_down f32 and the output q8_0
        print(f"{name} {' '.join(extra)}: all {len(tensors)} tensors lossless, {in_format} of "
              f"them {fmt}")
        if in_format < (15 if extra else 30):
            fail(f"{name}: only {in_format} tensors are {fmt}")
        got = ppl_of(run([a.kiln_run, "ppl", art, calib, "--ctx", "256", "--threads", "2"]))
        rel = abs(got - want) / want
        print(f"{name}: artifact PPL {got:.4f}, llama.cpp {want:.4f}, {rel * 100:.4f}% apart "
              f"(allowed 0.3%)")
        if rel > 0.003:
            fail("the artifact's PPL is more than 0.3% from llama.cpp's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["generate-f32", "generate-kv-split", "generate-no-fuse",
                                     "ppl-f32", "ppl-q8_0", "embed-example", "bench", "fusion",
                                     "ppl-kv-split", "source-formats"])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--kiln-run", dest="kiln_run", required=True)
    ap.add_argument("--embed", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default="../shared/models")
    a = ap.parse_args()
    models = os.environ.get("KILN_MODELS_DIR") or a.models
    gguf = need(models, "stories260K.gguf")

    if a.case == "generate-f32":
        art = compile_model(a, gguf, "f32")
        want = run([a.kiln, "eval", gguf, "--prompt", PROMPT, "-n", "64"]).stdout
        for weights in ("map", "huge"):
            got = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "64", "--threads", "2",
                       "--weights", weights]).stdout
            if got != want:
                fail(f"kiln-run --weights {weights}: text differs from kiln eval's:\n"
                     f" got: {got!r}\nwant: {want!r}")
            print(f"kiln-run generate --weights {weights} matches kiln eval ({len(got)} bytes)")
        p = subprocess.run([a.kiln_run, "generate", art, "-p", PROMPT, "--weights", "paged"],
                           capture_output=True)
        err = p.stderr.decode()
        if p.returncode == 0 or err.strip().count("\n") != 0 or "'map' or 'huge'" not in err:
            fail(f"--weights paged: exit {p.returncode}, stderr {err!r}")
        print(f"bad flag refused: {err.strip()}")
    elif a.case in ("generate-kv-split", "generate-no-fuse"):
        # int8 K / f16 V cache (the reference rounds the same way), or RoPE left unfused
        kv = ["--kv", "k=int8,v=f16"] if a.case == "generate-kv-split" else []
        fuse = ["--fusion", "none"] if a.case == "generate-no-fuse" else []
        art = compile_model(a, gguf, "f32", extra=kv + fuse)
        want = run([a.kiln, "eval", gguf, "--prompt", PROMPT, "-n", "64"] + kv).stdout
        got = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "64", "--threads", "2"]).stdout
        if got != want:
            fail(f"kiln-run text differs from kiln eval's:\n got: {got!r}\nwant: {want!r}")
        print(f"kiln-run generate ({a.case}) matches kiln eval ({len(got)} bytes)")
    elif a.case in ("ppl-f32", "ppl-q8_0"):
        text = need(models, "tinystories-calib.txt")
        weights = a.case.split("-")[1]
        art = compile_model(a, gguf, weights, 256)
        ref = ppl_of(run([a.kiln, "ppl", gguf, text, "--ctx", "256"]))
        got = ppl_of(run([a.kiln_run, "ppl", art, text, "--ctx", "256", "--threads", "2"]))
        tol = 0.001 if weights == "f32" else 0.005
        rel = abs(got - ref) / ref
        print(f"{weights} artifact: PPL {got:.4f}, reference executor (f32) {ref:.4f}, "
              f"relative difference {rel * 100:.4f}% (allowed {tol * 100:.1f}%)")
        if rel > tol:
            fail("perplexity outside tolerance")
    elif a.case == "ppl-kv-split":
        ppl_kv_split(a, gguf, need(models, "tinystories-dev.txt"))
    elif a.case == "source-formats":
        source_formats(a, models, need(models, "tinystories-calib.txt"))
    elif a.case == "embed-example":
        check_docs_example()
        art = compile_model(a, gguf, "f32")
        want = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "16"]).stdout
        got = run([a.embed, art, PROMPT]).stdout
        if got != want:
            fail(f"embedding example prints {got!r}, kiln-run prints {want!r}")
        print(f"embedding example: {got.decode(errors='replace')!r}")
    elif a.case == "fusion":
        want = run([a.kiln, "eval", gguf, "--prompt", PROMPT, "-n", "64"]).stdout
        for fusion in ("all", "none", "qkv,residual"):
            art = compile_model(a, gguf, "f32", fusion=fusion)
            got = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "64"]).stdout
            if got != want:
                fail(f"--fusion {fusion}: kiln-run text differs from kiln eval's:\n"
                     f" got: {got!r}\nwant: {want!r}")
            print(f"--fusion {fusion}: same text as kiln eval")
        # stories260K: 5 layers; 11 norms (2 per layer + the output norm) all feed linears.
        inspect = run([a.kiln, "inspect", compile_model(a, gguf, "f32", fusion="all")]).stdout.decode()
        for name, count in (("kiln-fold-norm-into-linear", 11), ("kiln-fuse-swiglu", 5),
                            ("kiln-fuse-qkv", 5), ("kiln-fuse-residual-add", 10)):
            if not re.search(rf"^  {name} \[fusion=all\] fused={count}$", inspect, re.M):
                fail(f"kiln inspect does not list {name} with fused={count}:\n{inspect}")
        if not re.search(r"^  kiln-fuse-rope-into-attention \[fusion=all\] fused=5,skipped=0$",
                         inspect, re.M):
            fail(f"kiln inspect does not list the 5 RoPE fusions:\n{inspect}")
        none = run([a.kiln, "inspect", compile_model(a, gguf, "f32", fusion="none")]).stdout
        if b"kiln-fuse" in none or b"kiln-fold" in none:
            fail("--fusion none still lists a fusion")
        p = subprocess.run([a.kiln, "compile", gguf, "-o", os.path.join(a.work, "bad.kiln"),
                            "--fusion", "qkv,ropes"], capture_output=True)
        err = p.stderr.decode()
        if p.returncode == 0 or err.strip().count("\n") != 0 or "unknown fusion 'ropes'" not in err:
            fail(f"--fusion qkv,ropes: exit {p.returncode}, stderr {err!r}")
        print(f"bad flag refused: {err.strip()}")
    else:
        art = compile_model(a, gguf, "q8_0")
        for weights in ("map", "huge"):
            p = run([a.kiln_run, "bench", art, "-p", "32", "-n", "32", "-r", "3", "--threads", "2",
                     "--weights", weights])
            out = p.stdout.decode()
            print(out)
            for key in ("prefill", "decode", "TTFT", "effective", "read bandwidth",
                        "of bandwidth", "peak read", "of peak read", "compute probe",
                        "weights/token", "KV/token", "peak memory", "cpu stolen", "cpu others",
                        "in 2 MiB pages"):
                if not re.search(rf"^{re.escape(key)}\s+[0-9.]+", out, re.M):
                    fail(f"bench --weights {weights} output lacks '{key}'")
            # the read's whole window can be no faster than its best pass
            read = float(re.search(r"^read bandwidth\s+([0-9.]+)", out, re.M).group(1))
            peak = float(re.search(r"^peak read\s+([0-9.]+)", out, re.M).group(1))
            if not 0 < read <= peak:
                fail(f"bench --weights {weights}: read bandwidth {read} GB/s, peak read {peak}")
            gflops = float(re.search(r"^compute probe\s+([0-9.]+)", out, re.M).group(1))
            if gflops <= 0:
                fail(f"bench --weights {weights}: compute probe of {gflops} GFLOP/s")
            holder = "copy" if weights == "huge" else "file mapping"
            if not re.search(rf"^in 2 MiB pages .*the [0-9.]+ MiB {holder} that holds", out, re.M):
                fail(f"bench --weights {weights} does not say the weights are in a {holder}")
    print("PASS")


if __name__ == "__main__":
    main()
