#!/usr/bin/python3
"""Exports a Hugging Face-layout Llama (hf_llama.py) with torch.onnx.export, and writes the
same weights as a GGUF plus the torch logits at export time (issue 6). Run with the Python
that has torch and onnx (Debian's /usr/bin/python3).

  export_llama.py --out DIR [--llama2c stories260K.bin | --seed N] [--opset 14|17] [--past]
                  [--dtype f32|f16] [--external-data] [--tied] [--no-constant-folding]
                  [--no-reference] [--rope half|adjacent] [--dim N --layers N --heads N --kv-heads N --ffn N ...]

DIR gets model.onnx (+ model.onnx.data with --external-data), config.json, model.gguf and
reference.json:
{prompt, input_ids, generated_ids, generated_text, logits}, logits holding one vocab-long
row per prompt position of the prefill, then one per generated token's forward (the layout
of `kiln eval --dump-logits`). With --past the rows come from a prefill with an empty past
and then one-token steps that feed the returned present back as the past."""
import argparse
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import F32, GGML_F16, GGML_F32, STRING, U32, GgufReader, GgufWriter  # noqa: E402
from hf_llama import LlamaConfig, NoCacheWrapper, WithPastWrapper  # noqa: E402
import onnx_numpy_eval  # noqa: E402
from llama_weights import llama2c_model, permute_to_gguf, random_model  # noqa: E402
from spm_vocab import SpmTokenizer, random_vocab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOKENIZER_GGUF = os.path.join(HERE, "..", "..", "..", "shared", "models", "stories260K.gguf")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0, help="random-weight seed")
    p.add_argument("--llama2c", help="llama2.c checkpoint (stories260K.bin) instead of random weights")
    p.add_argument("--tokenizer-gguf", default=DEFAULT_TOKENIZER_GGUF,
                   help="with --llama2c: GGUF whose tokenizer.ggml.* keys are copied")
    p.add_argument("--opset", type=int, default=17, choices=[14, 17])
    p.add_argument("--past", action="store_true", help="decoder-with-past signature (Optimum's)")
    p.add_argument("--dtype", default="f32", choices=["f32", "f16"],
                   help="f16: matrices stored as f16 initializers (Cast to f32 before use)")
    p.add_argument("--external-data", action="store_true",
                   help="initializers in model.onnx.data beside model.onnx")
    p.add_argument("--tied", action="store_true", help="random model: lm_head tied to the embedding")
    p.add_argument("--no-constant-folding", action="store_true",
                   help="keep the exporter's Transpose of each [out, in] weight (and other "
                        "constant subgraphs) instead of folding them into initializers")
    p.add_argument("--rope", default="half", choices=["half", "adjacent"],
                   help="half: Hugging Face's rotate_half with q/k rows permuted to its layout; "
                        "adjacent: Meta's adjacent-pair rotation (real-valued) on the GGUF "
                        "layout's rows, unpermuted (the GGUF written is the same either way)")
    p.add_argument("--prompt", default="Once upon a time")
    p.add_argument("-n", "--n-predict", type=int, default=8, help="greedy tokens in reference.json")
    p.add_argument("--no-reference", action="store_true",
                   help="skip reference.json and the numpy replay (big models, e.g. for "
                        "timing the import of a TinyLlama-shape export)")
    # the small default config; odd sizes on purpose (ffn 172, GQA 2:1)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=172)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--llama3-rope", type=int, default=0, metavar="CTX",
                   help="Llama 3 RoPE scaling for this original context (inv_freq scaled; the "
                        "GGUF gets rope_freqs.weight)")
    p.add_argument("--eps", type=float, default=1e-5)
    return p.parse_args(argv)


