"""A JAX function lowered for its example arguments: the HLO text mltune tunes (what
`jax.jit(fn).lower(*args).as_text(dialect="hlo")` prints) and what running a compiled module
in the function's place needs (its argument and output pytrees, the arguments jax kept)."""

import jax
import numpy as np


def default_target():
    """The mltune target of JAX's default backend: xla-gpu on a GPU, else xla-cpu."""
    return "xla-gpu" if jax.default_backend() == "gpu" else "xla-cpu"


def _graph_name(fn):
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "fn"
    return f"jax:{module}.{name}" if module else f"jax:{name}"


class Lowering:
    def __init__(self, fn, example_args):
        # A function jitted already keeps its own jit options (donation, static arguments).
        self.jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        self.lowered = self.jitted.lower(*example_args)
        self.hlo_text = self.lowered.as_text(dialect="hlo")
        self.name = _graph_name(fn)
        leaves, self.in_tree = jax.tree_util.tree_flatten(example_args)
        self.in_types = [(tuple(np.shape(leaf)), jax.dtypes.canonicalize_dtype(
            getattr(leaf, "dtype", None) or np.result_type(leaf))) for leaf in leaves]
        # jax leaves unused arguments out of the module (keep_unused=False): which it kept.
        compile_args = getattr(getattr(self.lowered, "_lowering", None), "compile_args", {})
        kept = compile_args.get("kept_var_idx")
        self.kept = sorted(kept) if kept is not None else list(range(len(leaves)))
        self.out_tree = jax.tree_util.tree_structure(jax.eval_shape(self.jitted, *example_args))
