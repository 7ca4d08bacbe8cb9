#!/usr/bin/env python3
"""End-to-end checks of kiln on the real stories260K model against llama.cpp's numbers.

Usage: stories260k.py CASE --kiln PATH/kiln [--models DIR]
The models directory is $KILN_MODELS_DIR, else --models (CMake passes ../shared/models).
A missing model file is a failure with a message, never a skip.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from e2e_common import PROMPT, fail, need

# llama.cpp's reference values, from ../shared/models/README.md.
GREEDY_TEXT = ("Once upon a time, there was a little girl named Lily. She loved to play outside "
               "in the park. One day, she saw a big, red ball. She wanted to play with it, but "
               "it was too high.\nLily's mom said")
TOP_TOKEN, TOP_LOGIT, TOP_TOL = 432, 17.7994, 0.001
PPL_CASES = {
    # case: (model, text, llama.cpp PPL, relative tolerance)
    "ppl-f32": ("stories260K.gguf", "tinystories-calib.txt", 6.6257, 0.0005),
    "ppl-q8_0": ("stories260K-Q8_0.gguf", "tinystories-calib.txt", 6.6315, 0.001),
    "ppl-q4_0": ("stories260K-Q4_0.gguf", "tinystories-calib.txt", 7.1502, 0.001),
}


def run(cmd):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr.strip()}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["greedy", "top-logit", "static-obj", *PPL_CASES])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--models", default="../shared/models")
    ap.add_argument("--src", help="source root (static-obj: the harness and headers)")
    ap.add_argument("--cc", default="cc", help="C compiler (static-obj)")
    a = ap.parse_args()
    models = os.environ.get("KILN_MODELS_DIR") or a.models

    if a.case == "greedy":
        p = run([a.kiln, "eval", need(models, "stories260K.gguf"), "--prompt", PROMPT,
                 "-n", "64"])
        got = p.stdout[:-1] if p.stdout.endswith("\n") else p.stdout
        if got != GREEDY_TEXT:
            fail(f"greedy text differs from llama.cpp's:\n got: {got!r}\nwant: {GREEDY_TEXT!r}")
        print(f"greedy text matches llama.cpp ({len(got)} bytes)")
    elif a.case == "top-logit":
        p = run([a.kiln, "eval", need(models, "stories260K.gguf"), "--prompt", PROMPT,
                 "-n", "0", "--show-top", "1"])
        m = re.search(r"^\s*(\d+)\s+'.*'\s+(-?[0-9.]+)\s*$", p.stderr, re.M)
        if not m:
            fail(f"no top-logit line in: {p.stderr!r}")
        tok, logit = int(m.group(1)), float(m.group(2))
        print(f"top token {tok} logit {logit:.4f} (llama.cpp: {TOP_TOKEN} {TOP_LOGIT})")
        if tok != TOP_TOKEN or abs(logit - TOP_LOGIT) > TOP_TOL:
            fail(f"want token {TOP_TOKEN} at {TOP_LOGIT} +/- {TOP_TOL}")
    elif a.case == "static-obj":
        # --emit=obj + header, linked statically with a C harness, no runtime, no artifact.
        with tempfile.TemporaryDirectory() as d:
            run([a.kiln, "compile", need(models, "stories260K.gguf"), "--emit=obj",
                 "-o", os.path.join(d, "model.o")])
            exe = os.path.join(d, "harness")
            run([a.cc, "-O2", "-I", os.path.join(a.src, "runtime-min", "include"), "-I", d,
                 os.path.join(a.src, "tests", "e2e", "static_link_example.c"),
                 os.path.join(d, "model.o"), "-o", exe])
            p = run([exe])
        print(p.stdout.strip())
        m = re.search(r"^top (\d+) (-?[0-9.]+)$", p.stdout, re.M)
        if not m or int(m.group(1)) != TOP_TOKEN or abs(float(m.group(2)) - TOP_LOGIT) > TOP_TOL:
            fail(f"statically linked code: want top token {TOP_TOKEN} at {TOP_LOGIT}")
        if "greedy 432 383 286 261 376 298 315 421" not in p.stdout:
            fail("statically linked code: greedy tokens differ from the reference text")
        if "bad token -> -1" not in p.stdout:
            fail("statically linked code ran an out-of-vocabulary token")
    else:
        model, text, want, tol = PPL_CASES[a.case]
        p = run([a.kiln, "ppl", need(models, model), need(models, text), "--ctx", "256"])
        m = re.search(r"PPL = ([0-9.]+)", p.stdout)
        if not m:
            fail(f"no PPL in output: {p.stdout!r}")
        got = float(m.group(1))
        rel = abs(got - want) / want
        print(f"{model}: PPL {got:.4f}, llama.cpp {want:.4f}, relative difference "
              f"{rel * 100:.4f}% (allowed {tol * 100:.2f}%)")
        if rel > tol:
            fail("perplexity outside tolerance")
    print("PASS")


if __name__ == "__main__":
    main()
