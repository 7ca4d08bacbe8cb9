#!/usr/bin/python3
"""Import time and peak memory of a TinyLlama-shape ONNX export with external data against
the GGUF of the same weights (issue 6's last acceptance point). Run with the Python that has
torch and onnx (Debian's /usr/bin/python3).

  onnx_tinyllama.py make --out DIR [--layers 22 --dim 2048 ... --seed 0]
  onnx_tinyllama.py bench --kiln build/bin/kiln --out DIR [-r 3] [--check [--no-eval]]

`make` writes DIR/model.onnx + model.onnx.data + config.json (f16 matrices read through Cast
to f32, as `export_llama.py --dtype f16` exports them; norms f32) and DIR/model.gguf (f16 matrices, f32
norms) holding the same numbers, without torch-exporting the full model (torch.onnx needs
~25 GB at this size): torch exports ONE decoder layer of the same shape (hf_llama.py, opset
17, constant folding on, so each Linear is a MatMul on a folded [in, out] initializer), then
the layer's nodes and initializers are replicated --layers times with the onnx API (values
and nodes renamed layers.0 -> layers.i, each layer reading the previous one's output; the
mask and position subgraphs stay shared), and every weight is streamed from a seeded numpy
generator into model.onnx.data (4 KiB-aligned offsets) and model.gguf at once, one tensor
in memory at a time. q/k go to the GGUF with llama.cpp's rotate-half -> adjacent-pair row
permutation, as export_llama.py writes them.

`bench` runs `/usr/bin/time -v kiln import M --emit=E > /dev/null` -r times for
(model.onnx, onnx), (model.onnx, raised), (model.onnx, mlir) and (model.gguf, mlir) and prints a markdown table of
median elapsed seconds, user+system CPU seconds (less disturbed by other load on a shared
machine) and max RSS (min-max in brackets). --check first prints
`kiln import model.onnx --emit=raised | tail -1`, requires `kiln import` to print the same IR
for both files and (unless --no-eval) compares the logits of `kiln eval` on both (max abs
diff <= 1e-4, same text). `bench` also writes every run's numbers as CSV to
$KILN_BENCH_OUT/onnx_tinyllama-<UTC time>.csv (default build/bench-results, which git
ignores; KILN_BENCH_OUT empty: no file)."""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ONNX_DIR = os.path.join(HERE, "..", "onnx")
sys.path.insert(0, ONNX_DIR)

ALIGN = 4096


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--out", default=os.path.join(os.environ.get("KILN_BENCH_DIR", "/tmp/kiln-bench"),
                                                  "onnx-tinyllama"))
    mk.add_argument("--seed", type=int, default=0)
    mk.add_argument("--dim", type=int, default=2048)
    mk.add_argument("--layers", type=int, default=22)
    mk.add_argument("--heads", type=int, default=32)
    mk.add_argument("--kv-heads", type=int, default=4)
    mk.add_argument("--ffn", type=int, default=5632)
    mk.add_argument("--vocab", type=int, default=32000)
    mk.add_argument("--ctx", type=int, default=2048)
    bn = sub.add_parser("bench")
    bn.add_argument("--out", default=os.path.join(os.environ.get("KILN_BENCH_DIR", "/tmp/kiln-bench"),
                                                  "onnx-tinyllama"))
    bn.add_argument("--kiln", required=True)
    bn.add_argument("-r", "--runs", type=int, default=3)
    bn.add_argument("--check", action="store_true")
    bn.add_argument("--no-eval", action="store_true",
                    help="with --check: skip the kiln eval comparison (the ONNX eval peaks near "
                         "9 GB: f32 reference weights on top of the import)")
    bn.add_argument("--prompt", default="Once upon a time")
    bn.add_argument("-n", type=int, default=4)
    return ap.parse_args()


# ---------------------------------------------------------------------------------- make

