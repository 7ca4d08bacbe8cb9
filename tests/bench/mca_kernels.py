#!/usr/bin/env python3
"""Static cost of the NEON r16 micro-kernel's inner loop (one 32-element block of 16 rows x
T tokens) on Arm cores, from LLVM's scheduling models (llvm-mca), so kernel variants can be
compared without the hardware.

  mca_kernels.py [--cpus cortex-x4,cortex-a76,...]

Runs codegen/targets/KernelCostTable.cmake - the build step that makes `kiln inspect
--chip`'s table for the profiles' cores - for any list of LLVM CPUs, and prints its rows as
a markdown table: instructions and cycles per block, multiply-adds per cycle. A model that
cannot time an instruction the loop uses (LLVM 19's oryon-1 has no entry for sdot by
element) is reported, not guessed. The rows also go to a CSV file,
$KILN_BENCH_OUT/mca_kernels-<UTC time>.csv (default build/bench-results, which git ignores;
KILN_BENCH_OUT empty: no file).
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

LLVM = "/usr/lib/llvm-19/bin"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NAMES = {1008: "q8_0_r16", 1002: "q4_0_r16", 1003: "q4_1_r16", 1012: "q4_K_r16",
         1013: "q5_K_r16", 1014: "q6_K_r16"}
ROW = re.compile(r'\{"([^"]+)", (\d+)u, (\d), ([0-9.]+)(?: / (\d+))?, ([0-9.]+)(?: / (\d+))?, "([^"]*)"\}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", default="cortex-x4,cortex-a720,cortex-a76,neoverse-v2,oryon-1")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "costs.inc")
        subprocess.run(["cmake", f"-DCLANG={LLVM}/clang", f"-DMCA={LLVM}/llvm-mca",
                        f"-DSRC={ROOT}", f"-DCPUS={a.cpus.replace(',', '|')}",
                        f"-DWORK={tmp}/work", f"-DOUTPUT={out}",
                        "-P", os.path.join(ROOT, "codegen/targets/KernelCostTable.cmake")],
                       check=True)
        rows = ROW.findall(open(out).read())
    print("| CPU model | kernel (16 rows x 32 elements x T) | T | instructions | cycles | "
          "MAC/cycle |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    data = []
    for cpu, fmt, tokens, ins, it1, cyc, it2, err in rows:
        name, t = NAMES[int(fmt)], int(tokens)
        if err:
            print(f"| {cpu} | {name} | {t} | - | - | no model: {err} |")
            data.append([cpu, name, t, "", "", "", err])
            continue
        ins, cyc = float(ins) / int(it1 or 1), float(cyc) / int(it2 or 1)
        print(f"| {cpu} | {name} | {t} | {ins:.0f} | {cyc:.1f} | {512 * t / cyc:.1f} |")
        data.append([cpu, name, t, ins, cyc, 512 * t / cyc, ""])
    write_csv(data)


def write_csv(data):
    """The rows as CSV in $KILN_BENCH_OUT (default build/bench-results; empty: none)."""
    out = os.environ.get("KILN_BENCH_OUT", os.path.join(ROOT, "build", "bench-results"))
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"mca_kernels-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpu", "kernel", "tokens", "instructions", "cycles", "mac_per_cycle",
                    "no_model"])
        w.writerows(data)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
