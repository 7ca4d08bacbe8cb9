#!/usr/bin/env python3
"""stories260K compiled for `host+vulkan`, run on Mesa's lavapipe with the validation layer
against the same artifact's CPU code (docs/vulkan.md, "Tests").

Usage: stories260k_vulkan.py CASE --kiln PATH --kiln-run PATH --work DIR [--models DIR]
The models directory is $KILN_MODELS_DIR, else --models. ctest sets VK_ICD_FILENAMES to
lavapipe's ICD.

Cases:
  generate-FMT  (f32, f16, q8_0, q4_0) greedy text of three prompts, 48 tokens, identical on
                `--backend vulkan` and `--backend cpu`; the validation layer reports 0
                messages (KILN_VULKAN_VALIDATION=1)
  ppl-FMT       `kiln-run ppl` on the first 12 chunks of tinystories-dev.txt (--ctx 128):
                vulkan within 0.1% of cpu, 0 validation messages
  fallback-FMT  the device told to lack subgroup arithmetic (KILN_VULKAN_MASK): the ops
                whose kernels need it (decode's linear, rms_norm, attention) run on the
                CPU through the artifact's per-op entries, the others on the GPU; kiln-run
                says which and why; greedy text identical to the CPU's, PPL within 0.1%
  dot-FMT       (q8_0, q4_0) linear_dot, linear's integer-dot variant, forced on lavapipe
                (KILN_VULKAN_PREFER=variants: its dot products are not accelerated): every
                token of 12 chunks scored as a decode step (`ppl --batch 1`), within 0.1%
                of the CPU (6 chunks gave q8_0 +0.11%: too few for this bound);
                kiln-run names the variant; 0 validation messages
  f16-FMT       (f32, q4_0) matmul_f16, matmul's fp16 variant, forced on lavapipe (a CPU
                device, where the placement does not take it): prefill PPL as ppl-FMT,
                within 0.1% of the CPU; kiln-run names the variant
  cpu-ops       ops the Vulkan lowering lacks (`--fusion all`'s fused linears, `--kv
                k=int8,v=f16`'s attention) compiled for the CPU only: kiln compile's remark
                says which and why, kiln-run's placement counts them on the CPU, and the
                text is the CPU artifact's; 0 validation messages
  q4_k_m        a synthetic Q4_K_M GGUF (`kiln synth`) compiled for host+vulkan: its
                q4_K/q6_K kept as the file stores them (inspect: lossless, no requantised
                remark), every op on the GPU, the text identical on both backends, 0
                validation messages
  backends      `kiln inspect` lists the gpu section; an artifact without one: `--backend
                vulkan` is one error naming why, `--backend auto` falls back to the CPU
                and says so, `--backend bogus` is refused; a corrupted GPU section is a
                checksum error at open; a module replacing tensors is refused on vulkan;
                `kiln-run bench --backend vulkan` prints the GPU profile
  windows       weights larger than one binding may span (KILN_VULKAN_MAX_RANGE): each
                dispatch binds the window it reads and the text is the CPU's; an op whose
                weights do not fit one binding runs on the CPU; another buffer past the
                limit is one error naming it; 0 validation messages
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import fail, need  # noqa: E402

PROMPTS = ["Once upon a time", "The little dog", "Tom and Sue went"]


def run(cmd, env=None, expect_ok=True):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, env=env)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if expect_ok and p.returncode != 0:
        fail(f"exit {p.returncode}: {err.strip()}")
    return p.returncode, out, err


def vulkan_env(mask=None, prefer=None):
    env = dict(os.environ)
    env["KILN_VULKAN_VALIDATION"] = "1"
    env["MESA_SHADER_CACHE_DISABLE"] = "true"
    if mask:
        env["KILN_VULKAN_MASK"] = mask
    if prefer:
        env["KILN_VULKAN_PREFER"] = prefer
    return env


def check_validation(err):
    m = re.search(r"vulkan: validation layer: (\d+) messages(.*)", err)
    if not m:
        fail(f"no validation-layer count in the output:\n{err}")
    if m.group(1) != "0":
        fail(f"the validation layer reported {m.group(1)} messages{m.group(2)}")


def compile_model(a, fmt, target="host+vulkan"):
    os.makedirs(a.work, exist_ok=True)
    out = os.path.join(a.work, f"stories260K-{fmt}-{target.replace('+', '_')}.kiln")
    run([a.kiln, "compile", need(a.models, "stories260K.gguf"), "--target", target,
         "--weights", fmt, "-o", out])
    return out


def placement(err):
    m = re.search(r"kiln-run: backend vulkan \(.*\): (decode: .*)", err)
    if not m:
        fail(f"kiln-run did not say where the ops ran:\n{err}")
    print("placement: " + m.group(1))
    return m.group(1)


def generate(a, art, fmt, mask=None):
    for prompt in PROMPTS:
        cmd = [a.kiln_run, "generate", art, "-p", prompt, "-n", "48"]
        _, cpu, _ = run(cmd + ["--backend", "cpu"])
        _, gpu, err = run(cmd + ["--backend", "vulkan"], env=vulkan_env(mask))
        check_validation(err)
        where = placement(err)
        split = "on the CPU (the device has no subgroup arithmetic)" in where
        if split != bool(mask) or (mask and not re.search(r"prefill: \d+ of \d+ ops", where)):
            fail(f"placement {'without' if mask else 'with'} the mask: {where}")
        if cpu != gpu:
            fail(f"{fmt} '{prompt}': vulkan's text differs from the CPU's:\ncpu:    {cpu!r}\n"
                 f"vulkan: {gpu!r}")
        print(f"{fmt} '{prompt}': identical ({len(cpu)} characters)")


def ppl_of(out):
    m = re.search(r"PPL = ([0-9.]+)", out)
    if not m:
        fail(f"no PPL in:\n{out}")
    return float(m.group(1))


def ppl(a, art, fmt, mask=None, prefer=None):
    text = need(a.models, "tinystories-dev.txt")
    cmd = [a.kiln_run, "ppl", art, text, "--ctx", "128", "--chunks", "12"]
    _, cpu, _ = run(cmd + ["--backend", "cpu"])
    _, gpu, err = run(cmd + ["--backend", "vulkan"], env=vulkan_env(mask, prefer))
    check_validation(err)
    if prefer and "matmul as matmul_f16" not in placement(err):
        fail(f"{fmt}: KILN_VULKAN_PREFER={prefer} did not take matmul_f16:\n{err}")
    p_cpu, p_gpu = ppl_of(cpu), ppl_of(gpu)
    rel = abs(p_gpu - p_cpu) / p_cpu
    print(f"{fmt}: PPL cpu {p_cpu:.4f}, vulkan {p_gpu:.4f}, relative difference {rel:.2e}")
    if rel > 1e-3:
        fail(f"{fmt}: vulkan's PPL {p_gpu} is more than 0.1% from the CPU's {p_cpu}")


def dot(a, art, fmt):
    text = need(a.models, "tinystories-dev.txt")
    cmd = [a.kiln_run, "ppl", art, text, "--ctx", "128", "--chunks", "12", "--batch", "1"]
    _, cpu, _ = run(cmd + ["--backend", "cpu"])
    _, gpu, err = run(cmd + ["--backend", "vulkan"], env=vulkan_env(prefer="variants"))
    check_validation(err)
    if "linear as linear_dot" not in placement(err):
        fail(f"{fmt}: KILN_VULKAN_PREFER=variants did not take linear_dot:\n{err}")
    p_cpu, p_gpu = ppl_of(cpu), ppl_of(gpu)
    rel = abs(p_gpu - p_cpu) / p_cpu
    print(f"{fmt}: decode-step PPL cpu {p_cpu:.4f}, vulkan linear_dot {p_gpu:.4f}, "
          f"relative difference {rel:.2e}")
    if rel > 1e-3:
        fail(f"{fmt}: linear_dot's PPL {p_gpu} is more than 0.1% from the CPU's {p_cpu}")


def cpu_ops(a):
    gguf = need(a.models, "stories260K.gguf")
    os.makedirs(a.work, exist_ok=True)
    for flags, ops, why in [(["--fusion", "all"], 20, "no Vulkan lowering for kiln.fused_linear"),
                            (["--kv", "k=int8,v=f16"], 5, "K kept as int8")]:
        art = os.path.join(a.work, "cpu-ops-" + flags[0].strip("-") + ".kiln")
        _, _, err = run([a.kiln, "compile", gguf, "--target", "host+vulkan", "--weights", "q8_0",
                         "-o", art] + flags)
        if f"{ops} ops compiled for the CPU only" not in err or why not in err:
            fail(f"{flags}: expected a remark on {ops} CPU-only ops ({why}):\n{err}")
        for prompt in PROMPTS[:2]:
            cmd = [a.kiln_run, "generate", art, "-p", prompt, "-n", "32"]
            _, cpu, _ = run(cmd + ["--backend", "cpu"])
            _, gpu, err = run(cmd + ["--backend", "vulkan"], env=vulkan_env())
            check_validation(err)
            if f"{ops} on the CPU (compiled for the CPU only" not in placement(err):
                fail(f"{flags}: kiln-run does not place {ops} ops on the CPU:\n{err}")
            if cpu != gpu:
                fail(f"{flags} '{prompt}': the text differs:\ncpu:    {cpu!r}\nvulkan: {gpu!r}")
        print(f"{' '.join(flags)}: {ops} ops on the CPU only, text identical")


def q4_k_m(a):
    os.makedirs(a.work, exist_ok=True)
    gguf = os.path.join(a.work, "q4km.gguf")
    art = os.path.join(a.work, "q4km.kiln")
    run([a.kiln, "synth", "--type", "q4_k_m", "--dim", "256", "--heads", "4", "--kv-heads", "2",
         "--layers", "2", "--ffn", "512", "--vocab", "320", "-o", gguf])
    _, _, err = run([a.kiln, "compile", gguf, "--target", "host+vulkan", "--ctx", "128",
                     "-o", art])
    _, shown, _ = run([a.kiln, "inspect", art])
    kept = re.findall(r"^\s+\S+\.weight\s+(q4_K|q6_K)\s.*lossless$", shown, re.M)
    if "requantised" in err or len(kept) < 10 or "q6_K" not in kept:
        fail(f"the Q4_K_M file's K-quants were not kept for the GPU:\n{err}\n{shown}")
    cmd = [a.kiln_run, "generate", art, "-p", "hello", "-n", "24"]
    _, cpu, _ = run(cmd + ["--backend", "cpu"])
    _, gpu, err = run(cmd + ["--backend", "vulkan"], env=vulkan_env())
    check_validation(err)
    if not re.match(r"decode: (\d+) of \1 ops on the GPU", placement(err)):
        fail(f"Q4_K_M on vulkan: not every op ran on the GPU:\n{err}")
    if cpu != gpu:
        fail(f"Q4_K_M on vulkan: the text differs:\ncpu:    {cpu!r}\nvulkan: {gpu!r}")
    print(f"q4_k_m: identical ({len(cpu)} bytes)")


def backends(a):
    gpu_art = compile_model(a, "q8_0")
    _, out, _ = run([a.kiln, "inspect", gpu_art])
    if not re.search(r"^\s+gpu\s+offset.*ok$", out, re.M):
        fail(f"kiln inspect lists no checked gpu section:\n{out}")
    # inspect's placement, made without a device, is the one the runtime makes on one: with
    # subgroup arithmetic masked, the text is kiln-run's word for word.
    shown = re.search(r"placement on a device without it: (.*)", out)
    _, _, err = run([a.kiln_run, "generate", gpu_art, "-p", PROMPTS[0], "-n", "1", "--backend",
                     "vulkan"], env=vulkan_env("subgroup-arithmetic"))
    if not shown or shown.group(1) != placement(err):
        fail(f"kiln inspect's placement differs from the runtime's:\n{out}\n{err}")
    if "placement on a device with subgroup arithmetic: decode: 73 of 73 ops on the GPU" not in out:
        fail(f"kiln inspect does not place every op on a full device:\n{out}")
    # bench on the GPU: per-kernel GPU time, dispatches and barriers per decoded token.
    _, _, err = run([a.kiln_run, "bench", gpu_art, "-p", "8", "-n", "4", "-r", "1", "--backend",
                     "vulkan"], env=vulkan_env())
    m = re.search(r"per decoded token ([0-9.]+) dispatches, ([0-9.]+) barriers, (\d+) weight "
                  r"bytes read", err)
    if not m or float(m.group(1)) < 1 or not re.search(r"vulkan profile: linear +\d+ "
                                                      r"dispatches +[0-9.]+ ms GPU", err):
        fail(f"kiln-run bench --backend vulkan printed no GPU profile:\n{err}")
    print(f"bench: {m.group(1)} dispatches and {m.group(2)} barriers per decoded token, "
          f"{m.group(3)} weight bytes")
    # `kiln predict --engine gpu` counts the lowering's dispatches without compiling: it must
    # count what the GPU ran (stories260K: dim 64, 5 layers, 8/4 heads, ffn 172, vocab 512).
    _, pred, _ = run([a.kiln, "predict", "--dim", "64", "--layers", "5", "--heads", "8",
                      "--kv-heads", "4", "--ffn", "172", "--vocab", "512", "--weights", "q8_0",
                      "--chip", "snapdragon-8-gen-3:gpu"])
    p = re.search(r"dispatches +(\d+) a pass", pred)
    if not p or int(p.group(1)) != round(float(m.group(1))):
        fail(f"kiln predict counts {p and p.group(1)} dispatches a pass, the GPU ran "
             f"{m.group(1)}:\n{pred}")
    cpu_art = compile_model(a, "q8_0", target="host")
    gen = [a.kiln_run, "generate", cpu_art, "-p", PROMPTS[0], "-n", "8"]
    rc, _, err = run(gen + ["--backend", "vulkan"], env=vulkan_env(), expect_ok=False)
    if rc == 0 or "no GPU program" not in err or len(err.strip().splitlines()) != 1:
        fail(f"--backend vulkan on a CPU-only artifact: exit {rc}, expected one error line "
             f"naming the missing GPU program:\n{err}")
    rc, out, err = run(gen + ["--backend", "auto"], env=vulkan_env())
    if "every op on the CPU" not in err or not out.strip():
        fail(f"--backend auto did not fall back to the CPU with a reason:\n{err}")
    rc, _, err = run(gen + ["--backend", "bogus"], expect_ok=False)
    if rc == 0 or "--backend expects cpu, vulkan or auto" not in err:
        fail(f"--backend bogus: exit {rc}:\n{err}")
    # A device lost mid-generation (the 3rd submit, injected as a driver reports it): one
    # error line naming it and a non-zero exit, not a crash or made-up text.
    env = vulkan_env()
    env["KILN_VULKAN_FAULT"] = "device-lost:3"
    rc, out_lost, err = run([a.kiln_run, "generate", gpu_art, "-p", PROMPTS[0], "-n", "8",
                             "--backend", "vulkan"], env=env, expect_ok=False)
    errors = [l for l in err.splitlines() if "error" in l]
    if rc in (0, -11, -6) or len(errors) != 1 or "device lost" not in errors[0]:
        fail(f"a lost device: exit {rc}, expected one error line naming it:\n{err}")
    # One byte of the GPU section flipped: the section's checksum refuses the file.
    m = re.search(r"^\s+gpu\s+offset\s+(\d+)\s+size\s+(\d+)", out and run(
        [a.kiln, "inspect", gpu_art])[1], re.M)
    data = bytearray(open(gpu_art, "rb").read())
    data[int(m.group(1)) + int(m.group(2)) // 2] ^= 0x40
    bad = os.path.join(a.work, "corrupt-gpu.kiln")
    open(bad, "wb").write(bytes(data))
    rc, _, err = run([a.kiln_run, "generate", bad, "-p", "x", "-n", "1", "--backend", "vulkan"],
                     env=vulkan_env(), expect_ok=False)
    if rc == 0 or "(gpu): checksum mismatch" not in err:
        fail(f"a corrupted gpu section: exit {rc}:\n{err}")
    # A module that replaces tensors is refused on the GPU (its weights are a copy there).
    gguf = need(a.models, "stories260K.gguf")
    lora = os.path.join(a.work, "adapter.gguf")
    run([a.kiln, "synth-adapter", gguf, "-o", lora, "--rank", "2"])
    mod = os.path.join(a.work, "adapter.kiln")
    run([a.kiln, "compile", gguf, "--target", "host+vulkan", "--weights", "q8_0", "--adapter",
         lora, "--base", gpu_art, "-o", mod])
    rc, _, err = run([a.kiln_run, "generate", gpu_art, "-p", "x", "-n", "1", "--backend",
                      "vulkan", "--module", mod], env=vulkan_env(), expect_ok=False)
    if rc == 0 or "not applied on backend vulkan" not in err:
        fail(f"a tensor module on the vulkan backend: exit {rc}:\n{err}")
    print("backends: inspect and its placement, refusal, fallback, device lost, corruption and modules as expected")


def windows(a):
    """Weights larger than one binding may span (maxStorageBufferRange, 128 MiB on some
    phone drivers), simulated by KILN_VULKAN_MAX_RANGE below the 1.18 MB of f32 weights."""
    os.makedirs(a.work, exist_ok=True)
    art = os.path.join(a.work, "f32-ctx32.kiln")
    run([a.kiln, "compile", need(a.models, "stories260K.gguf"), "--target", "host+vulkan",
         "--weights", "f32", "--ctx", "32", "-o", art])
    cmd = [a.kiln_run, "generate", art, "-p", PROMPTS[0], "-n", "24"]
    _, cpu, _ = run(cmd + ["--backend", "cpu"])
    # 600,000: every dispatch's window fits, every op on the GPU; 100,000: the 131,072-byte
    # token_embd does not, so embed and the tied logits run on the CPU.
    for limit, expect in (("600000", r"decode: 73 of 73 ops on the GPU; "),
                          ("100000", r"decode: 71 of 73 ops on the GPU, 2 on the CPU \(one "
                                     r"dispatch's weights exceed the 100000 bytes")):
        env = vulkan_env()
        env["KILN_VULKAN_MAX_RANGE"] = limit
        _, gpu, err = run(cmd + ["--backend", "vulkan"], env=env)
        check_validation(err)
        if not re.match(expect, placement(err)):
            fail(f"max range {limit}: expected the placement /{expect}/:\n{err}")
        if cpu != gpu:
            fail(f"max range {limit}: the text differs:\ncpu:    {cpu!r}\nvulkan: {gpu!r}")
    # A buffer bound whole (the 74,240-byte scratch) past the limit is one error naming it.
    env = vulkan_env()
    env["KILN_VULKAN_MAX_RANGE"] = "50000"
    rc, _, err = run(cmd + ["--backend", "vulkan"], env=env, expect_ok=False)
    if rc == 0 or "vulkan: the scratch is 74240 bytes, more than the 50000" not in err:
        fail(f"a scratch larger than a binding: exit {rc}:\n{err}")
    print("windows: text identical with the weights in windows, oversized ops on the CPU")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--kiln-run", dest="kiln_run", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default="")
    a = ap.parse_args()
    a.models = os.environ.get("KILN_MODELS_DIR") or a.models
    kind, _, fmt = a.case.partition("-")
    if kind == "generate":
        generate(a, compile_model(a, fmt), fmt)
    elif kind == "ppl":
        ppl(a, compile_model(a, fmt), fmt)
    elif kind == "fallback":
        art = compile_model(a, fmt)
        generate(a, art, fmt, mask="subgroup-arithmetic")
        ppl(a, art, fmt, mask="subgroup-arithmetic")
    elif kind == "f16":
        ppl(a, compile_model(a, fmt), fmt, prefer="variants")
    elif kind == "dot":
        dot(a, compile_model(a, fmt), fmt)
    elif a.case == "cpu-ops":
        cpu_ops(a)
    elif a.case == "q4_k_m":
        q4_k_m(a)
    elif a.case == "windows":
        windows(a)
    elif a.case == "backends":
        backends(a)
    else:
        fail(f"unknown case {a.case}")
    print("PASS")


if __name__ == "__main__":
    main()
