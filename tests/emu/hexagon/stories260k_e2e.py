#!/usr/bin/env python3
"""stories260K compiled for Hexagon (`kiln compile --target <chip>:hvx`) and run by a
statically linked kiln-run under qemu-hexagon-static -cpu v67, against the host (x86-64)
artifact of the same weights run natively.

There is no dynamic loader on the DSP side: each program is kiln-run and the freestanding
runtime-min (libkiln_runtime_fs.a, built by CMakeLists.txt) linked with the model's
`kiln compile --emit=obj` object and runtime-min/src/platform/freestanding/linked_model.c
compiled with its header. The program still opens the artifact (tokenizer, config, memory
plan) and checks that it matches the code it links.

Cases:
  greedy      the same greedy text as the host artifact: f32/q8_0/q4_0/q4_1 on the
              hexagon-v67 profile (the emulated version), q8_0/q4_0 as v73 code (phone
              profiles) run with -cpu v67, and Snapdragon 8 Gen 3 q4_0 with every fusion
  ppl-FMT     `kiln-run ppl` on tinystories-dev.txt (--ctx 256) within 0.1% of the host's
              on the same chunks: the first 32 for q8_0/q4_0, 8 for f32 (the whole text,
              196 chunks, takes about 20 minutes per format under qemu-hexagon). The
              quantised artifacts are not bit-identical to the host's (the HVX r16
              kernel applies block scales in another order, and the next layer's int8
              activation quantisation turns last-bit differences into code changes), so
              a short prefix is noisy: q4_0 is 0.13% apart on 8 chunks, 0.01% on 32
  kquants     a synthetic Q4_K_M file compiled by default (--precision source): its
              q4_K/q6_K kept, in r16 groups (HVX has no r32 K form) on the HVX K kernels,
              the same greedy text as the host artifact (x86's and HVX's K kernels give the
              portable code's bits)
  bad-input   a program refuses an artifact compiled with other options, and the host
              artifact (x86 code), with one clear message each
"""
import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from e2e_common import PROMPT, expect_one_error, fail, need, ppl_of, run  # noqa: E402

V67 = "hexagon-v67:hvx"
V73 = "hexagon-v73:hvx"
SD8G3 = "snapdragon-8-gen-3:hvx"
HEX_FLAGS = ["--target=hexagon", "-mhvx", "-mhvx-length=128b", "-G0", "-O2", "-std=c11",
             "-ffreestanding", "-nostdlibinc"]


class Env:
    def __init__(self, a):
        self.a = a
        self.gguf = need(a.models, "stories260K.gguf")
        os.makedirs(a.work, exist_ok=True)

    def compile(self, target, weights, extra=(), emit="artifact", model=None):
        """weights: a --weights format, or a --precision policy (source, lossless)."""
        tag = re.sub(r"[^a-z0-9]+", "-", f"{target}-{weights}-{'-'.join(extra)}")
        name = os.path.splitext(os.path.basename(model or self.gguf))[0]
        out = os.path.join(self.a.work, f"{name}-{tag}.{'o' if emit == 'obj' else 'kiln'}")
        flag = "--precision" if weights in ("source", "lossless") else "--weights"
        run([self.a.kiln, "compile", model or self.gguf, "--target", target, flag, weights,
             "--emit", emit, "-o", out, *extra])
        return out

    def program(self, target, weights, extra=(), model=None):
        """The artifact and a kiln-run executable with its code linked in."""
        art = self.compile(target, weights, extra, model=model)
        obj = self.compile(target, weights, extra, emit="obj", model=model)
        cpu = "v67" if target == V67 else "v73"
        inc = obj[:-2] + ".inc"
        os.makedirs(inc, exist_ok=True)
        shutil.copy(obj[:-2] + ".h", os.path.join(inc, "model.h"))
        src = os.path.join(self.a.src, "runtime-min")
        linked = obj[:-2] + ".linked.o"
        run([self.a.clang, *HEX_FLAGS, f"-mcpu=hexagon{cpu}", "-I", inc,
             "-I", os.path.join(src, "include"), "-I", os.path.join(self.a.libc_include),
             "-c", os.path.join(src, "src", "platform", "freestanding", "linked_model.c"),
             "-o", linked])
        exe = obj[:-2] + ".elf"
        run([self.a.lld, "-static", "-e", "_start", "-u", "main", "-o", exe, obj, linked,
             os.path.join(self.a.lib_dir, cpu, "libkiln_runtime_fs.a")])
        return art, exe

    def host(self, *args):
        return run([self.a.kiln_run, *args])

    def emu(self, exe, *args, expect_ok=True):
        return run([self.a.qemu, "-cpu", "v67", exe, *args], expect_ok)