def build_model(args):
    if args.llama2c:
        model = llama2c_model(args.llama2c, args.rope)
        vocab = {k: v for k, v in GgufReader(args.tokenizer_gguf).kv.items()
                 if k.startswith("tokenizer.ggml.")}
    else:
        cfg = LlamaConfig(hidden_size=args.dim, intermediate_size=args.ffn,
                          num_hidden_layers=args.layers, num_attention_heads=args.heads,
                          num_key_value_heads=args.kv_heads, vocab_size=args.vocab,
                          max_position_embeddings=args.ctx, rope_theta=args.rope_theta,
                          rms_norm_eps=args.eps, tie_word_embeddings=args.tied,
                          rope_style=args.rope, llama3_original_context=args.llama3_rope)
        model = random_model(cfg, args.seed)
        vocab = random_vocab(args.vocab)
    if args.dtype == "f16":
        # Round the matrices to f16 once, so torch, ONNX and GGUF hold the same numbers.
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 2:
                    p.copy_(p.half().float())
    return model, vocab


def write_hf_config(cfg, path):
    """config.json as Hugging Face / Optimum put it beside model.onnx: kiln reads the
    context length from it and checks the rest against the graph."""
    with open(path, "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": cfg.hidden_size, "intermediate_size": cfg.intermediate_size,
                   "num_hidden_layers": cfg.num_hidden_layers,
                   "num_attention_heads": cfg.num_attention_heads,
                   "num_key_value_heads": cfg.num_key_value_heads,
                   "vocab_size": cfg.vocab_size,
                   "max_position_embeddings": cfg.max_position_embeddings,
                   "rope_theta": cfg.rope_theta, "rms_norm_eps": cfg.rms_norm_eps,
                   "tie_word_embeddings": cfg.tie_word_embeddings}, f, indent=1)


def write_gguf(model, vocab, path, dtype):
    cfg = model.config
    w = GgufWriter()
    w.add("general.architecture", STRING, "llama")
    w.add("general.name", STRING, "kiln-onnx-test")
    w.add("llama.context_length", U32, cfg.max_position_embeddings)
    w.add("llama.embedding_length", U32, cfg.hidden_size)
    w.add("llama.block_count", U32, cfg.num_hidden_layers)
    w.add("llama.feed_forward_length", U32, cfg.intermediate_size)
    w.add("llama.attention.head_count", U32, cfg.num_attention_heads)
    w.add("llama.attention.head_count_kv", U32, cfg.num_key_value_heads)
    w.add("llama.rope.dimension_count", U32, cfg.head_dim)
    w.add("llama.rope.freq_base", F32, cfg.rope_theta)
    w.add("llama.attention.layer_norm_rms_epsilon", F32, cfg.rms_norm_eps)
    for k, (t, v, e) in vocab.items():
        w.add(k, t, v, e)

    mat = GGML_F16 if dtype == "f16" else GGML_F32  # norms stay f32, as llama.cpp keeps them

    def np_(t):
        return t.detach().numpy()

    def qk(w, heads):  # adjacent: the model's rows are already in GGUF's order
        return w if cfg.rope_style == "adjacent" else permute_to_gguf(w, heads)

    m = model.model
    w.add_tensor("token_embd.weight", np_(m.embed_tokens.weight), mat)
    for i, layer in enumerate(m.layers):
        a, f = layer.self_attn, layer.mlp
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np_(layer.input_layernorm.weight))
        w.add_tensor(b + "attn_q.weight", np_(qk(a.q_proj.weight, cfg.num_attention_heads)), mat)
        w.add_tensor(b + "attn_k.weight", np_(qk(a.k_proj.weight, cfg.num_key_value_heads)), mat)
        w.add_tensor(b + "attn_v.weight", np_(a.v_proj.weight), mat)
        w.add_tensor(b + "attn_output.weight", np_(a.o_proj.weight), mat)
        w.add_tensor(b + "ffn_norm.weight", np_(layer.post_attention_layernorm.weight))
        w.add_tensor(b + "ffn_gate.weight", np_(f.gate_proj.weight), mat)
        w.add_tensor(b + "ffn_up.weight", np_(f.up_proj.weight), mat)
        w.add_tensor(b + "ffn_down.weight", np_(f.down_proj.weight), mat)
    w.add_tensor("output_norm.weight", np_(m.norm.weight))
    if cfg.llama3_original_context:  # as llama.cpp's converter writes Llama 3 scaling
        w.add_tensor("rope_freqs.weight", np.array(cfg.llama3_freq_factors(), dtype=np.float32))
    if not cfg.tie_word_embeddings:
        w.add_tensor("output.weight", np_(model.lm_head.weight), mat)
    w.write(path)


