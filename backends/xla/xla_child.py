"""mltune's XLA measurement child: compiles HLO modules with the installed jaxlib exactly as
jax.jit does, checks their outputs against XLA's default compile of a reference module, and
times them. The daemon (backends/xla/xla_worker.cc) starts one per worker and speaks one JSON
object per line on stdin/stdout; a crash or a CHECK in XLA ends only this process.

Requests ({"op": ...}) and answers ({"ok": true, ...} or {"ok": false, "error": ..., "kind": ...}):
  hello                 versions, platform and device, the debug options XLA knows by name
  measure               hlo_path, reference_path (optional), options {name: value}, seed,
                        min_reps, max_reps, max_seconds, target_spread, rtol, atol
                        -> median_s, min_s, p25_s, p75_s, spread, samples, compile_s,
                           max_abs_err, checked
  optimized_hlo         hlo_path, options -> text: the compiled module, canonical, no metadata
  check_options         options -> refused {name: why}: what the installed XLA does not take
  unknown_pass_names    names -> unknown: pass names the installed XLA does not define
"""

import json
import os
import re
import sys
import time
import traceback

# One thread, as the zoo's XLA peer runs; the daemon sets XLA_FLAGS itself when it wants more.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import jax  # noqa: E402
from jax._src import compiler  # noqa: E402
from jax._src.interpreters import mlir as jax_mlir  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402


class ChildError(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def _platform():
    return os.environ.get("MLTUNE_XLA_PLATFORM", "cpu")


def _device():
    try:
        return jax.devices(_platform())[0]
    except RuntimeError as e:
        raise ChildError("device", str(e)) from None


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _parse(text, what):
    try:
        return xc.hlo.hlo_module_from_text(text)
    except Exception as e:  # XLA's parser error names the line and column
        raise ChildError("parse", f"XLA's parser rejects the {what}: {e}") from None


def _compile(hlo_text, options, what):
    """Compiles like jax.jit: the same compile options (compiler.get_compile_options) and the
    same entry point (compile_and_load on StableHLO); `options` are XLA debug options by name."""
    module = _parse(hlo_text, what)
    stablehlo = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    device = _device()
    backend = device.client
    compile_options = compiler.get_compile_options(
        num_replicas=1, num_partitions=1, backend=backend,
        env_options_overrides=dict(options) if options else None)
    with jax_mlir.make_ir_context():
        mlir_module = ir.Module.parse(stablehlo)
        try:
            executable = backend.compile_and_load(mlir_module,
                                                  executable_devices=xc.DeviceList((device,)),
                                                  compile_options=compile_options)
        except Exception as e:
            message = str(e)
            kind = "option" if "No such compile option" in message else "compile"
            raise ChildError(kind, f"XLA does not compile the {what}: {message}") from None
    shapes = xc.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    return executable, shapes.parameter_shapes()


def _arguments(parameter_shapes, seed):
    """Seeded inputs for the entry parameters: floats uniform in [-1, 1), integers in [0, 8)
    (valid indices for most gathers), booleans at random."""
    rng = np.random.default_rng(seed)
    device = _device()
    args = []
    for i, shape in enumerate(parameter_shapes):
        if shape.is_tuple():
            raise ChildError("input", f"parameter {i} is a tuple; tuple parameters are not "
                             "generated")
        dtype = np.dtype(shape.element_type())
        dims = shape.dimensions()
        if dtype == np.bool_:
            value = rng.integers(0, 2, size=dims).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            value = rng.integers(0, 8, size=dims).astype(dtype)
        else:
            value = rng.uniform(-1.0, 1.0, size=dims).astype(dtype)
        args.append(jax.device_put(value, device))
    return args


def _run(executable, args):
    results = executable.execute_sharded(args)
    arrays = [a[0] for a in results.disassemble_into_single_device_arrays()]
    for a in arrays:
        a.block_until_ready()
    return arrays


def _time(executable, args, request):
    """The CPU runner's policy: one warm-up, then samples until the interquartile spread is below
    target_spread (10 samples at least) or max_seconds of timed work; median and quartiles."""
    _run(executable, args)
    min_reps = int(request.get("min_reps", 5))
    max_reps = int(request.get("max_reps", 500))
    max_seconds = float(request.get("max_seconds", 0.3))
    target = float(request.get("target_spread", 0.02))
    samples = []
    spent = 0.0
    while len(samples) < max_reps:
        start = time.perf_counter()
        _run(executable, args)
        elapsed = time.perf_counter() - start
        samples.append(elapsed)
        spent += elapsed
        if len(samples) >= min_reps:
            if spent >= max_seconds:
                break
            if len(samples) >= 10:
                q25, q50, q75 = np.percentile(samples, [25, 50, 75])
                if (q75 - q25) / q50 <= target:
                    break
    q25, q50, q75 = np.percentile(samples, [25, 50, 75])
    return {"median_s": float(q50), "min_s": float(min(samples)), "p25_s": float(q25),
            "p75_s": float(q75), "spread": float((q75 - q25) / q50), "samples": len(samples)}


def _compare(outputs, expected, rtol, atol):
    if len(outputs) != len(expected):
        raise ChildError("mismatch", f"{len(outputs)} outputs where the reference has "
                         f"{len(expected)}")
    worst = 0.0
    for i, (got, want) in enumerate(zip(outputs, expected)):
        got = np.asarray(got)
        want = np.asarray(want)
        if got.shape != want.shape or got.dtype != want.dtype:
            raise ChildError("mismatch", f"output {i} is {got.dtype}{list(got.shape)} where the "
                             f"reference is {want.dtype}{list(want.shape)}")
        if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
            bad = np.count_nonzero(got != want)
            if bad:
                raise ChildError("mismatch", f"output {i}: {bad} of {got.size} elements differ")
            continue
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        same_inf = np.isinf(w) & (g == w)
        err = np.where(both_nan | same_inf, 0.0, np.abs(g - w))
        err = np.nan_to_num(err, nan=np.inf)
        limit = atol + rtol * np.abs(np.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0))
        over = err > limit
        if np.any(over):
            index = np.unravel_index(int(np.argmax(err - limit)), err.shape)
            raise ChildError("mismatch", f"output {i} differs at {list(map(int, index))}: "
                             f"{g[index]} against the reference's {w[index]} "
                             f"(rtol {rtol}, atol {atol})")
        if err.size:
            worst = max(worst, float(err.max()))
    return worst


