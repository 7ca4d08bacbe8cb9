#!/usr/bin/env python3
"""Static cost of the NEON r16 micro-kernel's inner loop (one 32-element block of 16 rows x
T tokens) on Arm cores, from LLVM's scheduling models (llvm-mca), so kernel variants can be
compared without the hardware.

  mca_kernels.py [--cpus cortex-x4,cortex-a76,...] [--march armv8.2-a+dotprod[+i8mm]]

For each CPU, format and tile shape: compiles codegen/cpu/ukernels/neon/linear_packed.c to
assembly for that CPU with the llvm-mca markers of that tile switched on (KILN_UK_MCA_*),
cuts out the marked block and runs llvm-mca on it. Prints a markdown table: instructions and
cycles per block, multiply-adds per cycle. A model that cannot time an instruction the loop
uses (LLVM 19's oryon-1 has no entry for sdot by element) is reported, not guessed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

LLVM = "/usr/lib/llvm-19/bin"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FORMATS = {"q8_0_r16": 1008, "q4_0_r16": 1002, "q4_1_r16": 1003}


def region(cpu, march, fmt_id, tokens, tmp):
    asm = os.path.join(tmp, f"k-{cpu}-{fmt_id}-{tokens}.s")
    cmd = [f"{LLVM}/clang", "--target=aarch64-linux-gnu", f"-march={march}", f"-mtune={cpu}",
           "-std=c11", "-O2", "-S", "-ffreestanding", "-fno-math-errno", "-fPIC",
           f"-I{ROOT}/runtime-min/include", f"-I{ROOT}/codegen/common",
           f"-I{ROOT}/codegen/cpu/ukernels", f"-DKILN_UK_MCA_FORMAT={fmt_id}u",
           f"-DKILN_UK_MCA_T={tokens}", f"{ROOT}/codegen/cpu/ukernels/neon/linear_packed.c",
           "-o", asm]
    subprocess.run(cmd, check=True)
    lines = open(asm).read().splitlines()
    begin = [i for i, l in enumerate(lines) if "LLVM-MCA-BEGIN" in l]
    end = [i for i, l in enumerate(lines) if "LLVM-MCA-END" in l]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        sys.exit(f"error: expected one marked block in {asm}, found {len(begin)}/{len(end)}")
    return "\n".join(lines[begin[0] + 1:end[0]]) + "\n"


def mca(cpu, march, body, tmp):
    path = os.path.join(tmp, "region.s")
    with open(path, "w") as f:
        f.write(body)
    attrs = "+" + ",+".join(march.split("+")[1:])
    p = subprocess.run([f"{LLVM}/llvm-mca", "-mtriple=aarch64", f"-mcpu={cpu}",
                        f"-mattr={attrs}", "-iterations=200", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[0]
    it = int(re.search(r"Iterations:\s+(\d+)", p.stdout).group(1))
    cyc = int(re.search(r"Total Cycles:\s+(\d+)", p.stdout).group(1))
    ins = int(re.search(r"Instructions:\s+(\d+)", p.stdout).group(1))
    return (ins / it, cyc / it), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", default="cortex-x4,cortex-a720,cortex-a76,neoverse-v2,oryon-1")
    ap.add_argument("--march", default="armv8.2-a+dotprod")
    a = ap.parse_args()
    print(f"| CPU model | kernel (16 rows x 32 elements x T) | T | instructions | cycles | "
          f"MAC/cycle |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for cpu in a.cpus.split(","):
            for name, fid in FORMATS.items():
                for tokens in (1, 2):
                    res, err = mca(cpu, a.march, region(cpu, a.march, fid, tokens, tmp), tmp)
                    if err:
                        print(f"| {cpu} | {name} | {tokens} | - | - | no model: {err[:60]} |")
                        continue
                    ins, cyc = res
                    print(f"| {cpu} | {name} | {tokens} | {ins:.0f} | {cyc:.1f} | "
                          f"{16 * 32 * tokens / cyc:.1f} |", flush=True)


if __name__ == "__main__":
    main()
