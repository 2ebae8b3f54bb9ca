"""mltune.jax against a real mltuned with an XLA worker on this interpreter's jax: tune() with
xla-options and with pass-order returns a callable that matches jax.jit(fn), cached() answers
from the cache only, and both kinds of result (compiler options, a rewritten module) run like
jax.jit(fn) when applied. Tiny functions and budgets: the searches take seconds."""

import dataclasses
import json
import tempfile
import unittest

import jax
import jax.numpy as jnp
import mltune
import mltune.jax
import numpy as np
from mltuned_process import MltunedProcess

# Timed work per candidate: enough to rank a microsecond-scale function, little enough to keep
# each search to seconds.
FAST = {"measure_seconds": 0.02}


def make_fn(scale):
    """A small dense layer and a reduction, with a pytree in and out; `scale` makes each test's
    graph its own, so no test answers from another's cache."""
    def fn(x, params):
        h = jnp.tanh(x @ params["w"] + params["b"]) * scale
        return {"h": h, "norm": (h * h).sum() + (x * 0.0).sum()}
    return fn


def example_args(seed=0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.uniform(-1, 1, (8, 16)).astype(np.float32))
    params = {"w": jnp.asarray(rng.uniform(-0.5, 0.5, (16, 8)).astype(np.float32)),
              "b": jnp.asarray(rng.uniform(-0.1, 0.1, (8,)).astype(np.float32))}
    return x, params


class JaxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="mltune-jax-test-")
        cls.daemon = MltunedProcess(cls.dir.name)
        cls.client = mltune.Client(cls.daemon.address, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()
        cls.dir.cleanup()

    def assert_runs_like_jit(self, tuned, fn, args):
        for seed in (1, 2):  # not only the example arguments
            fresh = example_args(seed)
            want = jax.jit(fn)(*fresh)
            got = tuned(*fresh)
            self.assertEqual(jax.tree_util.tree_structure(got),
                             jax.tree_util.tree_structure(want))
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                self.assertEqual((g.shape, g.dtype), (w.shape, w.dtype))
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)

    def test_xla_options_tune_then_cached(self):
        fn, args = make_fn(1.0), example_args()
        self.assertIsNone(mltune.jax.cached(fn, *args, client=self.client))
        tuned = mltune.jax.tune(fn, *args, task="xla-options", budget=3, strategy="random",
                                options=FAST, client=self.client, progress=False)
        self.assertEqual(tuned.result.task, "xla-options")
        self.assertEqual(tuned.result.target, "xla-cpu")
        self.assertIsNotNone(tuned.job)
        # {} when XLA's default was best; either way what tune applied is what the result says.
        self.assertEqual(tuned.compiler_options, tuned.result.compiler_options)
        self.assertEqual(tuned.applied, "compiler_options" if tuned.compiler_options
                         else "jax.jit")
        self.assert_runs_like_jit(tuned, fn, args)

        cached = mltune.jax.cached(fn, *args, client=self.client)
        self.assertIsNotNone(cached)
        self.assertEqual(cached.result.task, "xla-options")
        self.assertTrue(cached.result.from_cache)
        self.assert_runs_like_jit(cached, fn, args)
        # The same request again: the cache answers, no job.
        again = mltune.jax.tune(fn, *args, task="xla-options", budget=3, strategy="random",
                                options=FAST, client=self.client, progress=False)
        self.assertIsNone(again.job)

    def test_pass_order_tune(self):
        fn, args = make_fn(2.0), example_args()
        tuned = mltune.jax.tune(fn, *args, task="pass-order", budget=2, strategy="greedy",
                                options=FAST, client=self.client, progress=False)
        self.assertEqual((tuned.result.task, tuned.result.target), ("pass-order", "xla-cpu"))
        expected = ("optimized_module" if tuned.result.pass_sequence else
                    "compiler_options" if tuned.compiler_options else "jax.jit")
        self.assertEqual(tuned.applied, expected)
        self.assert_runs_like_jit(tuned, fn, args)
        self.assertIsNotNone(mltune.jax.cached(fn, *args, task="pass-order",
                                               client=self.client))

    def test_a_rewritten_module_runs_like_jit(self):
        # On XLA a rewritten module is kept only when it measures faster, which a tiny function
        # cannot promise; on target cpu (op count) the search always rewrites it.
        fn, args = make_fn(3.0), example_args()
        hlo = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        submitted = self.client.submit(hlo, task="pass-order", target="cpu", budget=30,
                                       strategy="greedy")
        result = self.client.watch(submitted.job_id, progress=False).result()
        self.assertTrue(result.pass_sequence)
        tuned = mltune.jax.apply(result, fn, *args)
        self.assertEqual(tuned.applied, "optimized_module")
        self.assertEqual(tuned.compiler_options, {})
        self.assert_runs_like_jit(tuned, fn, args)

        # With the options a pass-order result on xla-cpu carries: XLA's own passes off.
        options = {"xla_disable_hlo_passes": "algsimp,cse,dce", "xla_cpu_enable_fast_math": False}
        artifacts = dict(result.artifacts, compiler_options=json.dumps(options).encode())
        with_options = dataclasses.replace(result, target="xla-cpu", artifacts=artifacts)
        tuned = mltune.jax.apply(with_options, fn, *args)
        self.assertEqual((tuned.applied, tuned.compiler_options), ("optimized_module", options))
        self.assert_runs_like_jit(tuned, fn, args)
        with self.assertRaisesRegex(TypeError, "argument 0 is float32\\[8, 4\\] where the "
                                    "function was tuned for float32\\[8, 16\\]"):
            tuned(jnp.zeros((8, 4)), args[1])

    def test_compiler_options_run_like_jit(self):
        fn, args = make_fn(4.0), example_args()
        result = mltune.TaskResult(task="xla-options", target="xla-cpu", artifacts={
            "compiler_options": b'{"xla_cpu_prefer_vector_width": 128, '
                                b'"xla_cpu_enable_fast_min_max": true}'})
        tuned = mltune.jax.apply(result, fn, *args)
        self.assertEqual(tuned.applied, "compiler_options")
        self.assert_runs_like_jit(tuned, fn, args)

    def test_a_result_jax_cannot_apply_is_refused(self):
        fn, args = make_fn(5.0), example_args()
        with self.assertRaisesRegex(ValueError, "holds nothing JAX can apply"):
            mltune.jax.apply(mltune.TaskResult(task="tile", target="cpu"), fn, *args)
        with self.assertRaisesRegex(ValueError, "not a result for this function"):
            other = jax.jit(lambda v: v + 1).lower(args[0]).as_text(dialect="hlo")
            result = mltune.TaskResult(task="pass-order", target="xla-cpu", artifacts={
                "optimized_hlo": other.encode(), "pass_sequence": b"dce"})
            mltune.jax.apply(result, fn, *args)


if __name__ == "__main__":
    unittest.main()