def empty_past(cfg, batch=1, length=0):
    shape = (batch, cfg.num_key_value_heads, length, cfg.head_dim)
    return [torch.zeros(shape) for _ in range(2 * cfg.num_hidden_layers)]


def export_onnx(model, args, path):
    cfg = model.config
    if args.past:
        wrapper = WithPastWrapper(model)
        # Traced with 3 new tokens after 4 cached ones, batch 2: nothing specialises to 1.
        b, s, past = 2, 3, 4
        ids = torch.randint(0, cfg.vocab_size, (b, s))
        inputs = (ids, torch.ones(b, past + s, dtype=torch.int64),
                  torch.arange(past, past + s).unsqueeze(0).expand(b, s).contiguous(),
                  *[torch.randn(t.shape) for t in empty_past(cfg, b, past)])
        names_in = ["input_ids", "attention_mask", "position_ids"]
        names_out = ["logits"]
        axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
                "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
                "position_ids": {0: "batch_size", 1: "sequence_length"},
                "logits": {0: "batch_size", 1: "sequence_length"}}
        for i in range(cfg.num_hidden_layers):
            for kind in ("key", "value"):
                names_in.append(f"past_key_values.{i}.{kind}")
                names_out.append(f"present.{i}.{kind}")
                axes[names_in[-1]] = {0: "batch_size", 2: "past_sequence_length"}
                axes[names_out[-1]] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
    else:
        wrapper = NoCacheWrapper(model)
        inputs = (torch.randint(0, cfg.vocab_size, (2, 5)),)
        names_in, names_out = ["input_ids"], ["logits"]
        axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
                "logits": {0: "batch_size", 1: "sequence_length"}}
    # Into a scratch directory: past 2 GB torch writes one file per initializer beside it.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.onnx.export(wrapper, inputs, os.path.join(tmp, "model.onnx"),
                              input_names=names_in, output_names=names_out, dynamic_axes=axes,
                              opset_version=args.opset,
                              do_constant_folding=not args.no_constant_folding)
        proto = onnx.load(os.path.join(tmp, "model.onnx"))
    if args.dtype == "f16":
        to_f16_weights(proto, model)
    weight_bytes = sum(len(t.raw_data) for t in proto.graph.initializer)
    if args.external_data or weight_bytes > 2**31 - 2**24:  # protobuf's 2 GB limit
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data")
    else:
        onnx.save_model(proto, path)
    onnx.checker.check_model(path)  # by path, so external data is checked too
    return proto


def to_f16_weights(proto, model):
    """Stores each f32 initializer that is one of the model's matrices (or its transpose, as the
    exporter folds Linear's) as f16, read through a Cast to f32: weight-only f16 storage."""
    # candidates by shape and first column/row, so a big model is not compared in full N^2
    mats = {}
    for p in model.parameters():
        if p.dim() == 2:
            m = p.detach().numpy()
            mats.setdefault((m.shape, m[0, :8].tobytes()), []).append(m)
            mats.setdefault((m.shape[::-1], m[:8, 0].tobytes()), []).append(m.T)
    g = proto.graph
    casts = []
    for init in g.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or len(init.dims) != 2:
            continue
        a = numpy_helper.to_array(init)
        if not any(np.array_equal(a, m) for m in mats.get((a.shape, a[0, :8].tobytes()), [])):
            continue
        name = init.name
        init.CopyFrom(numpy_helper.from_array(a.astype(np.float16), name + "_f16"))
        casts.append(helper.make_node("Cast", [name + "_f16"], [name], to=onnx.TensorProto.FLOAT,
                                      name=name + "_cast"))
    for i, node in enumerate(casts):
        g.node.insert(i, node)


