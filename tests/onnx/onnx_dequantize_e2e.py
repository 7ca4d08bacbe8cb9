#!/usr/bin/env python3
"""Weight-only quantised ONNX (issue 6): every MatMul weight of an exported model becomes
int8 with one scale per output column behind a DequantizeLinear, as quantisation tools
write it. kiln must import it (dequantising at import) and give the same logits as the
float model holding exactly the dequantised values. Run with the Python that has torch and
onnx (KILN_TORCH_PYTHON)."""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def quantize(src, dst_q, dst_f):
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    mf = onnx.load(src)
    finits = {t.name: t for t in mf.graph.initializer}
    done = set()
    new_nodes = []
    for node in g.node:
        if node.op_type == "MatMul" and node.input[1] in inits and node.input[1] not in done:
            name = node.input[1]
            w = numpy_helper.to_array(inits[name]).astype(np.float32)
            if w.ndim != 2:
                new_nodes.append(node)
                continue
            scale = np.maximum(np.abs(w).max(axis=0), 1e-8) / 127.0  # per output column
            q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
            g.initializer.remove(inits[name])
            g.initializer.extend([numpy_helper.from_array(q, name + "_q"),
                                  numpy_helper.from_array(scale.astype(np.float32), name + "_scale")])
            new_nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale"],
                                              [name], axis=1, name=name + "_dq"))
            finits[name].CopyFrom(numpy_helper.from_array((q.astype(np.float32) * scale).astype(np.float32), name))
            done.add(name)
        new_nodes.append(node)
    del g.node[:]
    g.node.extend(new_nodes)
    onnx.checker.check_model(m)
    onnx.save(m, dst_q)
    onnx.save(mf, dst_f)
    return len(done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    subprocess.run([sys.executable, os.path.join(HERE, "export_llama.py"), "--out", args.work,
                    "--no-reference"], check=True, stdout=subprocess.DEVNULL)
    n = quantize(os.path.join(args.work, "model.onnx"), os.path.join(args.work, "q.onnx"),
                 os.path.join(args.work, "f.onnx"))
    print(f"{n} weights quantised to int8 behind DequantizeLinear")
    dumps = []
    for name in ("q", "f"):
        dump = os.path.join(args.work, name + ".logits")
        r = subprocess.run([args.kiln, "eval", os.path.join(args.work, name + ".onnx"),
                            "--tokenizer", os.path.join(args.work, "model.gguf"),
                            "-p", "Once upon a time", "-n", "8", "--dump-logits", dump],
                           capture_output=True)
        if r.returncode != 0:
            sys.exit(f"FAIL: kiln eval {name}.onnx: {r.stderr.decode().strip()}")
        dumps.append(np.fromfile(dump, np.float32))
    if dumps[0].size == 0 or dumps[0].size != dumps[1].size:
        sys.exit("FAIL: logits dumps differ in size")
    diff = float(np.abs(dumps[0] - dumps[1]).max())
    print(f"DequantizeLinear model vs float model of the dequantised weights: max abs diff {diff:.3g}")
    if not diff <= 1e-6:
        sys.exit("FAIL: max abs diff > 1e-6")
    print("PASS")


if __name__ == "__main__":
    main()
