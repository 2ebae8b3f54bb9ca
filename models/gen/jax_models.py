"""The zoo's JAX models by name: `make(name, batch)` gives seeded weights, seeded inputs, the
inference function and the training step (forward, backward, AdamW update) that scripts/zoo lowers
to HLO and bench/peers times."""

from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from configs import MODELS, SEED
from jax_layers import cross_entropy
from jax_other import DLRM, GNMT, GraphSAGE, LstmLM, Mamba, WaveNet
from jax_transformers import BERT, GPT2, T5, Llama, MoE, ViT, Whisper
from jax_vision import (ConvNeXt, EfficientNetB0, InceptionV3, MobileNetV2, RegNetY, ResNet50,
                        Swin, UNet)

# name -> (Flax module class, loss kind, uses batch norm)
REGISTRY = {
    "gpt2": (GPT2, "lm", False),
    "bert": (BERT, "mlm", False),
    "llama": (Llama, "lm", False),
    "t5": (T5, "lm", False),
    "vit": (ViT, "class", False),
    "resnet50": (ResNet50, "class", True),
    "inception_v3": (InceptionV3, "class", True),
    "mobilenet_v2": (MobileNetV2, "class", True),
    "gnmt": (GNMT, "lm", False),
    "wavenet": (WaveNet, "lm", False),
    "dlrm": (DLRM, "bce", False),
    "graphsage": (GraphSAGE, "class", False),
    # held out (configs.REPORT_MODELS)
    "convnext": (ConvNeXt, "class", False),
    "efficientnet": (EfficientNetB0, "class", True),
    "regnet": (RegNetY, "class", True),
    "swin": (Swin, "class", False),
    "whisper": (Whisper, "class", False),
    "unet": (UNet, "mse", False),
    "moe": (MoE, "lm", False),
    "mamba": (Mamba, "lm", False),
    "lstm_lm": (LstmLM, "lm", False),
}


@dataclass
class ZooModel:
    """One model at one batch size: its weights, inputs, labels and step functions."""

    name: str
    batch: int
    variables: Any  # {"params": ..., "batch_stats": ...}; ShapeDtypeStructs when abstract
    inputs: tuple
    labels: tuple
    opt_state: Any
    infer: Callable  # infer(variables, *inputs) -> logits
    train_step: Callable  # train_step(variables, opt_state, *inputs, *labels) -> (v, o, loss)

    @property
    def params(self):
        return self.variables

    def parameter_count(self):
        return int(sum(np.prod(x.shape) for x in jax.tree.leaves(self.variables["params"])))


