"""Flax building blocks the zoo's transformer models share: attention (multi-head and grouped-query,
with an optional additive bias), rotary embeddings, RMSNorm and T5's relative position buckets."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

INIT = nn.initializers.normal(0.02)


def dense(features, use_bias=True, name=None):
    """A Dense layer with the zoo's common initializer."""
    return nn.Dense(features, use_bias=use_bias, kernel_init=INIT, name=name)


def causal_mask(t):
    """[1, 1, t, t] boolean mask that lets position i attend to positions <= i."""
    return jnp.tril(jnp.ones((t, t), dtype=bool))[None, None]


def attend(q, k, v, mask=None, bias=None, scale=True):
    """Softmax attention of q [B,T,H,D] over k, v [B,S,KV,D]; KV divides H (grouped-query)."""
    heads, kv_heads = q.shape[2], k.shape[2]
    if kv_heads != heads:
        k = jnp.repeat(k, heads // kv_heads, axis=2)
        v = jnp.repeat(v, heads // kv_heads, axis=2)
    logits = jnp.einsum("bthd,bshd->bhts", q, k)
    if scale:
        logits = logits / math.sqrt(q.shape[-1])
    if bias is not None:
        logits = logits + bias
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhts,bshd->bthd", weights, v)


class MultiHeadAttention(nn.Module):
    """Projections, attention and output projection; `kv_heads` < `heads` gives grouped-query."""

    heads: int
    head_dim: int
    kv_heads: int = 0
    use_bias: bool = True
    scale: bool = True
    key_bias: bool = True  # Whisper's key projection has none

    @nn.compact
    def __call__(self, x, context=None, mask=None, bias=None, rope=None):
        context = x if context is None else context
        kv_heads = self.kv_heads or self.heads
        b, t, s = x.shape[0], x.shape[1], context.shape[1]
        q = dense(self.heads * self.head_dim, self.use_bias, "query")(x)
        k = dense(kv_heads * self.head_dim, self.use_bias and self.key_bias, "key")(context)
        v = dense(kv_heads * self.head_dim, self.use_bias, "value")(context)
        q = q.reshape(b, t, self.heads, self.head_dim)
        k = k.reshape(b, s, kv_heads, self.head_dim)
        v = v.reshape(b, s, kv_heads, self.head_dim)
        if rope is not None:
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        out = attend(q, k, v, mask, bias, self.scale).reshape(b, t, self.heads * self.head_dim)
        return dense(x.shape[-1], self.use_bias, "out")(out)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned scale and no bias (Llama, T5)."""

    epsilon: float = 1e-6

    @nn.compact
    def __call__(self, x):
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        variance = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
        return x * jax.lax.rsqrt(variance + self.epsilon) * scale


def rope_tables(seq, head_dim, theta):
    """Cosine and sine tables [seq, head_dim/2] of rotary position embeddings."""
    inv = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    angles = jnp.arange(seq, dtype=jnp.float32)[:, None] * inv[None, :]
    return jnp.cos(angles), jnp.sin(angles)


def apply_rope(x, tables):
    """Rotates the two halves of x [B,T,H,D] by the position's angles (the GPT-NeoX layout)."""
    cos, sin = tables
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def relative_buckets(q_len, k_len, buckets, max_distance, bidirectional):
    """T5's bucket index [q_len, k_len] of each relative position (exact near, log-spaced far)."""
    rel = jnp.arange(k_len)[None, :] - jnp.arange(q_len)[:, None]
    out = jnp.zeros_like(rel)
    if bidirectional:
        buckets //= 2
        out = out + (rel > 0).astype(jnp.int32) * buckets
        rel = jnp.abs(rel)
    else:
        rel = -jnp.minimum(rel, 0)
    exact = buckets // 2
    far = exact + (
        jnp.log(jnp.maximum(rel, 1).astype(jnp.float32) / exact)
        / math.log(max_distance / exact)
        * (buckets - exact)
    ).astype(jnp.int32)
    far = jnp.minimum(far, buckets - 1)
    return out + jnp.where(rel < exact, rel, far)


def cross_entropy(logits, labels, weights=None):
    """Mean softmax cross-entropy of integer labels, optionally weighted per position."""
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    if weights is None:
        return jnp.mean(nll)
    return jnp.sum(nll * weights) / jnp.maximum(jnp.sum(weights), 1.0)
