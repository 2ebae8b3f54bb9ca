"""The JAX user's path (docs/python.md): tune a function through mltuned, run it with the result.

    tuned = mltune.jax.tune(f, x, task="xla-options", budget=20)   # a search, or the cache
    y = tuned(x)                                                  # matches jax.jit(f)(x)
    tuned = mltune.jax.cached(f, x) or jax.jit(f)                 # the cache only, no search

The graph sent is `jax.jit(f).lower(*args).as_text(dialect="hlo")`. The callable is compiled for
the example arguments' shapes and dtypes, as `jax.jit(f).lower(*args).compile()` is.
"""

from mltune.client import Client
from mltune.jax._lowering import Lowering, default_target
from mltune.jax._xla_module import ModuleFunction, device_for

__all__ = ["TunedFunction", "apply", "cached", "default_target", "tune"]

# What applying a result means, by what it holds.
APPLIED_MODULE = "optimized_module"  # a rewritten module, compiled by XLA with its options
APPLIED_OPTIONS = "compiler_options"  # jax's own lowering compiled with tuned XLA options
APPLIED_DEFAULT = "jax.jit"  # nothing beat XLA's default: jax.jit's own compile


class TunedFunction:
    """A function compiled with a tuned result. `result` is the daemon's TaskResult, `applied`
    one of "optimized_module", "compiler_options" and "jax.jit" (nothing beat XLA's default),
    `compiler_options` the XLA options compiled with, `job` the job that found it (None when the
    cache answered)."""

    def __init__(self, call, result, applied, compiler_options, job=None):
        self._call = call
        self.result = result
        self.applied = applied
        self.compiler_options = compiler_options
        self.job = job

    def __call__(self, *args):
        return self._call(*args)

    def __repr__(self):
        return (f"<TunedFunction {self.result.task} on {self.result.target}: {self.applied}, "
                f"{self.result.improvement_vs_baseline_percent:+.1f}% vs XLA's default>")


def _applicable(result):
    return result.compiler_options is not None or result.optimized_hlo is not None


def _apply(result, lowering, job=None):
    options = result.compiler_options or {}
    if result.optimized_hlo is not None and result.pass_sequence:
        call = ModuleFunction(result.optimized_hlo, options, lowering, device_for(result.target))
        return TunedFunction(call, result, APPLIED_MODULE, options, job)
    if not _applicable(result):
        raise ValueError(f"the result of {result.task} on {result.target} holds nothing JAX can "
                         "apply (no compiler_options or optimized_hlo artifact)")
    # The graph as given (no pass rewrote it): jax's own lowering, with the tuned options.
    call = lowering.lowered.compile(compiler_options=options or None)
    return TunedFunction(call, result, APPLIED_OPTIONS if options else APPLIED_DEFAULT, options,
                         job)


def apply(result, fn, *example_args):
    """`fn` compiled with `result` (a TaskResult of fn's graph, e.g. from Client.result or
    Client.lookup): a rewritten module runs in fn's place, compiler options compile fn's own
    lowering. Raises ValueError for a result that holds neither."""
    return _apply(result, Lowering(fn, example_args))


def _client(client, client_options):
    """The caller's client, or a new one from server=, token=, ... (closed by the caller)."""
    if client is not None:
        if client_options:
            raise TypeError("pass client= or connection options "
                            f"({', '.join(sorted(client_options))}), not both")
        return client, False
    return Client(**client_options), True


def tune(fn, *example_args, task="xla-options", budget=None, target=None, strategy="",
         options=None, skip_cache=False, progress=None, client=None, **client_options):
    """Tunes `fn` for `example_args` through mltuned and returns a TunedFunction that matches
    jax.jit(fn). The daemon answers from its cache when it tuned this graph with at least this
    budget; otherwise the job is watched (progress as for Client.watch) to its end.

    task: "xla-options" (XLA debug options) or "pass-order" (mltune's pass order, the module
    compiled by XLA). budget: steps or mltune.Budget; None = the daemon's default. target: None
    = the platform of JAX's default backend ("xla-cpu", "xla-gpu"). options: task options, e.g.
    {"measure_seconds": 0.05}. client: a mltune.Client, else one made from client_options
    (server=, ca=, cert=, key=, token=). Raises mltune.JobFailed when the job fails."""
    lowering = Lowering(fn, example_args)
    target = target or default_target()
    client, owned = _client(client, client_options)
    try:
        submitted = client.submit(lowering.hlo_text, task=task, target=target, budget=budget,
                                  strategy=strategy, options=options, skip_cache=skip_cache,
                                  name=lowering.name)
        job = submitted.job if submitted.cached else client.watch(submitted.job_id,
                                                                  progress=progress)
    finally:
        if owned:
            client.close()
    return _apply(job.result(task), lowering, None if submitted.cached else job)


def cached(fn, *example_args, task=None, target=None, client=None, **client_options):
    """fn compiled with what the cache holds for its graph, asking the daemon nothing but a
    lookup (nothing is queued); None on a miss, so `mltune.jax.cached(f, x) or jax.jit(f)` runs
    either way. task: None = the cached result of any task that JAX can apply with the lowest
    tuned runtime. target: as for tune."""
    lowering = Lowering(fn, example_args)
    client, owned = _client(client, client_options)
    try:
        found = client.lookup(lowering.hlo_text, task=task or "",
                              target=target or default_target(), name=lowering.name)
    finally:
        if owned:
            client.close()
    usable = [r for r in found.results if _applicable(r)]
    if not usable:
        return None
    return _apply(min(usable, key=lambda r: r.tuned_score), lowering)
