#!/usr/bin/env python3
"""stories260K compiled for aarch64 chips (`kiln compile --target <chip>:cpu`) and run by
the cross-built kiln-run under qemu-aarch64-static, against the host (x86-64) artifact of
the same weights run natively.

Cases:
  greedy      the same greedy text as the host artifact, for f32/q8_0/q4_0/q4_1/q3_0/q6_k on the
              generic Armv8.2+dotprod profile and q8_0/q4_0 (+ fused linears) on
              Snapdragon 8 Gen 3 (the i8mm kernel variant)
  ppl-FMT     `kiln-run ppl` on tinystories-dev.txt (--ctx 256) within 0.1% of the host's
  kquants     a synthetic Q4_K_M file kept as q4_K_r16/q6_K_r16 (the NEON integer K kernels)
              on both profiles: the host artifact's greedy text and mean NLL (1e-6)
  bad-target  each runtime refuses the other ISA's artifact with one clear message
  kernels-bitexact  every NEON linear kernel, compiled by clang as in an artifact (dotprod,
              and dotprod + i8mm: the usmmla prefill tiles), gives the generic C kernel's
              results bit for bit (a hash of y's bits and its sum printed by
              tests/bench/ukernel_calls.c), for 1, 4, 5 and 8 tokens and an odd block count
              (the K-quant r16 kernels: also the host x86 kernel's bits);
              and the NEON attention (every KV cache format, head_dim 64, 20 and 8, 1 and 3
              tokens at context 300) gives the host x86 kernel's bits (--host-calls: the
              same driver built for x86-64-v3), so aarch64 and host artifacts attend alike
"""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import PROMPT, expect_one_error, fail, need, ppl_of, run  # noqa: E402

GENERIC = "armv8.2-a+dotprod:cpu"
SD8G3 = "snapdragon-8-gen-3:cpu"


class Env:
    def __init__(self, a):
        self.a = a
        self.gguf = need(a.models, "stories260K.gguf")
        os.makedirs(a.work, exist_ok=True)

    def compile(self, target, weights, extra=()):
        tag = re.sub(r"[^a-z0-9]+", "-", f"{target}-{weights}-{'-'.join(extra)}")
        out = os.path.join(self.a.work, f"stories260K-{tag}.kiln")
        run([self.a.kiln, "compile", self.gguf, "--target", target, "--weights", weights,
             "-o", out, *extra])
        return out

    def host(self, *args):
        return run([self.a.kiln_run, *args])

    def emu_exe(self, exe, *args):
        return run([self.a.qemu, "-L", "/usr/aarch64-linux-gnu", exe, *args])

    def emu(self, *args, expect_ok=True):
        return run([self.a.qemu, "-L", "/usr/aarch64-linux-gnu", self.a.cross_kiln_run, *args],
                   expect_ok)


def greedy(env):
    gen = ["generate", "-p", PROMPT, "-n", "48", "--threads", "2"]
    cases = [(GENERIC, w, ()) for w in ("f32", "q8_0", "q4_0", "q4_1", "q3_0", "q6_k")]
    cases += [(SD8G3, "q8_0", ()), (SD8G3, "q4_0", ()), (SD8G3, "q4_0", ("--fusion", "all"))]
    host_text = {}
    for target, weights, extra in cases:
        key = (weights, extra)
        if key not in host_text:
            host_text[key] = env.host(*gen[:1], env.compile("host", weights, extra), *gen[1:]).stdout
        art = env.compile(target, weights, extra)
        insp = run([env.a.kiln, "inspect", art]).stdout.decode()
        if "(aarch64-unknown-linux-gnu" not in insp:
            fail(f"{art} is not an aarch64 artifact:\n{insp[:400]}")
        got = env.emu(gen[0], art, *gen[1:]).stdout
        if got != host_text[key]:
            fail(f"{target} {weights} {' '.join(extra)}: aarch64 text differs from the host's\n"
                 f"  host:    {host_text[key]!r}\n  aarch64: {got!r}")
        if len(got.split()) < 20:
            fail(f"too little text generated: {got!r}")
        print(f"ok {target} {weights} {' '.join(extra)}: {got.decode()[:60]!r}...")


def ppl(env, weights):
    text = need(env.a.models, "tinystories-dev.txt")
    args = [text, "--ctx", "256", "--threads", "2"]
    h = ppl_of(env.host("ppl", env.compile("host", weights, ("--ctx", "256")), *args))
    e = ppl_of(env.emu("ppl", env.compile(GENERIC, weights, ("--ctx", "256")), *args))
    rel = abs(e - h) / h
    print(f"PPL {weights}: host {h:.4f}, aarch64 (qemu) {e:.4f}, relative difference {rel:.2e}")
    if rel > 1e-3:
        fail(f"aarch64 PPL {e} is more than 0.1% from the host's {h}")


