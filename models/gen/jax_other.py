"""Flax definitions of the zoo's non-transformer, non-CNN models: a GNMT-like LSTM translator, a
WaveNet-like dilated convolution stack, DLRM, GraphSAGE, a Mamba-style selective state-space LM
and a 2-layer LSTM LM. Each `__call__` returns logits."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from jax_layers import INIT, RMSNorm, dense



def lstm(hidden, name, reverse=False):
    """A unidirectional LSTM layer over [B,T,F] (a scan: a while loop in HLO)."""
    return nn.RNN(nn.LSTMCell(hidden), reverse=reverse, keep_order=True, name=name)


class GNMT(nn.Module):
    """GNMT-like translator: bidirectional first encoder layer, residual connections from the third
    layer, additive attention from the first decoder layer's outputs, context fed to every upper
    decoder layer; the decoder runs teacher-forced over the target."""

    cfg: dict

    @nn.compact
    def __call__(self, src, tgt):
        c = self.cfg
        h = c["hidden"]
        x = nn.Embed(c["src_vocab"], h, embedding_init=INIT, name="src_embed")(src)
        x = jnp.concatenate([lstm(h // 2, "enc_fwd")(x), lstm(h // 2, "enc_bwd", True)(x)], -1)
        for i in range(1, c["enc_layers"]):
            out = lstm(h, f"enc_{i}")(x)
            x = x + out if i >= 2 else out
        enc = x
        y = nn.Embed(c["tgt_vocab"], h, embedding_init=INIT, name="tgt_embed")(tgt)
        y = lstm(h, "dec_0")(y)
        # Additive attention: score(q, k) = v . tanh(Wq q + Wk k).
        keys = dense(h, False, "att_key")(enc)
        query = dense(h, False, "att_query")(y)
        scores = dense(1, False, "att_v")(jnp.tanh(query[:, :, None, :] + keys[:, None, :, :]))
        weights = jax.nn.softmax(scores[..., 0], axis=-1)
        context = jnp.einsum("bts,bsh->bth", weights, enc)
        for i in range(1, c["dec_layers"]):
            out = lstm(h, f"dec_{i}")(jnp.concatenate([y, context], -1))
            y = y + out if i >= 2 else out
        return dense(c["tgt_vocab"], True, "proj")(jnp.concatenate([y, context], -1))


class WaveNet(nn.Module):
    """WaveNet-like: causal convolutions with dilations 1..512 repeated, gated tanh-sigmoid units,
    residual and skip 1x1 convolutions, ReLU-1x1-ReLU-1x1 head over mu-law classes."""

    cfg: dict

    @nn.compact
    def __call__(self, onehot):
        c = self.cfg
        x = nn.Conv(c["residual"], (2,), padding=[(1, 0)], name="causal")(onehot)
        skip = 0.0
        for cycle in range(c["dilation_cycles"]):
            for j in range(c["cycle_layers"]):
                d = 2**j
                name = f"{cycle}_{j}"
                h = nn.Conv(2 * c["residual"], (2,), kernel_dilation=(d,), padding=[(d, 0)],
                            name=f"dilated_{name}")(x)
                gated = jnp.tanh(h[..., : c["residual"]]) * jax.nn.sigmoid(h[..., c["residual"]:])
                skip = skip + nn.Conv(c["skip"], (1,), name=f"skip_{name}")(gated)
                x = x + nn.Conv(c["residual"], (1,), name=f"res_{name}")(gated)
        h = nn.Conv(c["skip"], (1,), name="head_1")(nn.relu(skip))
        return nn.Conv(c["classes"], (1,), name="head_2")(nn.relu(h))


class DLRM(nn.Module):
    """DLRM: bottom MLP on the dense features, one embedding table per sparse feature, pairwise
    dot products of the 27 vectors (upper triangle), top MLP to one logit."""

    cfg: dict

    @nn.compact
    def __call__(self, dense_x, sparse_ids):
        c = self.cfg
        x = dense_x
        for i, n in enumerate(c["bottom"]):
            x = nn.relu(dense(n, name=f"bottom_{i}")(x))
        tables = [self.param(f"table_{t}", nn.initializers.uniform(0.05), (c["rows"], c["dim"]))
                  for t in range(c["tables"])]
        embedded = [jnp.take(table, sparse_ids[:, t], axis=0) for t, table in enumerate(tables)]
        vectors = jnp.stack([x] + embedded, axis=1)
        dots = jnp.einsum("bid,bjd->bij", vectors, vectors)
        rows, cols = jnp.triu_indices(vectors.shape[1], k=1)
        z = jnp.concatenate([x, dots[:, rows, cols]], axis=-1)
        for i, n in enumerate(c["top"]):
            z = dense(n, name=f"top_{i}")(z)
            z = nn.relu(z) if i + 1 < len(c["top"]) else z
        return z[:, 0]


class GraphSAGE(nn.Module):
    """GraphSAGE with mean aggregation: h' = W_self h + W_neigh mean(h of in-neighbours), two
    layers (ReLU between) over an edge list (a gather and a scatter-add per layer)."""

    cfg: dict

    @nn.compact
    def __call__(self, features, src, dst):
        c = self.cfg
        n = features.shape[0]
        degree = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst, n)
        inv_degree = 1.0 / jnp.maximum(degree, 1.0)[:, None]
        h = features
        for i, width in enumerate((c["hidden"], c["classes"])):
            neigh = jax.ops.segment_sum(h[src], dst, n) * inv_degree
            h = dense(width, True, f"self_{i}")(h) + dense(width, False, f"neigh_{i}")(neigh)
            h = nn.relu(h) if i == 0 else h
        return h


def dt_bias_init(key, shape, dtype=jnp.float32, dt_min=1e-3, dt_max=0.1):
    """Mamba's delta bias: softplus^-1 of steps drawn log-uniformly in [dt_min, dt_max]."""
    u = jax.random.uniform(key, shape, dtype)
    dt = jnp.exp(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    return dt + jnp.log(-jnp.expm1(-dt))


class MambaBlock(nn.Module):
    """Mamba's selective SSM mixer: in-projection to x and the gate z, causal depthwise conv1d +
    SiLU on x, input-dependent delta (low-rank, softplus), B and C, the recurrence
    h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t, y_t = C_t h_t + D x_t (a scan over the
    sequence: a while loop in HLO), gating by SiLU(z), out-projection."""

    cfg: dict

    @nn.compact
    def __call__(self, x):
        c = self.cfg
        inner, n, rank = c["expand"] * c["d_model"], c["d_state"], c["dt_rank"]
        xs, z = jnp.split(dense(2 * inner, False, "in_proj")(x), 2, axis=-1)
        xs = nn.Conv(inner, (c["d_conv"],), padding=[(c["d_conv"] - 1, 0)],
                     feature_group_count=inner, name="conv")(xs)
        xs = nn.silu(xs)
        dt, bm, cm = jnp.split(dense(rank + 2 * n, False, "x_proj")(xs), [rank, rank + n], -1)
        dt = jax.nn.softplus(nn.Dense(inner, kernel_init=INIT, bias_init=dt_bias_init,
                                      name="dt_proj")(dt))                # [B, T, inner]
        a_log = self.param("A_log", lambda _, s: jnp.log(jnp.broadcast_to(
            jnp.arange(1, n + 1, dtype=jnp.float32), s)), (inner, n))
        d_skip = self.param("D", nn.initializers.ones, (inner,))
        decay = jnp.exp(dt[..., None] * -jnp.exp(a_log))                 # [B, T, inner, n]
        drive = (dt * xs)[..., None] * bm[:, :, None, :]                 # [B, T, inner, n]

        def step(h, inputs):
            decay_t, drive_t, c_t = inputs
            h = decay_t * h + drive_t
            return h, jnp.einsum("bdn,bn->bd", h, c_t)

        h0 = jnp.zeros((x.shape[0], inner, n), x.dtype)
        _, ys = jax.lax.scan(step, h0, (jnp.swapaxes(decay, 0, 1), jnp.swapaxes(drive, 0, 1),
                                        jnp.swapaxes(cm, 0, 1)))
        y = jnp.swapaxes(ys, 0, 1) + xs * d_skip
        return dense(c["d_model"], False, "out_proj")(y * nn.silu(z))


class Mamba(nn.Module):
    """Mamba LM: embedding, pre-RMSNorm residual Mamba blocks, final RMSNorm, LM head tied to
    the embedding."""

    cfg: dict

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        embed = nn.Embed(c["vocab"], c["d_model"], embedding_init=INIT, name="embed")
        x = embed(ids)
        for i in range(c["layers"]):
            x = x + MambaBlock(c, name=f"mixer_{i}")(RMSNorm(1e-5, name=f"norm_{i}")(x))
        return embed.attend(RMSNorm(1e-5, name="norm_f")(x))


class LstmLM(nn.Module):
    """LSTM language model: embedding, stacked LSTM layers (scans), untied softmax layer."""

    cfg: dict

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        x = nn.Embed(c["vocab"], c["embed"], embedding_init=INIT, name="embed")(ids)
        for i in range(c["layers"]):
            x = lstm(c["hidden"], f"lstm_{i}")(x)
        return dense(c["vocab"], True, "softmax")(x)
