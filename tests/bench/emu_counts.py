#!/usr/bin/env python3
"""Executed aarch64 instructions and Hexagon packets, counted by qemu-aarch64-static and
qemu-hexagon-static (-singlestep: one translation block per instruction or packet;
-d nochain,exec logs every block executed), so kernel changes are judged by numbers that
do not depend on a noisy machine.

  emu_counts.py kernels --bin-dir BUILD/aarch64/bin [--shape ROWSxIN] [--tokens N]
                       [--formats f1,f2,...]
      instructions per call of each linear micro-kernel, generic C (compiled for
      aarch64+dotprod) against the NEON file (+dotprod: sdot) and the NEON file with i8mm
      (+dotprod+i8mm: usmmla tiles of 4 tokens for the r16 formats), as a markdown table
  emu_counts.py attention --bin-dir BUILD/aarch64/bin [--head-dim D] [--ctx C] [--tokens N]
                         [--heads H --kv-heads G]
      instructions per call of the attention micro-kernel (H query heads on G KV heads,
      default 8 on 4) per KV cache format, generic C against the NEON file
  emu_counts.py tokens --kiln-run BUILD/aarch64/bin/kiln-run A.kiln [B.kiln ...]
                       [--prompt-file F]
      instructions per decoded token of each artifact (greedy, 1 thread); with a long prompt
      the decode steps attend over that many positions
  emu_counts.py hexagon-tokens [--prompt-file F] [--by-symbol N] PROGRAM.elf:A.kiln [...]
      Hexagon packets per decoded token (qemu-hexagon-static -cpu v67) of each kiln-run
      program with its model linked in (tests/emu/hexagon/stories260k_e2e.py builds them)
      and the artifact it was compiled with; --by-symbol N adds the N symbols with the
      most packets per token

Per call = (count with 3 calls - count with 1) / 2; per token = (count generating 12 -
count generating 4) / 8: setup, loading and the prompt cancel out.

Besides the markdown table on stdout, the counts go to a CSV file,
$KILN_BENCH_OUT/emu_counts-MODE-<UTC time>.csv (default build/bench-results, which git
ignores; KILN_BENCH_OUT empty: no file).
"""
import argparse
import collections
import csv
import os
import subprocess
import sys
import time

QEMU = "qemu-aarch64-static"
SYSROOT = "/usr/aarch64-linux-gnu"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULTS = []  # one dict per table row, written as CSV at the end


