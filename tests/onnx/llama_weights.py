"""Weights for the ONNX test models (issue 6): deterministic random ones, or llama2.c's
checkpoint; and the q/k row permutations between Meta/GGUF's adjacent-pair RoPE layout and
Hugging Face's rotate-half layout."""
import struct

import numpy as np
import torch

from hf_llama import LlamaConfig, LlamaForCausalLM


def permute_to_hf(w, n_heads):
    """Meta adjacent pairs -> HF rotate-half rows (transformers'
    convert_llama_weights_to_hf.py permute); n_heads is the KV head count for wk."""
    dim1, dim2 = w.shape
    return w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def permute_to_gguf(w, n_heads):
    """HF rotate-half rows -> adjacent pairs, as llama.cpp's convert_hf_to_gguf.py
    LlamaModel.permute does (its inverse of the above)."""
    rows = w.shape[0]
    return w.reshape(n_heads, 2, rows // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def random_model(cfg, seed):
    """Random weights with unit-scale activations, so logits spread out and greedy picks are
    not near-ties a 1e-6 rounding difference could flip. With cfg.rope_style "adjacent" the
    q/k rows are permuted to GGUF's adjacent-pair order, so the same seed gives the same
    model (and the same GGUF) in both RoPE conventions."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif p.dim() == 2 and "embed_tokens" in name:
                # tied: the same table scores the output, where unit entries would give
                # logits near 60 (too coarse for a 1e-4 comparison at f32)
                std = cfg.hidden_size ** -0.25 if cfg.tie_word_embeddings else 1.0
                p.copy_(std * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
        if cfg.rope_style == "adjacent":
            for layer in model.model.layers:
                a = layer.self_attn
                a.q_proj.weight.copy_(permute_to_gguf(a.q_proj.weight, cfg.num_attention_heads))
                a.k_proj.weight.copy_(permute_to_gguf(a.k_proj.weight, cfg.num_key_value_heads))
    return model


def llama2c_model(path, rope_style="half"):
    """llama2.c legacy (version 0) checkpoint: 7 int32 (dim, hidden_dim, n_layers, n_heads,
    n_kv_heads, vocab_size, seq_len; vocab_size < 0 means an unshared classifier follows),
    then f32 arrays: token_embedding [vocab, dim], rms_att [L, dim], wq [L, dim, dim],
    wk [L, kv_dim, dim], wv [L, kv_dim, dim], wo [L, dim, dim], rms_ffn [L, dim],
    w1 [L, hidden, dim], w2 [L, dim, hidden], w3 [L, hidden, dim], rms_final [dim],
    freq_cis_real/imag [seq_len, head_dim/2] (unused: RoPE is recomputed), [wcls [vocab, dim]].
    Matrices are [out, in] like nn.Linear; wq/wk rows are in adjacent-pair order."""
    with open(path, "rb") as f:
        buf = f.read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack_from("<7i", buf, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    head = dim // n_heads
    kv_dim = n_kv * head
    pos = 28

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        if pos + 4 * n > len(buf):
            raise ValueError(f"{path}: truncated llama2.c checkpoint")
        a = np.frombuffer(buf, dtype="<f4", count=n, offset=pos).reshape(shape)
        pos += 4 * n
        return torch.from_numpy(a.copy())

    emb = take(vocab, dim)
    rms_att = take(n_layers, dim)
    wq, wk = take(n_layers, dim, dim), take(n_layers, kv_dim, dim)
    wv, wo = take(n_layers, kv_dim, dim), take(n_layers, dim, dim)
    rms_ffn = take(n_layers, dim)
    w1, w2, w3 = take(n_layers, hidden, dim), take(n_layers, dim, hidden), take(n_layers, hidden, dim)
    rms_final = take(dim)
    take(seq_len, head // 2)
    take(seq_len, head // 2)
    wcls = None if shared else take(vocab, dim)
    if pos != len(buf):
        raise ValueError(f"{path}: {len(buf) - pos} bytes left after the weights")

    cfg = LlamaConfig(hidden_size=dim, intermediate_size=hidden, num_hidden_layers=n_layers,
                      num_attention_heads=n_heads, num_key_value_heads=n_kv, vocab_size=vocab,
                      max_position_embeddings=seq_len, rope_theta=10000.0, rms_norm_eps=1e-5,
                      tie_word_embeddings=shared, rope_style=rope_style)
    model = LlamaForCausalLM(cfg).eval()
    # rotate-half wants HF's row order; adjacent pairs take llama2.c's (Meta's) rows as they are
    to_model = (lambda w, h: w) if rope_style == "adjacent" else permute_to_hf
    with torch.no_grad():
        m = model.model
        m.embed_tokens.weight.copy_(emb)
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            layer.input_layernorm.weight.copy_(rms_att[i])
            a.q_proj.weight.copy_(to_model(wq[i], n_heads))
            a.k_proj.weight.copy_(to_model(wk[i], n_kv))
            a.v_proj.weight.copy_(wv[i])
            a.o_proj.weight.copy_(wo[i])
            layer.post_attention_layernorm.weight.copy_(rms_ffn[i])
            layer.mlp.gate_proj.weight.copy_(w1[i])
            layer.mlp.down_proj.weight.copy_(w2[i])
            layer.mlp.up_proj.weight.copy_(w3[i])
        m.norm.weight.copy_(rms_final)
        if wcls is not None:
            model.lm_head.weight.copy_(wcls)
    return model
