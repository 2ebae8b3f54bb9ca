"""PyTorch eager, torch.compile and JAX on the GPU: the peers of bench/gpu_ops.

    python3 bench/peers/gpu_peers.py [--models a,b] [--batches 1,8] [--peers torch,inductor,jax]
        [--min-seconds S] [--device cuda] [--out partial.json] < ops.json > results.json

stdin: a JSON list of op specs as bench/peers/torch_ops.py reads them (bench/op_suite.h writes
them: mul, add_relu, softmax, layernorm, batchnorm, gelu, reduce_sum, reduce_max, transpose,
matmul, conv2d), or nothing. --models: zoo models (models/gen's torch_models and jax_models, the
same architectures and sizes as the HLO modules mltune runs) at each of --batches.

Timing, as the GPU runner times mltune: the L2 flushed before each call (a buffer twice its size
written), then the call, between CUDA events for the PyTorch peers, wall clock after
block_until_ready for JAX (whose flush is a jax write before the clock starts); 3 warm-up calls,
then calls until they add up to --min-seconds and number at least 5; the median in ms.
torch is eager under inference_mode; inductor is torch.compile (default mode), its compile time
reported apart; jax is jax.jit. matmul in torch eager is cuBLAS: it is the GEMM reference.
torch's defaults let cuDNN's f32 convolutions use TF32 tensor cores (torch.backends.cudnn.
allow_tf32), which mltune's strict-f32 check would reject; the peer torch-f32 is eager with TF32
off (its convolutions only: its matmuls are strict f32 by default already).

The peers run one after another, each over every case (eager and JAX first: torch.compile's
compiles take most of the time). --out is rewritten after every case, so that a run stopped by a
time limit keeps what it measured.

stdout: one JSON object {"device": name, "ops": {name: {peer: ms}}, "models": {"model/bN":
{peer: ms}}, "errors": {"case/peer": message}, "versions": {...}}. --device cpu runs the same code
on the CPU (a check of the script where no GPU is attached).
"""

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIN_REPS = 5
MAX_REPS = 2000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="", help="comma-separated zoo models (default: none)")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--peers", default="torch,inductor,jax")
    p.add_argument("--min-seconds", type=float, default=0.2)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--out", default="", help="also write the results here after every case")
    return p.parse_args()


class Timer:
    """Times a callable with the L2 flushed before each call."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.cuda = device == "cuda"
        l2 = torch.cuda.get_device_properties(0).L2_cache_size if self.cuda else 1 << 20
        self.flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)

    def _flush(self):
        self.flush.zero_()

    def time_torch(self, run, min_seconds):
        torch = self.torch
        for _ in range(3):
            run()
        times, spent = [], 0.0
        while len(times) < MAX_REPS and (len(times) < MIN_REPS or spent < min_seconds):
            self._flush()
            if self.cuda:
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                run()
                stop.record()
                stop.synchronize()
                t = start.elapsed_time(stop) * 1e-3
            else:
                t0 = time.perf_counter()
                run()
                t = time.perf_counter() - t0
            times.append(t)
            spent += t
        return statistics.median(times) * 1e3

    def time_jax(self, run, flush, min_seconds):
        for _ in range(3):
            run()
        times, spent = [], 0.0
        while len(times) < MAX_REPS and (len(times) < MIN_REPS or spent < min_seconds):
            flush()
            t0 = time.perf_counter()
            run()
            t = time.perf_counter() - t0
            times.append(t)
            spent += t
        return statistics.median(times) * 1e3


def torch_op(spec, device):
    """A no-argument callable computing the op on seeded inputs on `device`."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    kind = spec["kind"]

    def rand(*shape):
        return torch.rand(*shape, dtype=torch.float32, device=device) * 2 - 1

    if kind in ("mul", "add_relu", "gelu"):
        shape = spec["shape"]
        x, y, z = rand(*shape), rand(*shape), rand(*shape)
        if kind == "mul":
            return lambda: x * y
        if kind == "add_relu":
            return lambda: torch.relu(torch.relu(x + y) + z)
        return lambda: F.gelu(x, approximate="tanh")
    if kind == "softmax":
        x = rand(*spec["shape"])
        return lambda: torch.softmax(x, dim=1)
    if kind == "layernorm":
        rows, cols = spec["shape"]
        x, w, b = rand(rows, cols), rand(cols), rand(cols)
        return lambda: F.layer_norm(x, (cols,), w, b, 1e-5)
    if kind == "batchnorm":
        n, c, h, w = spec["shape"]
        x, scale, offset, mean = rand(n, c, h, w), rand(c), rand(c), rand(c)
        var = rand(c).abs() + 0.5
        return lambda: F.batch_norm(x, mean, var, scale, offset, False, 0.0, 1e-5)
    if kind in ("reduce_sum", "reduce_max"):
        x = rand(*spec["shape"])
        dim = spec.get("dim", 1 if kind == "reduce_sum" else 0)
        if kind == "reduce_sum":
            return lambda: x.sum(dim)
        return lambda: x.amax(dim)
    if kind == "transpose":
        x = rand(*spec["shape"])
        return lambda: x.t().contiguous()
    if kind == "matmul":
        m, n, k = spec["m"], spec["n"], spec["k"]
        a, b = rand(m, k), rand(k, n)
        return lambda: a @ b
    if kind == "conv2d":
        x = rand(spec["n"], spec["c"], spec["h"], spec["w"])
        w = rand(spec["k"], spec["c"], spec["r"], spec["s"])
        return lambda: F.conv2d(x, w, stride=spec["stride"], padding=spec["pad"])
    raise ValueError(f"unknown op kind {kind!r}")