def kquants(env):
    """A synthetic Q4_K_M file (tied q6_K table, q4_K/q6_K layers) compiled as the default
    keeps it (q4_K_r16/q6_K_r16 on the NEON integer kernels) generates the host's text."""
    gguf = os.path.join(env.a.work, "q4_k_m.gguf")
    run([env.a.kiln, "synth", "-o", gguf, "--tied", "--type", "q4_k_m", "--dim", "256",
         "--heads", "4", "--kv-heads", "2", "--layers", "2", "--ffn", "512", "--vocab", "320",
         "--ctx", "256"])
    gen = ["-p", PROMPT, "-n", "24", "--threads", "2"]
    # every position's logits of 4 chunks (prefill tiles): the mean NLL as the host's
    ppl_args = [need(env.a.models, "tinystories-dev.txt"), "--ctx", "64", "--chunks", "4",
                "--threads", "2"]
    texts, nll = {}, {}
    for target in ("host", GENERIC, SD8G3):
        art = os.path.join(env.a.work, f"q4_k_m-{target.replace(':', '-')}.kiln")
        run([env.a.kiln, "compile", gguf, "--target", target, "-o", art, "--quiet"])
        insp = run([env.a.kiln, "inspect", art]).stdout.decode()
        if insp.count("q4_K_r16") < 1 or insp.count("q6_K_r16") < 1 or "requantised from" in insp:
            fail(f"{target}: the K-quants are not kept as q4_K_r16/q6_K_r16:\n{insp}")
        runner = env.host if target == "host" else env.emu
        texts[target] = runner("generate", art, *gen).stdout
        nll[target] = math.log(ppl_of(runner("ppl", art, *ppl_args)))
    for target in (GENERIC, SD8G3):
        if texts[target] != texts["host"]:
            fail(f"{target} q4_k_m: aarch64 text differs from the host's\n"
                 f"  host:    {texts['host']!r}\n  aarch64: {texts[target]!r}")
        # the linear kernels give x86's bits (kernels-bitexact); libm's exp/log may not
        if abs(nll[target] - nll["host"]) > 1e-6 * nll["host"]:
            fail(f"{target} q4_k_m: mean NLL {nll[target]!r}, the host's {nll['host']!r}")
    print(f"ok q4_k_m on NEON K kernels: mean NLL {nll['host']:.9g} on both; text "
          f"{texts['host'].decode(errors='replace')[:40]!r}...")


def bad_target(env):
    host_art = env.compile("host", "q8_0")
    arm_art = env.compile(GENERIC, "q8_0")
    for p, want in ((env.emu("generate", host_art, "-p", PROMPT, expect_ok=False),
                     "the code is for 'x86_64"),
                    (run([env.a.kiln_run, "generate", arm_art, "-p", PROMPT], expect_ok=False),
                     "the code is for 'aarch64")):
        expect_one_error(p, want)


# generic C, the sdot kernels (dotprod) and the usmmla prefill tiles (dotprod + i8mm)
ISAS = ("generic", "neon", "neon-i8mm")


def kernels_bitexact(env):
    bins = os.path.dirname(env.a.cross_kiln_run)
    for fmt in ("q8_0_r16", "q4_0_r16", "q4_1_r16", "q4_K_r16", "q5_K_r16", "q6_K_r16", "f32",
                "f16", "q8_0", "q4_0", "q3_0", "q4_K", "q5_K", "q6_K"):
        # K-quant rows: whole 256-blocks (3 of them in r16: q6_K_r16's odd-count tail)
        width = "768" if fmt.endswith("_K_r16") else "512" if "_K" in fmt else "224"
        for n in ("1", "4", "5", "8"):
            sums = []
            for isa in ISAS:
                p = env.emu_exe(os.path.join(bins, f"ukernel-calls-{isa}"), fmt, "100", width, n)
                sums.append(" ".join(p.stdout.decode().split()[-4:]))  # bits H checksum S
            for isa, s in zip(ISAS[1:], sums[1:]):
                if s != sums[0]:
                    fail(f"{fmt}, {n} tokens: {isa} gives {s}, generic {sums[0]}")
            if fmt.endswith("_K_r16") and env.a.host_calls:  # and x86's integer K kernels
                p = run([env.a.host_calls, fmt, "100", width, n])
                x86 = " ".join(p.stdout.decode().split()[-4:])
                if x86 != sums[0]:
                    fail(f"{fmt}, {n} tokens: x86 gives {x86}, aarch64 {sums[0]}")
            print(f"ok {fmt} n={n}: {sums[0]}")
    if not env.a.host_calls:
        fail("--host-calls (the x86 ukernel-calls driver) is needed for the attention kernels")
    for kv in ("f32", "f16", "i8f16"):
        for d in ("64", "20", "8"):
            for n in ("1", "3"):
                args = (f"attention-{kv}", d, "300", n)
                want = " ".join(run([env.a.host_calls, *args]).stdout.decode().split()[-4:])
                for isa in ("neon", "neon-i8mm"):
                    p = env.emu_exe(os.path.join(bins, f"ukernel-calls-{isa}"), *args)
                    got = " ".join(p.stdout.decode().split()[-4:])
                    if got != want:
                        fail(f"attention {kv} d={d} n={n}: {isa} gives {got}, x86 {want}")
                print(f"ok attention {kv} d={d} n={n}: {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["greedy", "ppl-f32", "ppl-q8_0", "ppl-q4_0", "bad-target",
                                     "kernels-bitexact", "kquants"])
    for flag in ("--kiln", "--kiln-run", "--cross-kiln-run", "--qemu", "--models", "--work"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--host-calls", help="tests/bench/ukernel_calls.c built for the host")
    a = ap.parse_args()
    a.models = os.environ.get("KILN_MODELS_DIR", a.models)
    env = Env(a)
    if a.case == "greedy":
        greedy(env)
    elif a.case == "bad-target":
        bad_target(env)
    elif a.case == "kernels-bitexact":
        kernels_bitexact(env)
    elif a.case == "kquants":
        kquants(env)
    else:
        ppl(env, a.case[len("ppl-"):])
    print("PASS")


if __name__ == "__main__":
    main()