_reference_cache = {}


def _reference_outputs(path, seed):
    key = (path, os.path.getmtime(path), seed)
    if key not in _reference_cache:
        _reference_cache.clear()
        executable, shapes = _compile(_read(path), None, "reference module")
        args = _arguments(shapes, seed)
        _reference_cache[key] = (args, [np.asarray(a) for a in _run(executable, args)])
    return _reference_cache[key]


def _measure(request):
    start = time.perf_counter()
    executable, shapes = _compile(_read(request["hlo_path"]), request.get("options"), "module")
    compile_s = time.perf_counter() - start
    seed = int(request.get("seed", 1))
    answer = {"compile_s": compile_s, "checked": False, "max_abs_err": 0.0}
    if request.get("reference_path"):
        args, expected = _reference_outputs(request["reference_path"], seed)
        outputs = _run(executable, args)
        answer["max_abs_err"] = _compare(outputs, expected, float(request.get("rtol", 1e-3)),
                                         float(request.get("atol", 1e-3)))
        answer["checked"] = True
    else:
        args = _arguments(shapes, seed)
    answer.update(_time(executable, args, request))
    return answer


def _optimized_hlo(request):
    executable, _ = _compile(_read(request["hlo_path"]), request.get("options"), "module")
    options = xc.hlo.HloPrintOptions.canonical()
    options.print_metadata = False
    text = executable.hlo_modules()[0].to_string(options)
    return {"text": "\n".join(line for line in text.splitlines()
                              if not line.startswith("HloModule"))}


def _hello(_):
    device = _device()
    debug_options = sorted(n for n in dir(xc._xla.DebugOptions) if n.startswith("xla_"))
    return {"jax": jax.__version__, "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__")
            else jax.__version__, "platform": device.platform,
            "device": f"{device.platform}:{device.device_kind}", "pid": os.getpid(),
            "python_debug_options": debug_options}


_PROBE_MODULE = """HloModule probe

ENTRY main {
  p = f32[8,8] parameter(0)
  ROOT d = f32[8,8] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _check_options(request):
    """Which of `options` ({name: value}) the installed XLA refuses, each compiled alone on a
    small module: XLA rejects an unknown name or a malformed value at compile time."""
    refused = {}
    for name, value in request.get("options", {}).items():
        try:
            _compile(_PROBE_MODULE, {name: value}, "probe module")
        except ChildError as e:
            refused[name] = str(e)
    return {"refused": refused}


_library_strings = None


def _unknown_pass_names(request):
    """Of `names`, those that are no string of the jaxlib library XLA is linked into: a pass
    name in xla_disable_hlo_passes that XLA does not define would be ignored silently."""
    global _library_strings
    if _library_strings is None:
        import jaxlib
        folder = os.path.dirname(jaxlib.__file__)
        libraries = [os.path.join(folder, f) for f in os.listdir(folder)
                     if f.startswith("libjax") and f.endswith(".so")]
        if not libraries:
            raise ChildError("request", f"no libjax*.so in {folder} to read pass names from")
        _library_strings = b"".join(open(f, "rb").read() for f in libraries)
    unknown = []
    for name in request.get("names", []):
        if re.search(rb"(?<![-_a-z0-9])" + re.escape(name.encode()) + rb"\x00",
                     _library_strings) is None:
            unknown.append(name)
    return {"unknown": unknown}


_OPS = {"hello": _hello, "measure": _measure, "optimized_hlo": _optimized_hlo,
        "check_options": _check_options, "unknown_pass_names": _unknown_pass_names}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            op = request.get("op")
            if op not in _OPS:
                raise ChildError("request", f"unknown op {op!r}; known: {sorted(_OPS)}")
            answer = {"ok": True}
            answer.update(_OPS[op](request))
        except ChildError as e:
            answer = {"ok": False, "kind": e.kind, "error": str(e)}
        except Exception as e:  # a bug here must not end the child
            answer = {"ok": False, "kind": "internal",
                      "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