def jax_op(spec):
    """(jitted callable of no arguments, flush callable) for the op in JAX."""
    import jax
    import jax.numpy as jnp

    kind = spec["kind"]
    key = jax.random.PRNGKey(0)

    def rand(*shape):
        nonlocal key
        key, sub = jax.random.split(key)
        return jax.random.uniform(sub, shape, jnp.float32, -1.0, 1.0)

    if kind in ("mul", "add_relu", "gelu"):
        shape = spec["shape"]
        args = (rand(*shape), rand(*shape), rand(*shape))
        fn = {"mul": lambda x, y, z: x * y,
              "add_relu": lambda x, y, z: jax.nn.relu(jax.nn.relu(x + y) + z),
              "gelu": lambda x, y, z: jax.nn.gelu(x, approximate=True)}[kind]
    elif kind == "softmax":
        args = (rand(*spec["shape"]),)
        fn = lambda x: jax.nn.softmax(x, axis=1)  # noqa: E731
    elif kind == "layernorm":
        rows, cols = spec["shape"]
        args = (rand(rows, cols), rand(cols), rand(cols))

        def fn(x, w, b):
            mean = x.mean(1, keepdims=True)
            var = ((x - mean) ** 2).mean(1, keepdims=True)
            return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + b
    elif kind == "batchnorm":
        n, c, h, w = spec["shape"]
        args = (rand(n, c, h, w), rand(c), rand(c), rand(c), jnp.abs(rand(c)) + 0.5)

        def fn(x, scale, offset, mean, var):
            r = lambda v: v.reshape(1, c, 1, 1)  # noqa: E731
            return (x - r(mean)) * jax.lax.rsqrt(r(var) + 1e-5) * r(scale) + r(offset)
    elif kind in ("reduce_sum", "reduce_max"):
        args = (rand(*spec["shape"]),)
        dim = spec.get("dim", 1 if kind == "reduce_sum" else 0)
        fn = (lambda x: x.sum(dim)) if kind == "reduce_sum" else (lambda x: x.max(dim))
    elif kind == "transpose":
        args = (rand(*spec["shape"]),)
        fn = lambda x: x.T  # noqa: E731
    elif kind == "matmul":
        m, n, k = spec["m"], spec["n"], spec["k"]
        args = (rand(m, k), rand(k, n))
        fn = lambda a, b: a @ b  # noqa: E731
    elif kind == "conv2d":
        args = (rand(spec["n"], spec["c"], spec["h"], spec["w"]),
                rand(spec["k"], spec["c"], spec["r"], spec["s"]))
        stride, pad = spec["stride"], spec["pad"]

        def fn(x, w):
            return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)])
    else:
        raise ValueError(f"unknown op kind {kind!r}")
    jitted = jax.jit(fn)
    flush_buf = jnp.zeros((1 << 24,), jnp.float32)
    flush_fn = jax.jit(lambda b: b + 1.0)
    return (lambda: jax.block_until_ready(jitted(*args)),
            lambda: jax.block_until_ready(flush_fn(flush_buf)))