def greedy(env):
    gen = ["-p", PROMPT, "-n", "48"]
    cases = [(V67, w, ()) for w in ("f32", "q8_0", "q4_0", "q4_1")]
    cases += [(V73, "q8_0", ()), (V73, "q4_0", ()), (SD8G3, "q4_0", ("--fusion", "all"))]
    host_text = {}
    for target, weights, extra in cases:
        key = (weights, extra)
        if key not in host_text:
            host_text[key] = env.host("generate", env.compile("host", weights, extra), *gen,
                                      "--threads", "2").stdout
        art, exe = env.program(target, weights, extra)
        insp = run([env.a.kiln, "inspect", art]).stdout.decode()
        if "(hexagon-unknown-unknown-elf" not in insp:
            fail(f"{art} is not a Hexagon artifact:\n{insp[:400]}")
        got = env.emu(exe, "generate", art, *gen).stdout
        if got != host_text[key]:
            fail(f"{target} {weights} {' '.join(extra)}: Hexagon text differs from the host's\n"
                 f"  host:    {host_text[key]!r}\n  hexagon: {got!r}")
        if len(got.split()) < 20:
            fail(f"too little text generated: {got!r}")
        print(f"ok {target} {weights} {' '.join(extra)}: {got.decode()[:60]!r}...")


def ppl(env, weights):
    text = need(env.a.models, "tinystories-dev.txt")
    args = [text, "--ctx", "256", "--chunks", "8" if weights == "f32" else "32"]
    h = ppl_of(env.host("ppl", env.compile("host", weights, ("--ctx", "256")), *args,
                        "--threads", "2"))
    art, exe = env.program(V67, weights, ("--ctx", "256"))
    e = ppl_of(env.emu(exe, "ppl", art, *args))
    rel = abs(e - h) / h
    print(f"PPL {weights}: host {h:.4f}, Hexagon v67 (qemu) {e:.4f}, relative difference "
          f"{rel:.2e}")
    if rel > 1e-3:
        fail(f"Hexagon PPL {e} is more than 0.1% from the host's {h}")


def kquants(env):
    gguf = os.path.join(env.a.work, "q4_k_m.gguf")
    run([env.a.kiln, "synth", "-o", gguf, "--tied", "--type", "q4_k_m", "--dim", "256",
         "--heads", "4", "--kv-heads", "2", "--layers", "2", "--ffn", "512", "--vocab", "320",
         "--ctx", "256"])
    gen = ["-p", PROMPT, "-n", "24"]
    want = env.host("generate", env.compile("host", "lossless", model=gguf), *gen,
                    "--threads", "2").stdout
    art, exe = env.program(V67, "source", model=gguf)
    insp = run([env.a.kiln, "inspect", art]).stdout.decode()
    if insp.count("q4_K_r16") < 1 or insp.count("q6_K_r16") < 1 or "r16_ops=" not in insp \
            or "requantised from" in insp:
        fail(f"the K-quants are not kept in r16 groups on HVX:\n{insp}")
    got = env.emu(exe, "generate", art, *gen).stdout
    if got != want:
        fail(f"Hexagon q4_k_m: text differs from the host's\n  host:    {want!r}\n"
             f"  hexagon: {got!r}")
    print(f"ok q4_k_m kept on HVX (r16 K groups): {got.decode(errors='replace')[:60]!r}...")


def bad_input(env):
    art, exe = env.program(V67, "q8_0")
    other = env.compile(V67, "q4_0")
    host_art = env.compile("host", "q8_0")
    for p, want in ((env.emu(exe, "generate", other, "-p", PROMPT, expect_ok=False),
                     "was not compiled with this artifact"),
                    (env.emu(exe, "generate", host_art, "-p", PROMPT, expect_ok=False),
                     "the code is for 'x86_64"),
                    (env.emu(exe, "generate", art, "-p", PROMPT, "--threads", "2",
                             expect_ok=False), "no threads"),
                    (run([env.a.kiln_run, "generate", art, "-p", PROMPT], expect_ok=False),
                     "the code is for 'hexagon")):
        expect_one_error(p, want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["greedy", "ppl-f32", "ppl-q8_0", "ppl-q4_0", "kquants",
                                     "bad-input"])
    for flag in ("--kiln", "--kiln-run", "--qemu", "--clang", "--lld", "--lib-dir",
                 "--libc-include", "--src", "--models", "--work"):
        ap.add_argument(flag, required=True)
    a = ap.parse_args()
    a.models = os.environ.get("KILN_MODELS_DIR", a.models)
    env = Env(a)
    if a.case == "greedy":
        greedy(env)
    elif a.case == "bad-input":
        bad_input(env)
    elif a.case == "kquants":
        kquants(env)
    else:
        ppl(env, a.case[len("ppl-"):])
    print("PASS")


if __name__ == "__main__":
    main()
