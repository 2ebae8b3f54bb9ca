"""Flax definitions of the zoo's transformers: GPT-2, BERT (masked-LM head), a Llama-style decoder,
T5 (encoder-decoder), ViT, a Whisper audio encoder and a Mixtral-style mixture-of-experts decoder.
Each `__call__` returns logits (the UNet's: the predicted noise)."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from jax_layers import INIT, MultiHeadAttention, RMSNorm, causal_mask, dense, relative_buckets
from jax_layers import rope_tables


class GPT2(nn.Module):
    """GPT-2: learned positions, pre-LN blocks, tanh-GELU MLP, LM head tied to the embedding."""

    cfg: dict

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        d, t = c["d_model"], ids.shape[1]
        wte = nn.Embed(c["vocab"], d, embedding_init=INIT, name="wte")
        x = wte(ids) + nn.Embed(c["max_pos"], d, embedding_init=INIT, name="wpe")(jnp.arange(t))
        mask = causal_mask(t)
        for i in range(c["layers"]):
            h = nn.LayerNorm(epsilon=1e-5, name=f"ln1_{i}")(x)
            x = x + MultiHeadAttention(c["heads"], d // c["heads"], name=f"attn_{i}")(h, mask=mask)
            h = nn.LayerNorm(epsilon=1e-5, name=f"ln2_{i}")(x)
            h = nn.gelu(dense(c["d_ff"], name=f"fc_{i}")(h), approximate=True)
            x = x + dense(d, name=f"proj_{i}")(h)
        return wte.attend(nn.LayerNorm(epsilon=1e-5, name="ln_f")(x))


class BERT(nn.Module):
    """BERT: word, position and type embeddings, post-LN encoder, masked-LM head (tied decoder)."""

    cfg: dict

    @nn.compact
    def __call__(self, ids, types, attention_mask):
        c = self.cfg
        d, t = c["d_model"], ids.shape[1]
        words = nn.Embed(c["vocab"], d, embedding_init=INIT, name="words")
        x = words(ids)
        x = x + nn.Embed(c["max_pos"], d, embedding_init=INIT, name="positions")(jnp.arange(t))
        x = x + nn.Embed(c["type_vocab"], d, embedding_init=INIT, name="types")(types)
        x = nn.LayerNorm(epsilon=1e-12, name="ln_emb")(x)
        mask = attention_mask[:, None, None, :].astype(bool)
        for i in range(c["layers"]):
            a = MultiHeadAttention(c["heads"], d // c["heads"], name=f"attn_{i}")(x, mask=mask)
            x = nn.LayerNorm(epsilon=1e-12, name=f"ln1_{i}")(x + a)
            h = nn.gelu(dense(c["d_ff"], name=f"fc_{i}")(x), approximate=False)
            x = nn.LayerNorm(epsilon=1e-12, name=f"ln2_{i}")(x + dense(d, name=f"proj_{i}")(h))
        h = nn.gelu(dense(d, name="mlm_dense")(x), approximate=False)
        h = nn.LayerNorm(epsilon=1e-12, name="mlm_ln")(h)
        bias = self.param("mlm_bias", nn.initializers.zeros, (c["vocab"],))
        return words.attend(h) + bias


class Llama(nn.Module):
    """Llama-style decoder: RMSNorm, rotary positions, grouped-query attention, SwiGLU MLP."""

    cfg: dict

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        d, t, hd = c["d_model"], ids.shape[1], c["d_model"] // c["heads"]
        x = nn.Embed(c["vocab"], d, embedding_init=INIT, name="embed")(ids)
        mask, rope = causal_mask(t), rope_tables(t, hd, c["rope_theta"])
        for i in range(c["layers"]):
            h = RMSNorm(1e-5, name=f"attn_norm_{i}")(x)
            x = x + MultiHeadAttention(c["heads"], hd, c["kv_heads"], use_bias=False,
                                       name=f"attn_{i}")(h, mask=mask, rope=rope)
            h = RMSNorm(1e-5, name=f"mlp_norm_{i}")(x)
            gate = nn.silu(dense(c["d_ff"], False, f"gate_{i}")(h))
            x = x + dense(d, False, f"down_{i}")(gate * dense(c["d_ff"], False, f"up_{i}")(h))
        return dense(c["vocab"], False, "lm_head")(RMSNorm(1e-5, name="norm")(x))


class T5(nn.Module):
    """T5: pre-RMSNorm encoder and decoder, unscaled attention with bucketed relative position
    biases (computed once per stack), ReLU feed-forward, LM head tied to the embedding."""

    cfg: dict

    def _bias(self, name, q_len, k_len, bidirectional):
        c = self.cfg
        table = nn.Embed(c["buckets"], c["heads"], embedding_init=INIT, name=name)
        buckets = relative_buckets(q_len, k_len, c["buckets"], c["max_distance"], bidirectional)
        return jnp.transpose(table(buckets), (2, 0, 1))[None]

    def _ffn(self, x, name):
        h = RMSNorm(name=f"{name}_norm")(x)
        h = nn.relu(dense(self.cfg["d_ff"], False, f"{name}_wi")(h))
        return x + dense(x.shape[-1], False, f"{name}_wo")(h)

    @nn.compact
    def __call__(self, src, tgt):
        c = self.cfg
        heads, dkv = c["heads"], c["d_kv"]
        shared = nn.Embed(c["vocab"], c["d_model"], embedding_init=nn.initializers.normal(1.0),
                          name="shared")
        x = shared(src)
        bias = self._bias("enc_rel", src.shape[1], src.shape[1], True)
        for i in range(c["layers"]):
            h = RMSNorm(name=f"enc_attn_norm_{i}")(x)
            x = x + MultiHeadAttention(heads, dkv, use_bias=False, scale=False,
                                       name=f"enc_attn_{i}")(h, bias=bias)
            x = self._ffn(x, f"enc_ffn_{i}")
        enc = RMSNorm(name="enc_norm")(x)
        y = shared(tgt)
        t = tgt.shape[1]
        bias, mask = self._bias("dec_rel", t, t, False), causal_mask(t)
        for i in range(c["layers"]):
            h = RMSNorm(name=f"dec_self_norm_{i}")(y)
            y = y + MultiHeadAttention(heads, dkv, use_bias=False, scale=False,
                                       name=f"dec_self_{i}")(h, mask=mask, bias=bias)
            h = RMSNorm(name=f"dec_cross_norm_{i}")(y)
            y = y + MultiHeadAttention(heads, dkv, use_bias=False, scale=False,
                                       name=f"dec_cross_{i}")(h, context=enc)
            y = self._ffn(y, f"dec_ffn_{i}")
        y = RMSNorm(name="dec_norm")(y) * (c["d_model"] ** -0.5)
        return shared.attend(y)


class ViT(nn.Module):
    """ViT: patch embedding by a strided convolution, class token, learned positions, pre-LN
    encoder, classification head on the class token."""

    cfg: dict

    @nn.compact
    def __call__(self, images):
        c = self.cfg
        d, p = c["d_model"], c["patch"]
        x = nn.Conv(d, (p, p), strides=(p, p), padding="VALID", name="patch")(images)
        b = x.shape[0]
        x = x.reshape(b, -1, d)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, d))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, d)), x], axis=1)
        x = x + self.param("pos", INIT, (1, x.shape[1], d))
        for i in range(c["layers"]):
            h = nn.LayerNorm(epsilon=1e-6, name=f"ln1_{i}")(x)
            x = x + MultiHeadAttention(c["heads"], d // c["heads"], name=f"attn_{i}")(h)
            h = nn.LayerNorm(epsilon=1e-6, name=f"ln2_{i}")(x)
            h = nn.gelu(dense(c["d_ff"], name=f"fc_{i}")(h), approximate=False)
            x = x + dense(d, name=f"proj_{i}")(h)
        x = nn.LayerNorm(epsilon=1e-6, name="ln_f")(x)
        return dense(c["classes"], name="head")(x[:, 0])


def sinusoids(length, channels):
    """Whisper's fixed positions [length, channels]: sines then cosines of geometric frequencies
    (built from iotas in the graph)."""
    increment = math.log(10000.0) / (channels // 2 - 1)
    inv = jnp.exp(-increment * jnp.arange(channels // 2, dtype=jnp.float32))
    scaled = jnp.arange(length, dtype=jnp.float32)[:, None] * inv[None, :]
    return jnp.concatenate([jnp.sin(scaled), jnp.cos(scaled)], axis=1)


class Whisper(nn.Module):
    """Whisper's audio encoder on a log-mel spectrogram [B, mels, frames]: conv1d k=3 + GELU,
    conv1d k=3 stride 2 + GELU, sinusoidal positions, pre-LN layers (key projection without
    bias, exact GELU), final LayerNorm; then WhisperForAudioClassification's head: linear
    projection, mean over time, classifier."""

    cfg: dict

    @nn.compact
    def __call__(self, mel):
        c = self.cfg
        d = c["d_model"]
        x = jnp.transpose(mel, (0, 2, 1))                                # [B, frames, mels]
        x = nn.gelu(nn.Conv(d, (3,), padding=[(1, 1)], name="conv1")(x), approximate=False)
        x = nn.gelu(nn.Conv(d, (3,), (2,), padding=[(1, 1)], name="conv2")(x),
                    approximate=False)
        x = x + sinusoids(x.shape[1], d)[None]
        for i in range(c["layers"]):
            h = nn.LayerNorm(epsilon=1e-5, name=f"ln1_{i}")(x)
            x = x + MultiHeadAttention(c["heads"], d // c["heads"], key_bias=False,
                                       name=f"attn_{i}")(h)
            h = nn.LayerNorm(epsilon=1e-5, name=f"ln2_{i}")(x)
            h = nn.gelu(dense(c["d_ff"], name=f"fc1_{i}")(h), approximate=False)
            x = x + dense(d, name=f"fc2_{i}")(h)
        x = nn.LayerNorm(epsilon=1e-5, name="ln_post")(x)
        x = jnp.mean(dense(c["proj"], name="projector")(x), axis=1)
        return dense(c["classes"], name="classifier")(x)


class MoEFeedForward(nn.Module):
    """Top-k mixture of SwiGLU experts with sort-based dispatch. The router's top-k logits
    (lax.top_k) give each token k experts and softmax gates; the N*k assignments are sorted by
    expert id (stable argsort), so expert e's assignments are the run starting at the exclusive
    cumulative count of the experts before it; expert e takes the first `capacity` of its run
    (a gather of their tokens into [experts, capacity, d]; later ones are dropped), the experts
    run as batched matmuls, and their outputs, weighted by the gates, are scatter-added back to
    their tokens."""

    experts: int
    top_k: int
    d_ff: int
    capacity_factor: float

    @nn.compact
    def __call__(self, x):
        b, t, d = x.shape
        e, k = self.experts, self.top_k
        tokens = x.reshape(b * t, d)
        n = tokens.shape[0] * k
        capacity = math.ceil(self.capacity_factor * n / e)
        top_logits, chosen = jax.lax.top_k(dense(e, False, "router")(tokens), k)   # [N, k]
        gates = jax.nn.softmax(top_logits, axis=-1).reshape(n)
        expert_of = chosen.reshape(n)
        token_of = jnp.arange(n, dtype=jnp.int32) // k
        order = jnp.argsort(expert_of)                                   # stable
        counts = jnp.sum(expert_of[:, None] == jnp.arange(e, dtype=jnp.int32)[None, :], axis=0,
                         dtype=jnp.int32)
        starts = jnp.cumsum(counts) - counts
        position = jnp.arange(capacity, dtype=jnp.int32)[None, :]
        valid = position < counts[:, None]                               # [E, C]
        assignment = order[jnp.minimum(starts[:, None] + position, n - 1)]
        token = token_of[assignment]
        weight = jnp.where(valid, gates[assignment], 0.0)
        xin = tokens[token]                                              # [E, C, d]
        w_gate = self.param("w_gate", INIT, (e, d, self.d_ff))
        w_up = self.param("w_up", INIT, (e, d, self.d_ff))
        w_down = self.param("w_down", INIT, (e, self.d_ff, d))
        h = nn.silu(jnp.einsum("ecd,edf->ecf", xin, w_gate)) * jnp.einsum("ecd,edf->ecf", xin,
                                                                           w_up)
        y = jnp.einsum("ecf,efd->ecd", h, w_down) * weight[..., None]
        out = jnp.zeros_like(tokens).at[token.reshape(-1)].add(y.reshape(-1, d))
        return out.reshape(b, t, d)


class MoE(nn.Module):
    """Mixtral-style decoder: RMSNorm, RoPE, grouped-query attention, a top-k mixture of SwiGLU
    experts in place of the MLP, untied LM head."""

    cfg: dict

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        d, t, hd = c["d_model"], ids.shape[1], c["d_model"] // c["heads"]
        x = nn.Embed(c["vocab"], d, embedding_init=INIT, name="embed")(ids)
        mask, rope = causal_mask(t), rope_tables(t, hd, c["rope_theta"])
        for i in range(c["layers"]):
            h = RMSNorm(1e-5, name=f"attn_norm_{i}")(x)
            x = x + MultiHeadAttention(c["heads"], hd, c["kv_heads"], use_bias=False,
                                       name=f"attn_{i}")(h, mask=mask, rope=rope)
            h = RMSNorm(1e-5, name=f"moe_norm_{i}")(x)
            x = x + MoEFeedForward(c["experts"], c["top_k"], c["d_ff"], c["capacity_factor"],
                                   name=f"moe_{i}")(h)
        return dense(c["vocab"], False, "lm_head")(RMSNorm(1e-5, name="norm")(x))