def export_one_layer(cfg, tmp):
    """torch.onnx export of a 1-layer model of cfg's shape with f16 matrices; returns the
    loaded proto (weights inline)."""
    import onnx
    import torch
    from export_llama import export_onnx
    from llama_weights import random_model
    model = random_model(type(cfg)(**{**cfg.__dict__, "num_hidden_layers": 1}), 0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(p.half().float())
    args = SimpleNamespace(past=False, opset=17, no_constant_folding=False, dtype="f16",
                           external_data=True)
    path = os.path.join(tmp, "model.onnx")
    export_onnx(model, args, path)
    del model
    return onnx.load(path)


# HF module path -> (GGUF name (with {i} for layers), permute q/k rows with this many heads)
def roles(cfg):
    return {
        "embed_tokens": ("token_embd.weight", None),
        "input_layernorm": ("blk.{i}.attn_norm.weight", None),
        "self_attn/q_proj": ("blk.{i}.attn_q.weight", cfg.num_attention_heads),
        "self_attn/k_proj": ("blk.{i}.attn_k.weight", cfg.num_key_value_heads),
        "self_attn/v_proj": ("blk.{i}.attn_v.weight", None),
        "self_attn/o_proj": ("blk.{i}.attn_output.weight", None),
        "post_attention_layernorm": ("blk.{i}.ffn_norm.weight", None),
        "mlp/gate_proj": ("blk.{i}.ffn_gate.weight", None),
        "mlp/up_proj": ("blk.{i}.ffn_up.weight", None),
        "mlp/down_proj": ("blk.{i}.ffn_down.weight", None),
        "norm": ("output_norm.weight", None),
        "lm_head": ("output.weight", None),
    }


def weight_role(consumer_name):
    """'/model/layers.0/self_attn/q_proj/MatMul' -> 'self_attn/q_proj'."""
    m = re.match(r"^/(?:lm/)?(?:model/)?(?:layers\.0/)?(.*)/[^/]+$", consumer_name)
    if not m:
        raise SystemExit(f"onnx_tinyllama: cannot tell the weight role of node {consumer_name!r}")
    return m.group(1)


def replicate(proto, n_layers):
    """Replicates layer 0's nodes and layer-only initializers n_layers times; returns
    {initializer name: (role, layer or None, transposed)} for every weight initializer."""
    import onnx
    g = proto.graph
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for v in n.input:
            consumers.setdefault(v, []).append(n)
        for a in n.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise SystemExit(f"onnx_tinyllama: node {n.name} has a subgraph")
    layer = [n for n in g.node if re.match(r"^/(lm/)?model/layers\.0/", n.name)]
    in_layer = {id(n) for n in layer}
    # constants feeding only layer 0 (Constant nodes, the f16 weights' Casts) belong to it
    changed = True
    while changed:
        changed = False
        for n in g.node:
            if id(n) in in_layer or not n.output:
                continue
            if all(v in inits for v in n.input if v) and all(
                    consumers.get(o) and all(id(c) in in_layer for c in consumers[o])
                    for o in n.output):
                layer.append(n)
                in_layer.add(id(n))
                changed = True
    layer_ids = in_layer
    layer = [n for n in g.node if id(n) in in_layer]  # the graph's (topological) order
    produced = {o for n in layer for o in n.output}
    ext_in = {v for n in layer for v in n.input if v and v not in produced}
    outs = [o for n in layer for o in n.output
            if any(id(c) not in layer_ids for c in consumers.get(o, []))
            or o in {x.name for x in g.output}]
    if len(outs) != 1:
        raise SystemExit(f"onnx_tinyllama: layer 0 has {len(outs)} outputs {outs}, expected 1")
    layer_out = outs[0]
    # the hidden state a layer reads: what its input_layernorm reads from outside
    norm_in = [n for n in layer if re.match(r"^/(lm/)?model/layers\.0/input_layernorm/", n.name)]
    hidden_in = sorted({v for n in norm_in for v in n.input if v in ext_in and v not in inits})
    if len(hidden_in) != 1:
        raise SystemExit(f"onnx_tinyllama: layer input ambiguous: {hidden_in}")
    hidden_in = hidden_in[0]
    layer_only = {v for v in ext_in if v in inits
                  and all(id(c) in layer_ids for c in consumers[v])}

    def rename(name, i):
        if i == 0:
            return name
        return name.replace("layers.0", f"layers.{i}") if "layers.0" in name else f"{name}__l{i}"

    # order: nodes not depending on the layer output, the layers, then the rest (norm, head)
    after = set()
    frontier = [layer_out]
    while frontier:
        v = frontier.pop()
        for c in consumers.get(v, []):
            if id(c) not in layer_ids and id(c) not in after:
                after.add(id(c))
                frontier += list(c.output)
    pre = [n for n in g.node if id(n) not in layer_ids and id(n) not in after]
    post = [n for n in g.node if id(n) in after]
    new_nodes, new_inits = [], []
    for i in range(n_layers):
        for n in layer:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = rename(n.name, i) if n.name else ""
            for k, v in enumerate(c.input):
                if not v:
                    continue
                if v in produced or v in layer_only:
                    c.input[k] = rename(v, i)
                elif v == hidden_in and i > 0:
                    c.input[k] = rename(layer_out, i - 1)
            for k, v in enumerate(c.output):
                c.output[k] = rename(v, i)
            new_nodes.append(c)
        if i > 0:
            for v in sorted(layer_only):
                t = onnx.TensorProto()
                t.CopyFrom(inits[v])
                t.name = rename(v, i)
                new_inits.append(t)
    last = rename(layer_out, n_layers - 1)
    for n in post:
        for k, v in enumerate(n.input):
            if v == layer_out:
                n.input[k] = last
    del g.node[:]
    g.node.extend(pre + new_nodes + post)
    g.initializer.extend(new_inits)

    # weights: initializers read by MatMul/Gather/Mul directly or through one Cast
    consumers = {}
    for n in g.node:
        for v in n.input:
            consumers.setdefault(v, []).append(n)
    weights = {}
    for t in g.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            continue
        users = consumers.get(t.name, [])
        if len(users) == 1 and users[0].op_type == "Cast":
            users = consumers.get(users[0].output[0], [])
        ops = {u.op_type for u in users}
        if len(t.dims) == 2 and ops <= {"MatMul", "Gather"} and users:
            user = users[0]
        elif len(t.dims) == 1 and ops == {"Mul"} and "norm" in users[0].name:
            user = users[0]
        else:
            continue
        m = re.match(r"^/(?:lm/)?model/layers\.(\d+)/", user.name)
        layer_i = int(m.group(1)) if m else None
        role = weight_role(user.name.replace(f"layers.{layer_i}/", "layers.0/") if m else user.name)
        weights[t.name] = (role, layer_i, user.op_type == "MatMul")
    return weights


def make(args):
    import onnx
    from gguf_writer import F32, GGML_F16, GGML_F32, STRING, U32, GgufWriter
    from hf_llama import LlamaConfig
    from spm_vocab import random_vocab
    cfg = LlamaConfig(hidden_size=args.dim, intermediate_size=args.ffn,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, vocab_size=args.vocab,
                      max_position_embeddings=args.ctx)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        proto = export_one_layer(cfg, tmp)
    print(f"exported one layer in {time.time() - t0:.1f} s", flush=True)
    weights = replicate(proto, args.layers)
    table = roles(cfg)
    got = {(r, i) for r, i, _ in weights.values()}
    want = {(r, None) for r in ("embed_tokens", "norm", "lm_head")} | {
        (r, i) for r in table if r not in ("embed_tokens", "norm", "lm_head")
        for i in range(args.layers)}
    if got != want or len(weights) != len(want):
        raise SystemExit(f"onnx_tinyllama: weights found {sorted(map(str, got ^ want))} differ")

    inits = {t.name: t for t in proto.graph.initializer}
    by_gguf = {}
    for name, (role, i, transposed) in weights.items():
        by_gguf[table[role][0].format(i=i)] = (name, role, i, transposed)
    order = ["token_embd.weight"] + [
        table[r][0].format(i=i) for i in range(args.layers)
        for r in ("input_layernorm", "self_attn/q_proj", "self_attn/k_proj", "self_attn/v_proj",
                  "self_attn/o_proj", "post_attention_layernorm", "mlp/gate_proj",
                  "mlp/up_proj", "mlp/down_proj")] + ["output_norm.weight", "output.weight"]

    w = GgufWriter()
    w.add("general.architecture", STRING, "llama")
    w.add("general.name", STRING, "kiln-onnx-tinyllama-bench")
    w.add("llama.context_length", U32, cfg.max_position_embeddings)
    w.add("llama.embedding_length", U32, cfg.hidden_size)
    w.add("llama.block_count", U32, cfg.num_hidden_layers)
    w.add("llama.feed_forward_length", U32, cfg.intermediate_size)
    w.add("llama.attention.head_count", U32, cfg.num_attention_heads)
    w.add("llama.attention.head_count_kv", U32, cfg.num_key_value_heads)
    w.add("llama.rope.dimension_count", U32, cfg.head_dim)
    w.add("llama.rope.freq_base", F32, cfg.rope_theta)
    w.add("llama.attention.layer_norm_rms_epsilon", F32, cfg.rms_norm_eps)
    for k, (t, v, e) in random_vocab(args.vocab).items():
        w.add(k, t, v, e)

    data_name = "model.onnx.data"
    data = open(os.path.join(args.out, data_name), "wb")

    def producer(gname, index):
        name, role, layer_i, transposed = by_gguf[gname]
        t = inits[name]
        shape = tuple(t.dims)

        def make_tensor():
            rng = np.random.default_rng([args.seed, index])
            if len(shape) == 1:  # norm weight, f32 everywhere
                a = (1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
                hf = a
            else:
                out_in = shape[::-1] if transposed else shape
                a = rng.standard_normal(out_in, dtype=np.float32)
                if role != "embed_tokens":
                    a *= np.float32(out_in[1] ** -0.5)
                hf = a.astype(np.float16)
                del a
            onnx_arr = np.ascontiguousarray(hf.T) if transposed else hf
            if onnx_arr.dtype != (np.float16 if t.data_type == onnx.TensorProto.FLOAT16
                                  else np.float32):
                raise SystemExit(f"onnx_tinyllama: {name} is {t.data_type}, generated "
                                 f"{onnx_arr.dtype}")
            off = data.tell()
            pad = -off % ALIGN
            data.write(b"\0" * pad)
            off += pad
            data.write(onnx_arr.tobytes())
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("int32_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            for k, v in (("location", data_name), ("offset", str(off)),
                         ("length", str(onnx_arr.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            del onnx_arr
            heads = table[role][1]
            if heads:  # rotate-half rows -> GGUF's adjacent pairs
                rows = hf.shape[0]
                hf = hf.reshape(heads, 2, rows // heads // 2, hf.shape[1]).swapaxes(1, 2) \
                       .reshape(hf.shape)
            return hf
        return shape[::-1] if transposed else shape, make_tensor

    for index, gname in enumerate(order):
        shape, fn = producer(gname, index)
        w.add_tensor_lazy(gname, shape, GGML_F16 if len(shape) == 2 else GGML_F32, fn)
    w.write(os.path.join(args.out, "model.gguf"))
    data.close()
    from export_llama import write_hf_config
    write_hf_config(cfg, os.path.join(args.out, "config.json"))
    onnx.save_model(proto, os.path.join(args.out, "model.onnx"))
    onnx.checker.check_model(os.path.join(args.out, "model.onnx"))
    sizes = {f: os.path.getsize(os.path.join(args.out, f))
             for f in ("model.onnx", data_name, "model.gguf")}
    print(f"wrote {args.out}: " + ", ".join(f"{f} {s / 2**20:.1f} MiB" for f, s in sizes.items())
          + f" ({len(proto.graph.node)} nodes, {len(proto.graph.initializer)} initializers) "
          f"in {time.time() - t0:.1f} s")


# --------------------------------------------------------------------------------- bench

def timed(cmd):
    """Runs cmd under /usr/bin/time -v, stdout discarded; returns (elapsed s, max RSS KiB,
    user + system CPU s)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    el = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    secs = 0.0
    for part in el.split(":"):
        secs = secs * 60 + float(part)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    cpu = sum(float(re.search(rf"{k} time \(seconds\): (\S+)", p.stderr).group(1))
              for k in ("User", "System"))
    return secs, rss, cpu


def check(args, onnx_path, gguf_path):
    raised = subprocess.run([args.kiln, "import", onnx_path, "--emit=raised"], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    print(f"`kiln import model.onnx --emit=raised | tail -1`: {raised}")
    ir = [subprocess.run([args.kiln, "import", m], check=True, stdout=subprocess.PIPE).stdout
          for m in (onnx_path, gguf_path)]
    if ir[0] != ir[1]:
        import difflib
        diff = list(difflib.unified_diff(ir[1].decode().splitlines(), ir[0].decode().splitlines(),
                                         "model.gguf", "model.onnx", lineterm="", n=0))
        print("\n".join(diff[:20]))
        raise SystemExit(f"onnx_tinyllama: kiln import prints different IR for model.onnx and "
                         f"model.gguf ({len(diff)} diff lines)")
    print(f"kiln import: the same IR from model.onnx and model.gguf ({len(ir[0])} bytes)")
    if args.no_eval:
        return
    dumps = []
    for m, extra in ((onnx_path, ["--tokenizer", gguf_path]), (gguf_path, [])):
        dump = m + ".logits"
        t0 = time.time()
        out = subprocess.run([args.kiln, "eval", m, "-p", args.prompt, "-n", str(args.n),
                              "--temp", "0", "--dump-logits", dump] + extra, check=True,
                             stdout=subprocess.PIPE).stdout
        print(f"kiln eval {os.path.basename(m)}: {out!r} ({time.time() - t0:.1f} s)")
        dumps.append((np.fromfile(dump, dtype="<f4"), out))
    (a, ta), (b, tb) = dumps
    if a.shape != b.shape:
        raise SystemExit(f"logit dumps differ in size: {a.shape} vs {b.shape}")
    diff = float(np.abs(a - b).max())
    print(f"logits ONNX vs GGUF: max abs diff {diff:.3g} over {a.size // 32000} rows of 32000"
          if a.size % 32000 == 0 else f"logits ONNX vs GGUF: max abs diff {diff:.3g}")
    if not diff <= 1e-4 or ta != tb:
        raise SystemExit("onnx_tinyllama: ONNX and GGUF disagree")


def bench(args):
    onnx_path = os.path.join(args.out, "model.onnx")
    gguf_path = os.path.join(args.out, "model.gguf")
    if args.check:
        check(args, onnx_path, gguf_path)
    if args.runs < 1:
        return
    cases = [("model.onnx", "onnx", "load + constant folding (phase 1)"),
             ("model.onnx", "raised", "phase 1 + raising patterns (phase 2)"),
             ("model.onnx", "mlir", "phase 1 + raising + Llama assembly + kiln IR"),
             ("model.gguf", "mlir", "GGUF read + kiln IR")]
    rows = []
    data = []
    for f, emit, what in cases:
        runs = [timed([args.kiln, "import", os.path.join(args.out, f), f"--emit={emit}"])
                for _ in range(args.runs)]
        data.extend([f, emit, i + 1, r[0], r[2], r[1] / 2**20] for i, r in enumerate(runs))
        t = [r[0] for r in runs]
        m = [r[1] / 2**20 for r in runs]
        c = [r[2] for r in runs]
        rows.append(f"| `kiln import {f} --emit={emit}` | {what} | {statistics.median(t):.2f} "
                    f"({min(t):.2f}-{max(t):.2f}) | {statistics.median(c):.2f} "
                    f"({min(c):.2f}-{max(c):.2f}) | {statistics.median(m):.2f} "
                    f"({min(m):.2f}-{max(m):.2f}) |")
        print(rows[-1], file=sys.stderr, flush=True)
    sizes = ", ".join(f"{f} {os.path.getsize(os.path.join(args.out, f)) / 2**30:.2f} GiB"
                      for f in ("model.onnx.data", "model.gguf"))
    print(f"\n{sizes}; median of {args.runs} runs (min-max)\n")
    print("| command | stages | elapsed s | user+sys CPU s | max RSS GiB |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    out = os.environ.get("KILN_BENCH_OUT", os.path.join(HERE, "..", "..", "build", "bench-results"))
    if out:
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, f"onnx_tinyllama-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.csv")
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["file", "emit", "run", "elapsed_s", "cpu_s", "max_rss_gib"])
            w.writerows(data)
        print(f"wrote {os.path.normpath(path)}", file=sys.stderr)


def main():
    args = parse_args()
    if args.cmd == "make":
        make(args)
    else:
        bench(args)


if __name__ == "__main__":
    main()