def _data(name, cfg, batch, rng):
    """Seeded inputs and labels of `name` at `batch` (numpy arrays)."""
    ints = lambda high, *shape: rng.integers(0, high, size=shape, dtype=np.int32)
    floats = lambda *shape: rng.standard_normal(shape, dtype=np.float32)
    if name in ("gpt2", "llama", "moe", "mamba", "lstm_lm"):
        return (ints(cfg["vocab"], batch, cfg["seq"]),), (ints(cfg["vocab"], batch, cfg["seq"]),)
    if name == "bert":
        t = cfg["seq"]
        inputs = (ints(cfg["vocab"], batch, t), ints(2, batch, t), np.ones((batch, t), np.int32))
        masked = (rng.random((batch, t)) < 0.15).astype(np.float32)
        return inputs, (ints(cfg["vocab"], batch, t), masked)
    if name == "t5":
        src, tgt = ints(cfg["vocab"], batch, cfg["src_seq"]), ints(cfg["vocab"], batch,
                                                                   cfg["tgt_seq"])
        return (src, tgt), (ints(cfg["vocab"], batch, cfg["tgt_seq"]),)
    if name in ("vit", "resnet50", "inception_v3", "mobilenet_v2", "convnext", "efficientnet",
                "regnet", "swin"):
        return (floats(batch, cfg["image"], cfg["image"], 3),), (ints(cfg["classes"], batch),)
    if name == "whisper":
        return (floats(batch, cfg["mels"], cfg["frames"]),), (ints(cfg["classes"], batch),)
    if name == "unet":
        # A noised image and its timestep; the label is the noise.
        image = (floats(batch, cfg["image"], cfg["image"], 3),)
        return image + (ints(cfg["timesteps"], batch),), (floats(batch, cfg["image"],
                                                                  cfg["image"], 3),)
    if name == "gnmt":
        src = ints(cfg["src_vocab"], batch, cfg["src_seq"])
        tgt = ints(cfg["tgt_vocab"], batch, cfg["tgt_seq"])
        return (src, tgt), (ints(cfg["tgt_vocab"], batch, cfg["tgt_seq"]),)
    if name == "wavenet":
        samples = ints(cfg["classes"], batch, cfg["samples"])
        onehot = np.eye(cfg["classes"], dtype=np.float32)[samples]
        return (onehot,), (ints(cfg["classes"], batch, cfg["samples"]),)
    if name == "dlrm":
        inputs = (floats(batch, cfg["dense"]), ints(cfg["rows"], batch, cfg["tables"]))
        return inputs, (rng.integers(0, 2, size=(batch,)).astype(np.float32),)
    if name == "graphsage":
        # `batch` disjoint copies of one fixed random graph.
        n, e = cfg["nodes"], cfg["edges"]
        graph = np.random.default_rng(SEED + 1)
        src0, dst0 = graph.integers(0, n, e, dtype=np.int32), graph.integers(0, n, e, dtype=np.int32)
        offsets = (np.arange(batch, dtype=np.int32) * n)[:, None]
        src, dst = (src0[None] + offsets).reshape(-1), (dst0[None] + offsets).reshape(-1)
        return (floats(batch * n, cfg["features"]), src, dst), (ints(cfg["classes"], batch * n),)
    raise KeyError(name)


def _loss(kind, logits, labels):
    if kind == "bce":
        return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, labels[0]))
    if kind == "mse":
        return jnp.mean(jnp.square(logits - labels[0]))
    if kind == "mlm":
        return cross_entropy(logits, labels[0], labels[1])
    return cross_entropy(logits, labels[0])


def make(name, batch, abstract=False):
    """Builds `name` at `batch`. With `abstract`, weights and inputs are shapes only (nothing is
    computed), enough to lower to HLO."""
    module_cls, kind, batch_norm = REGISTRY[name]
    cfg = MODELS[name]
    module = module_cls(cfg)
    inputs, labels = _data(name, cfg, batch, np.random.default_rng(SEED))
    if abstract:
        inputs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in inputs)
        labels = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in labels)
    else:
        inputs, labels = tuple(map(jnp.asarray, inputs)), tuple(map(jnp.asarray, labels))
    init = lambda key, *xs: module.init(key, *xs)
    key = jax.random.PRNGKey(SEED)
    variables = (jax.eval_shape(init, key, *inputs) if abstract else jax.jit(init)(key, *inputs))
    variables = dict(variables)
    optimizer = optax.adamw(1e-4, weight_decay=0.01)
    opt_state = (jax.eval_shape(optimizer.init, variables["params"]) if abstract
                 else optimizer.init(variables["params"]))
    infer_kw = {"train": False} if batch_norm else {}

    def infer(variables, *xs):
        return module.apply(variables, *xs, **infer_kw)

    def train_step(variables, opt_state, *args):
        xs, ys = args[: len(inputs)], args[len(inputs):]

        def loss_fn(params):
            full = dict(variables, params=params)
            if batch_norm:
                logits, updated = module.apply(full, *xs, train=True, mutable=["batch_stats"])
                return _loss(kind, logits, ys), updated
            return _loss(kind, module.apply(full, *xs), ys), {}

        (loss, updated), grads = jax.value_and_grad(loss_fn, has_aux=True)(variables["params"])
        updates, opt_state = optimizer.update(grads, opt_state, variables["params"])
        new = dict(variables, params=optax.apply_updates(variables["params"], updates))
        new.update(updated)
        return new, opt_state, loss

    return ZooModel(name, batch, variables, inputs, labels, opt_state, infer, train_step)
