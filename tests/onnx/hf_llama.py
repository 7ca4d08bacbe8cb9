"""A small PyTorch Llama written the way Hugging Face transformers' modeling_llama.py (v4.3x)
writes it, so that torch.onnx.export produces the graph shapes real HF exports have (issue 6):
RMSNorm as pow/mean/add/rsqrt/mul, rotary tables computed from an inv_freq buffer and
position_ids, rotate_half as slice/neg/cat, repeat_kv as expand+reshape, the causal mask built
from torch.full(finfo.min)/triu/arange-compare and the 2-D attention_mask, SwiGLU MLP.

Weights are in HF's layout: nn.Linear [out, in], q/k rows in rotate-half order (the GGUF
layout is adjacent pairs; see export_llama.py for the permutations). With
LlamaConfig.rope_style = "adjacent" the rotation is Meta's (llama/model.py's
apply_rotary_emb) written with real tensors, as an exporter of Meta's code would trace it:
pairs (x[2i], x[2i+1]) rotated by cos/sin [batch, seq, head_dim/2], and the q/k rows are then
in GGUF's adjacent-pair order, unpermuted. No transformers package
is used: the code follows its structure so the traced ops are the same."""
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class LlamaConfig:
    hidden_size: int = 64
    intermediate_size: int = 172
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vocab_size: int = 512
    max_position_embeddings: int = 128
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = False
    rope_style: str = "half"  # "half" (Hugging Face's rotate_half) or "adjacent" (Meta's pairs)
    # > 0: Llama 3 RoPE scaling (rope_type "llama3": factor 8, low 1, high 4) for this
    # original context, folded into inv_freq as transformers' _compute_llama3_parameters does
    llama3_original_context: int = 0

    def llama3_freq_factors(self):
        """The divisor of each rotated pair's frequency (GGUF's rope_freqs.weight)."""
        factor, low, high, orig = 8.0, 1.0, 4.0, self.llama3_original_context
        out = []
        for i in range(0, self.head_dim, 2):
            wavelen = 2 * math.pi * self.rope_theta ** (i / self.head_dim)
            if wavelen < orig / high:
                out.append(1.0)
            elif wavelen > orig / low:
                out.append(factor)
            else:
                smooth = (orig / wavelen - low) / (high - low)
                out.append(1.0 / ((1 - smooth) / factor + smooth))
        return out

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    # HF >= 4.38: cos/sin computed per call from inv_freq and position_ids (no cached table).
    def __init__(self, dim, max_position_embeddings=2048, base=10000.0, adjacent=False,
                 freq_factors=None):
        super().__init__()
        self.dim = dim
        self.adjacent = adjacent
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.int64).float()
                                        / self.dim))
        if freq_factors is not None:  # Llama 3 scaling: one divisor per pair
            inv_freq = inv_freq / torch.tensor(freq_factors, dtype=torch.float32)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        # adjacent pairs: one angle per pair, [batch, seq, dim/2]
        emb = freqs if self.adjacent else torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def apply_rotary_pos_emb_adjacent(q, k, cos, sin, unsqueeze_dim=1):
    """Meta's apply_rotary_emb (view_as_complex(x.reshape(..., -1, 2)) * freqs_cis) in real
    arithmetic: pairs (x[2i], x[2i+1]) rotated by the angle of frequency i."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)

    def rotate(x):
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)

    return rotate(q), rotate(k)


def repeat_kv(hidden_states, n_rep):
    """[batch, kv_heads, seq, head_dim] -> [batch, kv_heads * n_rep, seq, head_dim]."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep,
                                                           slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        if config.rope_style not in ("half", "adjacent"):
            raise ValueError(f"rope_style {config.rope_style!r}: half or adjacent")
        self.adjacent = config.rope_style == "adjacent"
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, config.max_position_embeddings,
                                               config.rope_theta, self.adjacent,
                                               config.llama3_freq_factors()
                                               if config.llama3_original_context else None)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value=None):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)

        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads,
                                         self.head_dim).transpose(1, 2)

        cos, sin = self.rotary_emb(value_states, position_ids)
        rope = apply_rotary_pos_emb_adjacent if self.adjacent else apply_rotary_pos_emb
        query_states, key_states = rope(query_states, key_states, cos, sin)

        if past_key_value is not None:
            # The cache holds post-RoPE keys, before repeat_kv (as HF's DynamicCache does).
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)
        present = (key_states, value_states)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output), present


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, attention_mask, position_ids,
                                                past_key_value)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states, present


def update_causal_mask(attention_mask, input_tensor, cache_position, target_length):
    """HF 4.38-4.40 LlamaModel._update_causal_mask: a 4-D additive mask [batch, 1, q, kv],
    finfo.min where a query may not look (future positions, padding), 0 elsewhere."""
    dtype = input_tensor.dtype
    min_dtype = torch.finfo(dtype).min
    sequence_length = input_tensor.shape[1]
    causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
    # Python control flow: traced with more than one query token, so the Trilu is kept;
    # the arange compare below makes the mask right for one token as well.
    if sequence_length != 1:
        causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
    if attention_mask is not None:
        causal_mask = causal_mask.clone()
        mask_length = attention_mask.shape[-1]
        padding_mask = causal_mask[..., :mask_length].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
        causal_mask[..., :mask_length] = causal_mask[..., :mask_length].masked_fill(padding_mask,
                                                                                    min_dtype)
    return causal_mask


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None):
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen_tokens = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
        if position_ids is None:
            position_ids = cache_position.unsqueeze(0)
        target_length = past_seen_tokens + inputs_embeds.shape[1]
        causal_mask = update_causal_mask(attention_mask, inputs_embeds, cache_position, target_length)

        hidden_states = inputs_embeds
        presents = []
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = layer(hidden_states, causal_mask, position_ids, past)
            presents.append(present)
        return self.norm(hidden_states), presents


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None):
        hidden_states, presents = self.model(input_ids, attention_mask, position_ids, past_key_values)
        logits = self.lm_head(hidden_states).float()
        return logits, presents


class NoCacheWrapper(nn.Module):
    """Export signature (a): input_ids -> logits."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        return self.lm(input_ids)[0]


class WithPastWrapper(nn.Module):
    """Export signature (b), Optimum's decoder-with-past: input_ids, attention_mask,
    position_ids, then per layer past key and value [batch, kv_heads, past_len, head_dim]
    flattened; returns logits then per layer present key and value."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask, position_ids, *past_flat):
        past = [(past_flat[2 * i], past_flat[2 * i + 1]) for i in range(len(past_flat) // 2)]
        logits, presents = self.lm(input_ids, attention_mask, position_ids, past)
        out = [logits]
        for k, v in presents:
            out += [k, v]
        return tuple(out)