def write_results(name):
    """Writes RESULTS to $KILN_BENCH_OUT/NAME-<UTC time>.csv (default build/bench-results)."""
    out = os.environ.get("KILN_BENCH_OUT", os.path.join(ROOT, "build", "bench-results"))
    if not out or not RESULTS:
        return
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.csv")
    fields = list(dict.fromkeys(k for r in RESULTS for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(RESULTS)
    print(f"wrote {path}", file=sys.stderr)


def count(cmd, qemu=(QEMU, "-L", SYSROOT)):
    q = subprocess.Popen([*qemu, "-singlestep", "-d", "nochain,exec", "-D", "/dev/stderr", *cmd],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    g = subprocess.run(["grep", "-c", "^Trace"], stdin=q.stderr, capture_output=True)
    q.stderr.close()
    if q.wait() != 0:
        sys.exit(f"error: {' '.join(cmd)} failed under qemu (exit {q.returncode})")
    return int(g.stdout or 0)


def count_by_symbol(cmd, qemu):
    """Executed blocks per symbol: qemu names the symbol last on each Trace line."""
    q = subprocess.Popen([*qemu, "-singlestep", "-d", "nochain,exec", "-D", "/dev/stderr", *cmd],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    c = collections.Counter(line.split()[-1] for line in q.stderr if line.startswith("Trace"))
    if q.wait() != 0:
        sys.exit(f"error: {' '.join(cmd)} failed under qemu (exit {q.returncode})")
    return c


def kernels(a):
    rows, inn = a.shape.split("x")
    formats = a.formats.split(",")
    print(f"| kernel ({rows}x{inn}, {a.tokens} token{'s' if a.tokens > 1 else ''}) "
          f"| generic C | NEON | generic / NEON | MAC per instruction (NEON) "
          f"| NEON + i8mm | NEON / NEON + i8mm |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for f in formats:
        per = {}
        for isa in ("generic", "neon", "neon-i8mm"):
            exe = os.path.join(a.bin_dir, f"ukernel-calls-{isa}")
            c1 = count([exe, f, rows, inn, str(a.tokens), "1"])
            c3 = count([exe, f, rows, inn, str(a.tokens), "3"])
            per[isa] = (c3 - c1) / 2
        macs = int(rows) * int(inn) * a.tokens
        RESULTS.append({"format": f, "rows": rows, "in": inn, "tokens": a.tokens,
                        "generic": per["generic"], "neon": per["neon"],
                        "neon_i8mm": per["neon-i8mm"]})
        print(f"| {f} | {per['generic']:,.0f} | {per['neon']:,.0f} | "
              f"{per['generic'] / per['neon']:.2f}x | {macs / per['neon']:.1f} | "
              f"{per['neon-i8mm']:,.0f} | {per['neon'] / per['neon-i8mm']:.2f}x |", flush=True)


def attention(a):
    print(f"| KV cache ({a.heads} heads on {a.kv_heads}, head_dim {a.head_dim}, context "
          f"{a.ctx}, {a.tokens} token{'s' if a.tokens > 1 else ''}) | generic C | NEON | "
          f"generic / NEON |")
    print("| --- | ---: | ---: | ---: |")
    for kv in ("f32", "f16", "i8f16"):
        per = {}
        for isa in ("generic", "neon"):
            exe = os.path.join(a.bin_dir, f"ukernel-calls-{isa}")
            args = [f"attention-{kv}", str(a.head_dim), str(a.ctx), str(a.tokens)]
            heads = [str(a.heads), str(a.kv_heads)]
            per[isa] = (count([exe, *args, "3", *heads]) - count([exe, *args, "1", *heads])) / 2
        RESULTS.append({"kv": kv, "heads": a.heads, "kv_heads": a.kv_heads,
                        "head_dim": a.head_dim, "ctx": a.ctx, "tokens": a.tokens,
                        "generic": per["generic"], "neon": per["neon"]})
        print(f"| {kv} | {per['generic']:,.0f} | {per['neon']:,.0f} | "
              f"{per['generic'] / per['neon']:.2f}x |", flush=True)


def prompt_of(a):
    if not a.prompt_file:
        return "Once upon a time"
    with open(a.prompt_file, encoding="utf-8") as f:
        return f.read().strip()


def tokens(a):
    prompt = prompt_of(a)
    print("| artifact | instructions per decoded token |")
    print("| --- | ---: |")
    for art in a.artifacts:
        gen = [a.kiln_run, "generate", art, "-p", prompt, "--threads", "1"]
        c4 = count(gen + ["-n", "4"])
        c12 = count(gen + ["-n", "12"])
        RESULTS.append({"artifact": art, "prompt_file": a.prompt_file or "",
                        "instructions_per_token": (c12 - c4) / 8})
        print(f"| {os.path.basename(art)} | {(c12 - c4) / 8:,.0f} |", flush=True)


def hexagon_tokens(a):
    print("| program (artifact) | packets per decoded token |")
    print("| --- | ---: |")
    for pair in a.pairs:
        exe, sep, art = pair.partition(":")
        if not sep:
            sys.exit(f"error: '{pair}' is not PROGRAM.elf:ARTIFACT.kiln")
        gen = [exe, "generate", art, "-p", prompt_of(a)]
        qemu = ("qemu-hexagon-static", "-cpu", "v67")
        if not a.by_symbol:
            c4 = count(gen + ["-n", "4"], qemu)
            c12 = count(gen + ["-n", "12"], qemu)
            RESULTS.append({"program": exe, "artifact": art, "prompt_file": a.prompt_file or "",
                            "symbol": "", "packets_per_token": (c12 - c4) / 8})
            print(f"| {os.path.basename(exe)} | {(c12 - c4) / 8:,.0f} |", flush=True)
            continue
        s4 = count_by_symbol(gen + ["-n", "4"], qemu)
        s12 = count_by_symbol(gen + ["-n", "12"], qemu)
        per = {k: (s12[k] - s4[k]) / 8 for k in s12}
        total = sum(per.values())
        RESULTS.append({"program": exe, "artifact": art, "prompt_file": a.prompt_file or "",
                        "symbol": "", "packets_per_token": total})
        RESULTS.extend({"program": exe, "artifact": art, "prompt_file": a.prompt_file or "",
                        "symbol": k, "packets_per_token": v} for k, v in per.items())
        print(f"| {os.path.basename(exe)} | {total:,.0f} |", flush=True)
        for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:a.by_symbol]:
            print(f"|   {k} | {v:,.0f} ({100 * v / total:.1f}%) |")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    k = sub.add_parser("kernels")
    k.add_argument("--bin-dir", required=True)
    k.add_argument("--shape", default="2048x2048")
    k.add_argument("--tokens", type=int, default=1)
    k.add_argument("--formats", default="q8_0_r16,q4_0_r16,q4_1_r16,f32,f16,q8_0,q4_0,q3_0",
                   help="comma-separated (ukernel_calls.c's FORMAT names)")
    at = sub.add_parser("attention")
    at.add_argument("--bin-dir", required=True)
    at.add_argument("--head-dim", type=int, default=64)
    at.add_argument("--ctx", type=int, default=1024)
    at.add_argument("--tokens", type=int, default=1)
    at.add_argument("--heads", type=int, default=8)
    at.add_argument("--kv-heads", type=int, default=4)
    t = sub.add_parser("tokens")
    t.add_argument("--kiln-run", required=True)
    t.add_argument("--prompt-file", help="the prompt (default: Once upon a time)")
    t.add_argument("artifacts", nargs="+")
    h = sub.add_parser("hexagon-tokens")
    h.add_argument("--prompt-file", help="the prompt (default: Once upon a time)")
    h.add_argument("--by-symbol", type=int, default=0, metavar="N",
                   help="also the N symbols with the most packets per token")
    h.add_argument("pairs", nargs="+", metavar="PROGRAM.elf:A.kiln")
    a = ap.parse_args()
    {"kernels": kernels, "attention": attention, "tokens": tokens,
     "hexagon-tokens": hexagon_tokens}[a.mode](a)
    write_results(f"emu_counts-{a.mode}")


if __name__ == "__main__":
    main()
