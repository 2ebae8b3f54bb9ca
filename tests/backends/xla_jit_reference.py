"""Writes a jitted function's HLO as jax.jit lowers it (argv[1]) and the module jax.jit's own
compile produces, canonical and without metadata (argv[2]); xla_worker_test compiles the first
through the XLA worker and expects the second."""
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402


def block(x, w1, w2):
    h = jax.nn.gelu(x @ w1)
    y = jax.nn.softmax(h @ w2, axis=-1)
    return jnp.mean(y * x[:, :16], axis=0), jnp.max(h)


args = (jnp.ones((32, 64)), jnp.ones((64, 128)), jnp.ones((128, 16)))
lowered = jax.jit(block).lower(*args)
with open(sys.argv[1], "w") as f:
    f.write(lowered.as_text(dialect="hlo"))
options = xc.hlo.HloPrintOptions.canonical()
options.print_metadata = False
text = lowered.compile().runtime_executable().hlo_modules()[0].to_string(options)
with open(sys.argv[2], "w") as f:
    f.write("\n".join(line for line in text.splitlines() if not line.startswith("HloModule")))
