"""Flax definitions of the zoo's non-transformer, non-CNN models: a GNMT-like LSTM translator, a
WaveNet-like dilated convolution stack, DLRM and GraphSAGE. Each `__call__` returns logits."""

import flax.linen as nn
import jax
import jax.numpy as jnp

from jax_layers import INIT, dense


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