def reference(model, args, tok):
    """Greedy decode in torch, recording the rows `kiln eval --dump-logits` writes."""
    cfg = model.config
    ids = tok.encode(args.prompt)
    rows, gen = [], []
    with torch.no_grad():
        if args.past:
            past = empty_past(cfg)
            step, pos = ids, 0
            for _ in range(args.n_predict):
                n = len(step)
                out = WithPastWrapper(model)(torch.tensor([step]), torch.ones(1, pos + n, dtype=torch.int64),
                                             torch.arange(pos, pos + n).unsqueeze(0), *past)
                rows += out[0][0].tolist()
                past, pos = list(out[1:]), pos + n
                nxt = int(out[0][0, -1].argmax())
                gen.append(nxt)
                if nxt == tok.eos:
                    break
                step = [nxt]
        else:
            seq = list(ids)
            for _ in range(args.n_predict):
                logits = NoCacheWrapper(model)(torch.tensor([seq]))[0]
                nxt = int(logits[-1].argmax())
                gen.append(nxt)
                if nxt == tok.eos:
                    break
                seq.append(nxt)
            rows = logits.tolist()
    # kiln runs no forward for the last generated token (nor after EOS)
    rows = rows[:len(ids) + len(gen) - 1]
    text = b"".join(tok.decode_piece(t) for t in gen if t != tok.eos).decode("utf-8", "replace")
    return {"prompt": args.prompt, "input_ids": ids, "generated_ids": gen,
            "generated_text": text, "logits": rows}


def check_onnx(path, args, cfg, ref):
    """Replays reference()'s forwards on the exported graph (onnx_numpy_eval) and returns the
    max abs diff from torch's logits: proves the export, not kiln."""
    seq = ref["input_ids"] + ref["generated_ids"]
    n_rows = len(ref["logits"])
    if args.past:
        kv = (1, cfg.num_key_value_heads, 0, cfg.head_dim)
        past = [np.zeros(kv, np.float32)] * (2 * cfg.num_hidden_layers)
        rows, pos, step = [], 0, len(ref["input_ids"])
        while pos < n_rows:
            feeds = {"input_ids": np.array([seq[pos:pos + step]], np.int64),
                     "attention_mask": np.ones((1, pos + step), np.int64),
                     "position_ids": np.arange(pos, pos + step, dtype=np.int64)[None]}
            for i in range(cfg.num_hidden_layers):
                feeds[f"past_key_values.{i}.key"] = past[2 * i]
                feeds[f"past_key_values.{i}.value"] = past[2 * i + 1]
            out = onnx_numpy_eval.run(path, feeds)
            rows.append(out["logits"][0])
            past = [out[f"present.{i}.{k}"] for i in range(cfg.num_hidden_layers)
                    for k in ("key", "value")]
            pos, step = pos + step, 1
        got = np.concatenate(rows)
    else:
        got = onnx_numpy_eval.run(path, {"input_ids": np.array([seq[:n_rows]], np.int64)})["logits"][0]
    return float(np.abs(got - np.array(ref["logits"], np.float32)).max())


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.set_grad_enabled(False)
    model, vocab = build_model(args)
    write_gguf(model, vocab, os.path.join(args.out, "model.gguf"), args.dtype)
    write_hf_config(model.config, os.path.join(args.out, "config.json"))
    export_onnx(model, args, os.path.join(args.out, "model.onnx"))
    if args.no_reference:
        print(f"wrote {args.out}/model.onnx, model.gguf (no reference)")
        return
    ref = reference(model, args, SpmTokenizer(vocab))
    ref["variant"] = {k: getattr(args, k) for k in ("opset", "past", "dtype", "external_data", "seed",
                                                    "llama2c", "tied", "rope")}
    diff = check_onnx(os.path.join(args.out, "model.onnx"), args, model.config, ref)
    if not diff <= 1e-4:
        sys.exit(f"export_llama: the exported graph's logits differ from torch's by {diff:.3g}")
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"wrote {args.out}/model.onnx, model.gguf, reference.json: ids {ref['input_ids']} -> "
          f"{ref['generated_ids']} {ref['generated_text']!r}; ONNX graph (numpy) vs torch: "
          f"max abs diff {diff:.3g} over {len(ref['logits'])} rows")


if __name__ == "__main__":
    main()
