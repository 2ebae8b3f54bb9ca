#!/usr/bin/python3
"""PyTorch eager as the peer of the CPU operator benchmarks: times each op spec read on stdin.

Run with Debian's interpreter, which sees python3-torch (`python3` on PATH may not):

    echo '[{"name": "mm", "kind": "matmul", "m": 256, "n": 256, "k": 256}]' |
        /usr/bin/python3 bench/peers/torch_ops.py --threads 1

stdin: a JSON list of specs, each {"name": unique string, "kind": ..., plus the kind's fields}:
    mul, add_relu, gelu            {"shape": [d0, d1, ...]}
    softmax, layernorm             {"shape": [rows, cols]}
    reduce_sum, reduce_max         {"shape": [rows, cols], "dim": 0 or 1}  (default: sum 1, max 0)
    batchnorm                      {"shape": [n, c, h, w]}
    matmul                         {"m": M, "n": N, "k": K}            a[M,K] @ b[K,N]
    conv2d                         {"n", "c", "h", "w", "k", "r", "s", "stride", "pad"}
    mlp                            {"batch": B, "sizes": [d0, d1, ..., dL]}   L F.linear layers
                                   (weight [d_i+1, d_i], bias), ReLU between them, none after
stdout: one JSON object {name: {"alloc_s": median s, "out_s": median s or null, "reps": n}}.

"alloc_s" is the op as users write it, PyTorch allocating the outputs (on this machine fresh
large buffers page-fault, which can dominate elementwise ops); "out_s" writes into preallocated
outputs through `out=` where the op has it, so a speed-up is not only the allocator. "reps" is
the number of timed repeats of the alloc variant (the out variant's count is not reported).

Timing: 3 warm-up calls, then repeats until the timed calls add up to --min-seconds (at least
5, at most 2000); the median is reported. f32 everywhere; inputs are torch.rand(...) * 2 - 1
after torch.manual_seed(0) per spec, so every run sees the same data. Ops run under
torch.inference_mode(), as inference code does, so autograd bookkeeping is not timed.

BLAS: benchmark with libopenblas0-pthread installed (scripts/setup); without it Debian's torch
uses the reference BLAS and matmul is ~30x slower. torch.set_num_threads does not reach
OpenBLAS's own thread pool, which uses every core, so OPENBLAS_NUM_THREADS (and
OMP_NUM_THREADS) are set to --threads before torch is loaded; measured here, "one thread"
matmul otherwise ran on both cores. An inherited OPENBLAS_CORETYPE (the environment here
sets Haswell, i.e. AVX2 kernels, at half the AVX-512 speed) is dropped so that OpenBLAS picks
the CPU's own kernels, as it does for a user without that variable; --keep-openblas-coretype
honours it. The BLAS in use is reported on stderr.

Exit status: 0 on success, 2 on a bad spec (unknown kind, missing field, duplicate name) with
the reason on stderr.
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1,
                        help="intra- and inter-op threads, and BLAS threads")
    parser.add_argument("--min-seconds", type=float, default=0.3,
                        help="timed seconds per op and variant (at least 5, at most 2000 reps)")
    parser.add_argument("--self-test", action="store_true",
                        help="run a tiny spec of every kind (ignores stdin) and check out= "
                             "variants against the allocating ones")
    parser.add_argument("--keep-openblas-coretype", action="store_true",
                        help="honour an inherited OPENBLAS_CORETYPE instead of autodetecting")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


# Before importing torch: OpenBLAS and OpenMP read these once, when torch loads them.
ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    if not ARGS.keep_openblas_coretype:
        os.environ.pop("OPENBLAS_CORETYPE", None)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

WARMUPS = 3
MIN_REPS = 5
MAX_REPS = 2000
EPS = 1e-5
KINDS = ("mul", "add_relu", "softmax", "layernorm", "batchnorm", "gelu", "reduce_sum",
         "reduce_max", "transpose", "matmul", "conv2d", "mlp")


class SpecError(Exception):
    pass


def _field(spec, key):
    if key not in spec:
        raise SpecError(
            f"spec {spec.get('name')!r} (kind {spec.get('kind')!r}) needs field {key!r}")
    return spec[key]


def _dims(spec, key, rank=None):
    value = _field(spec, key)
    if (not isinstance(value, list) or not value
            or not all(isinstance(d, int) and d > 0 for d in value)):
        raise SpecError(f"spec {spec.get('name')!r}: {key!r} must be a list of positive ints")
    if rank is not None and len(value) != rank:
        raise SpecError(f"spec {spec.get('name')!r}: {key!r} must have {rank} dims, got {value}")
    return value


def _ints(spec, keys):
    values = []
    for key in keys:
        v = _field(spec, key)
        if not isinstance(v, int) or v < 0:
            raise SpecError(f"spec {spec.get('name')!r}: {key!r} must be a non-negative int")
        values.append(v)
    return values


def _rand(*shape):
    return torch.rand(*shape, dtype=torch.float32) * 2 - 1


def build(spec):
    """Returns (alloc_fn, out_fn or None) for one spec; inputs are created here, untimed."""
    kind = _field(spec, "kind")
    torch.manual_seed(0)
    if kind == "mul":
        shape = _dims(spec, "shape")
        x, y = _rand(*shape), _rand(*shape)
        o = torch.empty(shape)
        return (lambda: x * y), (lambda: torch.mul(x, y, out=o))
    if kind == "add_relu":
        shape = _dims(spec, "shape")
        x, y, z = _rand(*shape), _rand(*shape), _rand(*shape)
        o = torch.empty(shape)

        def add_relu_out():
            # relu has no out=: the preallocated variant reuses one buffer in place.
            torch.add(x, y, out=o)
            o.relu_()
            torch.add(o, z, out=o)
            return o.relu_()

        return (lambda: torch.relu(torch.relu(x + y) + z)), add_relu_out
    if kind == "softmax":
        shape = _dims(spec, "shape", 2)
        x = _rand(*shape)
        o = torch.empty(shape)
        return (lambda: torch.softmax(x, dim=-1)), (lambda: torch.softmax(x, -1, out=o))
    if kind == "layernorm":
        rows, cols = _dims(spec, "shape", 2)
        x, weight, bias = _rand(rows, cols), _rand(cols), _rand(cols)
        return (lambda: F.layer_norm(x, (cols,), weight, bias, EPS)), None
    if kind == "batchnorm":
        n, c, h, w = _dims(spec, "shape", 4)
        x, weight, bias, mean = _rand(n, c, h, w), _rand(c), _rand(c), _rand(c)
        var = torch.rand(c) + 0.5  # a variance must be positive
        return (lambda: F.batch_norm(x, mean, var, weight, bias, training=False, eps=EPS)), None
    if kind == "gelu":
        shape = _dims(spec, "shape")
        x = _rand(*shape)
        o = torch.empty(shape)
        # F.gelu is this binding; only the binding takes out=.
        return ((lambda: F.gelu(x, approximate="tanh")),
                (lambda: torch._C._nn.gelu(x, approximate="tanh", out=o)))
    if kind in ("reduce_sum", "reduce_max"):
        rows, cols = _dims(spec, "shape", 2)
        dim = spec.get("dim", 1 if kind == "reduce_sum" else 0)
        if dim not in (0, 1):
            raise SpecError(f"spec {spec.get('name')!r}: dim must be 0 or 1, not {dim!r}")
        x = _rand(rows, cols)
        o = torch.empty(cols if dim == 0 else rows)
        if kind == "reduce_sum":
            return (lambda: x.sum(dim=dim)), (lambda: torch.sum(x, dim=dim, out=o))
        return (lambda: x.amax(dim=dim)), (lambda: torch.amax(x, dim=dim, out=o))
    if kind == "transpose":
        shape = _dims(spec, "shape", 2)
        x = _rand(*shape)
        o = torch.empty(shape[1], shape[0])
        return (lambda: x.t().contiguous()), (lambda: o.copy_(x.t()))
    if kind == "matmul":
        m, n, k = _ints(spec, ("m", "n", "k"))
        if min(m, n, k) == 0:
            raise SpecError(f"spec {spec.get('name')!r}: m, n, k must be positive")
        a, b = _rand(m, k), _rand(k, n)
        o = torch.empty(m, n)
        return (lambda: a @ b), (lambda: torch.mm(a, b, out=o))
    if kind == "conv2d":
        n, c, h, w, k, r, s, stride, pad = _ints(
            spec, ("n", "c", "h", "w", "k", "r", "s", "stride", "pad"))
        if min(n, c, h, w, k, r, s, stride) == 0:
            raise SpecError(f"spec {spec.get('name')!r}: conv2d sizes and stride must be positive")
        x, weight = _rand(n, c, h, w), _rand(k, c, r, s)
        return (lambda: F.conv2d(x, weight, None, stride, pad)), None
    if kind == "mlp":
        (batch,) = _ints(spec, ("batch",))
        sizes = _dims(spec, "sizes")
        if batch == 0 or len(sizes) < 2:
            raise SpecError(f"spec {spec.get('name')!r}: mlp needs batch > 0 and >= 2 sizes")
        x = _rand(batch, sizes[0])
        layers = [(_rand(n_out, n_in), _rand(n_out)) for n_in, n_out in zip(sizes, sizes[1:])]

        def mlp():
            h = x
            for i, (weight, bias) in enumerate(layers):
                h = F.linear(h, weight, bias)
                if i + 1 < len(layers):
                    h = torch.relu(h)
            return h

        return mlp, None
    raise SpecError(f"spec {spec.get('name')!r}: unknown kind {kind!r} (known: {', '.join(KINDS)})")


def time_fn(fn, min_seconds):
    """Median seconds of fn() and the repeat count."""
    for _ in range(WARMUPS):
        fn()
    times = []
    total = 0.0
    while len(times) < MAX_REPS and (len(times) < MIN_REPS or total < min_seconds):
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        # Freed after the clock stops: the previous result must not be released inside the
        # next timed call (assigning over it would).
        del result
        times.append(elapsed)
        total += elapsed
    return statistics.median(times), len(times)


def run_specs(specs, min_seconds, check=False):
    if not isinstance(specs, list):
        raise SpecError("stdin must be a JSON list of op specs")
    built = {}
    for spec in specs:
        if not isinstance(spec, dict):
            raise SpecError(f"each spec must be a JSON object, got {spec!r}")
        name = _field(spec, "name")
        if not isinstance(name, str) or name in built:
            raise SpecError(f"spec names must be unique strings: {name!r}")
        built[name] = build(spec)  # validates every spec before timing anything
    results = {}
    with torch.inference_mode():
        for name, (alloc_fn, out_fn) in built.items():
            if check and out_fn is not None:
                expected, got = alloc_fn(), out_fn()
                if not torch.allclose(expected, got, rtol=1e-4, atol=1e-5):
                    raise AssertionError(f"{name}: out= variant differs from the allocating one")
            alloc_s, reps = time_fn(alloc_fn, min_seconds)
            out_s = time_fn(out_fn, min_seconds)[0] if out_fn is not None else None
            results[name] = {"alloc_s": alloc_s, "out_s": out_s, "reps": reps}
    return results


SELF_TEST_SPECS = [
    {"name": "mul", "kind": "mul", "shape": [64, 64]},
    {"name": "add_relu", "kind": "add_relu", "shape": [4, 8, 16]},
    {"name": "softmax", "kind": "softmax", "shape": [16, 32]},
    {"name": "layernorm", "kind": "layernorm", "shape": [16, 32]},
    {"name": "batchnorm", "kind": "batchnorm", "shape": [2, 4, 8, 8]},
    {"name": "gelu", "kind": "gelu", "shape": [1000]},
    {"name": "reduce_sum", "kind": "reduce_sum", "shape": [16, 32]},
    {"name": "reduce_max", "kind": "reduce_max", "shape": [16, 32]},
    {"name": "reduce_max_rows", "kind": "reduce_max", "shape": [16, 32], "dim": 1},
    {"name": "transpose", "kind": "transpose", "shape": [16, 32]},
    {"name": "matmul", "kind": "matmul", "m": 32, "n": 16, "k": 8},
    {"name": "conv2d", "kind": "conv2d", "n": 1, "c": 3, "h": 16, "w": 16, "k": 8, "r": 3,
     "s": 3, "stride": 1, "pad": 1},
    {"name": "mlp", "kind": "mlp", "batch": 4, "sizes": [8, 16, 3]},
]


def blas_report():
    """One line on the BLAS torch's matmul and conv run on (libblas.so.3 is already loaded by
    torch, so this opens the same library)."""
    try:
        blas = ctypes.CDLL("libblas.so.3")
    except OSError:
        return "BLAS: libblas.so.3 not found"
    if not hasattr(blas, "openblas_get_config"):
        return "BLAS: reference BLAS (not OpenBLAS): install libopenblas0-pthread"
    blas.openblas_get_config.restype = ctypes.c_char_p
    blas.openblas_get_corename.restype = ctypes.c_char_p
    return (f"BLAS: {blas.openblas_get_config().decode()}, core "
            f"{blas.openblas_get_corename().decode()}, {blas.openblas_get_num_threads()} threads")


def main():
    args = ARGS
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    print(f"torch_ops.py: torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{blas_report()}", file=sys.stderr)

    try:
        if args.self_test:
            specs = SELF_TEST_SPECS
            missing = set(KINDS) - {s["kind"] for s in specs}
            assert not missing, f"self-test lacks kinds {missing}"
            results = run_specs(specs, min(args.min_seconds, 0.01), check=True)
        else:
            try:
                specs = json.load(sys.stdin)
            except json.JSONDecodeError as e:
                raise SpecError(f"stdin is not JSON: {e}") from e
            results = run_specs(specs, args.min_seconds)
    except SpecError as e:
        print(f"torch_ops.py: {e}", file=sys.stderr)
        sys.exit(2)
    json.dump(results, sys.stdout, indent=1 if args.self_test else None)
    print()


if __name__ == "__main__":
    main()