def torch_model(name, batch, device, compiled):
    import torch
    import torch_models

    module, inputs = torch_models.make(name, batch)
    module = module.to(device)
    inputs = tuple(x.to(device) for x in inputs)
    fn = torch.compile(module) if compiled else module

    def run():
        with torch.inference_mode():
            return fn(*inputs)
    start = time.perf_counter()
    run()
    if device == "cuda":
        torch.cuda.synchronize()
    return run, time.perf_counter() - start


def jax_model(name, batch):
    import jax
    import jax.numpy as jnp
    import jax_models

    m = jax_models.make(name, batch)
    compiled = jax.jit(m.infer).lower(m.params, *m.inputs).compile()
    flush_buf = jnp.zeros((1 << 24,), jnp.float32)
    flush_fn = jax.jit(lambda b: b + 1.0)
    return (lambda: jax.block_until_ready(compiled(m.params, *m.inputs)),
            lambda: jax.block_until_ready(flush_fn(flush_buf)))


def main():
    args = parse_args()
    peers = [p for p in args.peers.split(",") if p]
    text = sys.stdin.read() if not sys.stdin.isatty() else ""
    specs = json.loads(text) if text.strip() else []
    sys.path.insert(0, str(ROOT / "models" / "gen"))
    import torch

    if args.device == "cpu":
        import os
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    timer = Timer(args.device)
    out = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
           "ops": {}, "models": {}, "errors": {}, "compile_s": {}, "versions": {}}
    for pkg in ("torch", "jax", "jaxlib"):
        try:
            out["versions"][pkg] = __import__(pkg).__version__
        except Exception:  # noqa: BLE001 -- a missing peer is reported, not fatal
            pass

    def record(table, case, peer, fn):
        try:
            table.setdefault(case, {})[peer] = fn()
        except Exception as e:  # noqa: BLE001 -- any failure is a result to record
            traceback.print_exc(file=sys.stderr)
            out["errors"][f"{case}/{peer}"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        if args.out:
            # Rewritten after every case, so that a run cut off by its time limit keeps what it
            # measured.
            Path(args.out).write_text(json.dumps(out))

    def op_run(spec, peer):
        if peer == "jax":
            run, flush = jax_op(spec)
            return timer.time_jax(run, flush, args.min_seconds)
        fn = torch_op(spec, args.device)
        return timer.time_torch(torch.compile(fn) if peer == "inductor" else fn, args.min_seconds)

    def model_run(name, batch, peer):
        if peer == "jax":
            run, flush = jax_model(name, batch)
            return timer.time_jax(run, flush, args.min_seconds)
        run, compile_s = torch_model(name, batch, args.device, peer == "inductor")
        out["compile_s"][f"{name}/b{batch}/{peer}"] = compile_s
        return timer.time_torch(run, args.min_seconds)

    models = [m for m in args.models.split(",") if m]
    batches = [int(b) for b in args.batches.split(",") if b]
    # One peer at a time over every case, in the order given: the quick peers (eager, JAX) cover
    # everything before torch.compile, whose compiles take most of the time.
    for peer in peers:
        strict = peer == "torch-f32"
        torch.backends.cudnn.allow_tf32 = not strict
        for spec in specs:
            if strict and spec["kind"] != "conv2d":
                continue
            record(out["ops"], spec["name"], peer,
                   lambda: op_run(spec, "torch" if strict else peer))
        if strict:
            torch.backends.cudnn.allow_tf32 = True
            continue
        for name in models:
            for batch in batches:
                case = f"{name}/b{batch}"
                record(out["models"], case, peer, lambda: model_run(name, batch, peer))
                print(f"[gpu_peers] {case}/{peer}: {out['models'].get(case, {}).get(peer)}",
                      file=sys.stderr, flush=True)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
