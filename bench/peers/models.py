"""Times the model zoo's inference models on one CPU thread (--threads N: N) in the field's peers.

    build/peers-venv/bin/python bench/peers/models.py [--models a,b] [--batches 1,8]
        [--peers xla,torch,inductor,inductor-max-autotune,ort,tvm] [--min-seconds S]
        [--json out.json]

Peers (each model, batch and peer runs in its own subprocess with every thread pool set to one
thread, pinned to one CPU (--cpu) before any library loads; with --threads N, N threads on the N
CPUs ending at --cpu, and XLA's Eigen pool on; the Inductor peers compile on every
allowed CPU and pin all their threads before the first timed call):
    xla                    jax.jit of models/gen/jax_models.py's Flax model (XLA CPU), with
                           XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
                           intra_op_parallelism_threads=1; other weights than the PyTorch peers'
                           (same architecture and sizes), NHWC images
    torch                  PyTorch eager, torch.inference_mode(), torch.set_num_threads(1)
    inductor               torch.compile(model), default mode
    inductor-max-autotune  torch.compile(model, mode="max-autotune") with inductor's freezing on
                           (its CPU GEMM templates apply only to constant weights)
    ort                    ONNX Runtime on the export with initializers (ORT_ENABLE_ALL,
                           intra- and inter-op threads 1, sequential execution)
    tvm                    Apache TVM Relax: the same ONNX file through relax.frontend.onnx,
                           tvm.compile with the default pipeline for an llvm target of the host
                           CPU, no tuning (0 trials), TVM_NUM_THREADS=1
The PyTorch-based peers and ORT/TVM share models/gen/torch_models.py's weights and inputs; the
ONNX files with initializers are written once to build/peers-cache/onnx/<key>/ (the key hashes
the generator sources). Inductor and XLA keep their compilation caches in build/peers-cache/ too,
so a rerun compiles faster; compile times (first call for inductor, lower+compile for XLA,
session creation for ORT, import+compile for TVM) are reported apart from run times.

Timing: warm-up calls (two, or one when the first takes over a second), then timed calls until
they add up to --min-seconds and number at least 5, the median reported with the min and max.
A case also stops once the next call would overrun --case-seconds (then fewer than 5 calls are
timed, at least one; "reps" says how many; when the first call alone takes longer, it is the
one reported), and a batch is skipped when the batch-1 median scaled by the batch predicts one
call over --case-seconds. Compilation is capped at --compile-timeout seconds; a peer that fails,
crashes or times out is recorded with the first line of its error, and the run goes on.
inductor, ort and tvm outputs are checked against eager PyTorch's (max abs difference in the
JSON). Worker logs (stderr) go to build/peers-cache/logs/.

Output: the machine (lscpu's model name, one thread's measured matmul GFLOP/s), a markdown table
of median milliseconds per model, batch and peer, a table of compile seconds, the failures; with
--json (rewritten after every case), everything:
    {"machine": {"cpu", "logical_cpus", "timing_cpu", "pinned", "peak_gflops_1thread", ...},
     "versions": {package: version}, "settings": {"models", "batches", "peers", "min_seconds",
     "case_seconds", "tvm_target", "tvm_tuning_trials", ...},
     "results": [{"model", "batch", "peer", "status": "ok" | "failed" | "skipped",
                  "median_ms", "min_ms", "max_ms", "reps", "warmups", "first_call_ms",
                  "compile_s", "cpu_wall_ratio", "threads", "max_abs_diff_vs_torch",
                  "error", "failed_in", "wall_s", ...}],
     "total_s"}
cpu_wall_ratio is the process's CPU time over the wall time of the timed calls: pinned it cannot
exceed 1; with --no-pin, a value near 1 shows that one thread did the work.
"""

import argparse
import json
import os
import platform
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "models" / "gen"
CACHE = ROOT / "build" / "peers-cache"
PEERS = ("xla", "torch", "inductor", "inductor-max-autotune", "ort", "tvm")
MARK = "@@peer@@ "                       # prefixes the worker's protocol lines on stdout
XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
THREADS = {"n": 1}                       # --threads: every peer's thread pools (1 by default)


def xla_flags(threads):
    """XLA CPU's flags for `threads` intra-op threads (Eigen's pool off at one thread)."""
    if threads == 1:
        return XLA_FLAGS
    return f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"


def timing_cpus(cpu, threads):
    """The CPUs a worker runs on: `threads` of them, ending at `cpu`."""
    return set(range(max(0, cpu - threads + 1), cpu + 1))
MIN_REPS = 5
MAX_REPS = 5000
LOAD_TIMEOUT_S = 900                     # building a model and exporting it to ONNX
TVM_TUNING_TRIALS = 0
# Peers whose compilation may use every allowed CPU (Inductor's parallel C++ compile workers); their
# generated code is single-threaded (torch.set_num_threads(1)) and the process is pinned to one CPU
# before the first call is timed. The other peers are pinned before any library loads.
COMPILE_ON_ALL_CPUS = ("inductor", "inductor-max-autotune")


# ----------------------------------------------------------------------------------------------
# Worker: one peer, one model, one batch, in its own process.

PHASE = {"now": "load"}                  # the worker's phase, for its error reports


def emit(event, **fields):
    """Writes one protocol line for the parent."""
    PHASE["now"] = {"loaded": "compile", "compiled": "run"}.get(event, PHASE["now"])
    print(MARK + json.dumps(dict(event=event, **fields)), flush=True)


def source_key():
    """A short hash of the model generator sources: the ONNX cache's directory name."""
    import hashlib

    digest = hashlib.sha256()
    for name in ("configs.py", "torch_models.py", "export_onnx.py"):
        digest.update((GEN / name).read_bytes())
    return digest.hexdigest()[:12]


def onnx_path(name, batch):
    """The cached ONNX export with initializers of `name` at `batch`, written if missing."""
    import export_onnx

    directory = CACHE / "onnx" / source_key()
    path = directory / f"{name}.infer.b{batch}.onnx"
    if not directory.exists():           # the sources changed: drop the stale exports
        for stale in directory.parent.glob("*/*.onnx"):
            stale.unlink()
        for stale in directory.parent.glob("*"):
            stale.rmdir()
    if not path.exists():
        tmp = directory / f"tmp.{os.getpid()}"
        written = export_onnx.export_with_weights(name, batch, str(tmp))
        os.replace(written, path)
        os.rmdir(tmp)
    return path


def torch_reference(module, inputs):
    """A function giving eager PyTorch's output as numpy."""
    import torch

    def reference():
        with torch.inference_mode():
            return module(*inputs).numpy()
    return reference


def as_numpy(x):
    """A peer's output as a numpy array."""
    import numpy as np

    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def prepare_torch(name, batch, mode):
    """(run, info, reference) for eager PyTorch (mode None) or torch.compile with `mode`."""
    import torch
    import torch_models

    torch.set_num_threads(THREADS["n"])
    module, inputs = torch_models.make(name, batch)
    emit("loaded")
    if mode is None:
        def run():
            with torch.inference_mode():
                return module(*inputs)
        return run, {}, None
    if mode == "max-autotune":
        # Inductor's CPU GEMM templates need constant weights, which freezing makes them.
        torch._inductor.config.freezing = True
    compiled = torch.compile(module, mode=None if mode == "default" else mode)

    def run():
        with torch.inference_mode():
            return compiled(*inputs)
    start = time.perf_counter()
    run()
    return run, {"compile_s": time.perf_counter() - start}, torch_reference(module, inputs)


def prepare_ort(name, batch):
    """(run, info, reference) for ONNX Runtime on the cached export with initializers."""
    import onnxruntime as ort
    import torch_models

    path = onnx_path(name, batch)
    module, inputs = torch_models.make(name, batch)
    emit("loaded")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = THREADS["n"]
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    start = time.perf_counter()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    info = {"compile_s": time.perf_counter() - start}
    feeds = {arg.name: x.numpy() for arg, x in zip(session.get_inputs(), inputs)}

    def run():
        return session.run(None, feeds)[0]
    return run, info, torch_reference(module, inputs)


def tvm_target():
    """The llvm target of the host CPU as LLVM names it."""
    import tvm

    return tvm.target.Target({"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()})


def prepare_tvm(name, batch):
    """(run, info, reference) for TVM Relax: ONNX import, default pipeline, no tuning."""
    import onnx
    import torch_models
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    path = onnx_path(name, batch)
    module, inputs = torch_models.make(name, batch)
    emit("loaded")
    start = time.perf_counter()
    mod = from_onnx(onnx.load(str(path)), keep_params_in_input=False)
    executable = tvm.compile(mod, tvm_target())
    vm = relax.VirtualMachine(executable, tvm.cpu())
    info = {"compile_s": time.perf_counter() - start, "target": str(tvm_target())}
    args = [tvm.runtime.tensor(x.numpy()) for x in inputs]
    main = vm["main"]

    def run():
        return main(*args)
    return run, info, torch_reference(module, inputs)


def prepare_xla(name, batch):
    """(run, info, None) for jax.jit of the Flax model, compiled ahead of the timed calls."""
    import jax

    if os.environ.get("MLTUNE_PEERS_COLD") != "1":
        jax.config.update("jax_compilation_cache_dir", str(CACHE / "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    import jax_models

    m = jax_models.make(name, batch)
    emit("loaded")
    start = time.perf_counter()
    compiled = jax.jit(m.infer).lower(m.params, *m.inputs).compile()
    info = {"compile_s": time.perf_counter() - start}

    def run():
        return jax.block_until_ready(compiled(m.params, *m.inputs))
    return run, info, None


def prepare(peer, name, batch):
    """Dispatches to the peer's prepare function."""
    if peer == "torch":
        return prepare_torch(name, batch, None)
    if peer == "inductor":
        return prepare_torch(name, batch, "default")
    if peer == "inductor-max-autotune":
        return prepare_torch(name, batch, "max-autotune")
    if peer == "ort":
        return prepare_ort(name, batch)
    if peer == "tvm":
        return prepare_tvm(name, batch)
    if peer == "xla":
        return prepare_xla(name, batch)
    raise ValueError(f"unknown peer {peer!r}")


def measure(run, min_seconds, case_seconds):
    """Warms up, then times calls of `run` (see the module docstring); returns (the first call's
    output, a dict of timings)."""
    start = time.perf_counter()
    output = run()
    first = time.perf_counter() - start
    output = as_numpy(output)            # copied now: a runtime may reuse its output buffers
    if first > case_seconds:             # one call is all the budget allows: report it
        return output, {"median_ms": first * 1e3, "min_ms": first * 1e3, "max_ms": first * 1e3,
                        "reps": 1, "warmups": 0, "first_call_ms": first * 1e3,
                        "note": "the first call took over --case-seconds: it is the only one"}
    warmups = 1
    if first < 1.0:
        run()
        warmups = 2
    times, last = [], first
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while len(times) < MAX_REPS:
        spent = time.perf_counter() - wall0
        if len(times) >= MIN_REPS and spent >= min_seconds:
            break
        if times and spent + last > case_seconds:
            break
        t = time.perf_counter()
        run()
        last = time.perf_counter() - t
        times.append(last)
    wall = time.perf_counter() - wall0
    timing = {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
              "max_ms": max(times) * 1e3, "reps": len(times), "warmups": warmups,
              "first_call_ms": first * 1e3,
              "cpu_wall_ratio": (time.process_time() - cpu0) / wall,
              "threads": len(os.listdir("/proc/self/task"))}
    return output, timing


def pin_all_threads(cpus):
    """Pins every thread of this process (and so the threads they start) to the set `cpus`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:                  # the thread has exited
            pass


def worker(args):
    """Runs one case and reports it on stdout through `emit`."""
    import numpy as np

    sys.path.insert(0, str(GEN))
    try:
        run, info, reference = prepare(args.peer, args.model, args.batch)
        if not args.no_pin:
            pin_all_threads(timing_cpus(args.worker_cpu, THREADS["n"]))
        emit("compiled", compile_s=info.get("compile_s"))
        output, timing = measure(run, args.min_seconds, args.case_seconds)
        info.update(timing)
        if reference is not None:
            info["max_abs_diff_vs_torch"] = float(np.abs(output - reference()).max())
        emit("result", **info)
    except Exception as e:  # noqa: BLE001 -- any failure is a result to record
        traceback.print_exc()                    # into the worker's log
        text = f"{type(e).__name__}: {e}".strip().splitlines()
        emit("error", phase=PHASE["now"], error=text[0][:300] if text else type(e).__name__)


def worker_peak(_args):
    """Reports one thread's best f32 GFLOP/s on a 1024x1024 matmul (torch)."""
    import torch

    torch.set_num_threads(1)
    n = 1024
    a, b = torch.rand(n, n), torch.rand(n, n)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(20):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    emit("peak", gflops=2 * n**3 / best / 1e9)


# ----------------------------------------------------------------------------------------------
# Parent: runs the workers, collects their results, prints the tables.

def child_env(cold_dir=None):
    """The environment of every worker: --threads threads everywhere; the compilation caches under
    build/peers-cache/, or with `cold_dir` Inductor's in that fresh directory and XLA's off."""
    env = dict(os.environ)
    n = str(THREADS["n"])
    env.update({"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
                "TVM_NUM_THREADS": n, "XLA_FLAGS": xla_flags(THREADS["n"]),
                "TF_CPP_MIN_LOG_LEVEL": "2",
                "TORCHINDUCTOR_CACHE_DIR": str(cold_dir or CACHE / "inductor"),
                "MLTUNE_PEERS_COLD": "1" if cold_dir else "0", "PYTHONWARNINGS": "ignore"})
    return env


def run_worker(argv, args, stderr_path):
    """Runs a worker with per-phase deadlines; returns its protocol events (a list of dicts)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker-cpu", str(args.cpu),
               "--threads", str(THREADS["n"])]
    command += argv + ["--min-seconds", str(args.min_seconds),
                       "--case-seconds", str(args.case_seconds)]
    if args.no_pin:
        command.append("--no-pin")
    deadlines = {"start": LOAD_TIMEOUT_S, "loaded": args.compile_timeout,
                 "compiled": 2 * args.case_seconds + 120}
    names = {"start": "load", "loaded": "compile", "compiled": "run"}     # the worker's names
    events, phase = [], "start"
    with open(stderr_path, "w") as stderr, tempfile.TemporaryDirectory() as cold_dir:
        env = child_env(cold_dir if args.cold_compile else None)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                text=True, bufsize=1, start_new_session=True)
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + deadlines[phase]
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.killpg(proc.pid, signal.SIGKILL)          # the worker and its compile workers
                proc.wait()
                limit = deadlines[phase]
                what = {"start": "loading", "loaded": "compiling", "compiled": "running"}[phase]
                events.append({"event": "error", "phase": names[phase],
                               "error": f"timed out {what} (over {limit:.0f} s)"})
                return events
            if not selector.select(timeout=min(remaining, 5.0)):
                continue
            line = proc.stdout.readline()
            if not line:
                break
            if not line.startswith(MARK):
                continue
            event = json.loads(line[len(MARK):])
            events.append(event)
            if event["event"] in deadlines and event["event"] != phase:
                phase = event["event"]
                deadline = time.monotonic() + deadlines[phase]
        proc.wait()
    if proc.returncode != 0 and not any(e["event"] in ("result", "error") for e in events):
        tail = Path(stderr_path).read_text(errors="replace").strip().splitlines()
        reason = f"exit status {proc.returncode}" if proc.returncode > 0 else \
            f"killed by signal {-proc.returncode}"
        events.append({"event": "error", "phase": names[phase],
                       "error": f"crashed ({reason})" + (f": {tail[-1][:200]}" if tail else "")})
    return events


def run_case(peer, name, batch, args, results):
    """Runs (or skips) one case and returns its result dict."""
    case = {"model": name, "batch": batch, "peer": peer}
    base = next((r for r in results if r["model"] == name and r["peer"] == peer
                 and r["batch"] == 1), None)
    if batch > 1 and base is not None:
        if base["status"] == "ok" and base["median_ms"] * batch / 1e3 > args.case_seconds:
            predicted = base["median_ms"] * batch / 1e3
            return dict(case, status="skipped",
                        error=f"batch 1 took {base['median_ms']:.0f} ms a call; batch {batch} "
                              f"would take about {predicted:.0f} s, over --case-seconds")
        if base["status"] == "failed" and "timed out" in base.get("error", ""):
            return dict(case, status="skipped", error=f"batch 1 {base['error']}")
    log_dir = CACHE / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = log_dir / f"{name}.b{batch}.{peer}.stderr"
    start = time.monotonic()
    events = run_worker(["--worker", peer, name, str(batch)], args, stderr_path)
    case["wall_s"] = time.monotonic() - start
    for event in events:
        if event["event"] == "compiled" and event.get("compile_s") is not None:
            case["compile_s"] = event["compile_s"]
        if event["event"] == "result":
            case.update({k: v for k, v in event.items() if k != "event"}, status="ok")
        if event["event"] == "error":
            case.update(status="failed", error=event["error"], failed_in=event["phase"])
    case.setdefault("status", "failed")
    if case["status"] == "failed":
        case.setdefault("error", "no result")
        case["stderr"] = str(stderr_path)
    return case


def machine(args):
    """lscpu's model name and one thread's measured matmul GFLOP/s."""
    info = {"cpu": platform.processor() or "unknown", "logical_cpus": os.cpu_count(),
            "timing_cpu": args.cpu, "pinned": not args.no_pin}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                info["cpu"] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    events = run_worker(["--worker-peak"], args, CACHE / "logs" / "peak.stderr")
    peak = next((e for e in events if e["event"] == "peak"), None)
    info["peak_gflops_1thread"] = peak["gflops"] if peak else None
    info["peak_method"] = "best of 20 torch 1024x1024x1024 f32 matmuls, one thread"
    return info


def versions():
    """Installed versions of each peer's packages."""
    def v(package):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None
    return {"python": platform.python_version(), "jax": v("jax"), "jaxlib": v("jaxlib"),
            "flax": v("flax"), "torch": v("torch"), "torchvision": v("torchvision"),
            "transformers": v("transformers"), "onnx": v("onnx"),
            "onnxruntime": v("onnxruntime"), "tvm": v("apache-tvm")}


def tvm_target_string():
    """The TVM target the tvm peer compiles for (asked of TVM in a subprocess)."""
    code = ("import tvm; print(tvm.target.Target({'kind': 'llvm', 'mcpu': "
            "tvm.target.codegen.llvm_get_system_cpu()}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env())
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout else None


def cell(result, key, fmt):
    """A table cell: the value, or why there is none."""
    if result is None:
        return ""
    if result["status"] == "ok" and result.get(key) is not None:
        text = fmt.format(result[key])
        return text + ("*" if key == "median_ms" and result["reps"] < MIN_REPS else "")
    return {"failed": "failed", "skipped": "skipped", "ok": "-"}[result["status"]]


def tables(report):
    """The markdown report: machine, run times, compile times, failures."""
    m, results, peers = report["machine"], report["results"], report["settings"]["peers"]
    lines = [f"CPU: {m['cpu']} ({m['logical_cpus']} logical CPUs); one thread, pinned to CPU "
             f"{m['timing_cpu']}" if m["pinned"] else f"CPU: {m['cpu']}; not pinned",
             f"Peak: {m['peak_gflops_1thread']:.1f} GFLOP/s on one thread ({m['peak_method']})"
             if m["peak_gflops_1thread"] else "Peak: not measured",
             f"TVM: default Relax pipeline, target {report['settings']['tvm_target']}, tuning "
             f"budget {TVM_TUNING_TRIALS} trials", ""]
    keys = sorted({(r["model"], r["batch"]) for r in results},
                  key=lambda k: (report["settings"]["models"].index(k[0]), k[1]))
    index = {(r["model"], r["batch"], r["peer"]): r for r in results}
    for title, key, fmt in (("Median ms per call (* fewer than 5 timed calls)", "median_ms",
                             "{:.2f}"),
                            ("Compile seconds", "compile_s", "{:.2f}")):
        lines += [f"{title}:", "", "| model | batch | " + " | ".join(peers) + " |",
                  "|---|---:|" + "---:|" * len(peers)]
        for name, batch in keys:
            row = [cell(index.get((name, batch, p)), key, fmt) for p in peers]
            lines.append(f"| {name} | {batch} | " + " | ".join(row) + " |")
        lines.append("")
    problems = [r for r in results if r["status"] != "ok"]
    if problems:
        lines.append("Failed or skipped:")
        lines += [f"- {r['model']} b{r['batch']} {r['peer']}: {r['status']}: {r['error']}"
                  for r in problems]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated zoo models (default: all)")
    parser.add_argument("--batches", default="1,8", help="comma-separated batch sizes")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated peers")
    parser.add_argument("--min-seconds", type=float, default=2.0,
                        help="timed seconds per case (at least 5 calls)")
    parser.add_argument("--case-seconds", type=float, default=30.0,
                        help="at most this many timed seconds per case (see the docstring)")
    parser.add_argument("--compile-timeout", type=float, default=300.0,
                        help="seconds allowed for compilation (session creation, import)")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                        help="the CPU the workers are pinned to (with --threads N, the N CPUs "
                             "ending at it)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of every peer (intra-op pools, OpenMP, XLA's Eigen pool)")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the workers (to check that they use one thread: "
                             "cpu_wall_ratio should stay near 1)")
    parser.add_argument("--cold-compile", action="store_true",
                        help="compile without Inductor's and XLA's caches, so that compile "
                             "times are first-compile times (the default reuses "
                             "build/peers-cache/, whose hits make reruns compile faster)")
    parser.add_argument("--json", help="write the whole report here")
    parser.add_argument("--worker", nargs=3, metavar=("PEER", "MODEL", "BATCH"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--worker-peak", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-cpu", type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


def main():
    args = parse_args()
    THREADS["n"] = max(1, args.threads)
    if args.worker or args.worker_peak:
        if not args.no_pin and not (args.worker and args.worker[0] in COMPILE_ON_ALL_CPUS):
            cpus = {args.worker_cpu} if args.worker_peak else timing_cpus(args.worker_cpu,
                                                                          THREADS["n"])
            os.sched_setaffinity(0, cpus)
        if args.worker_peak:
            return worker_peak(args)
        args.peer, args.model, args.batch = args.worker[0], args.worker[1], int(args.worker[2])
        return worker(args)

    sys.path.insert(0, str(GEN))
    from configs import MODELS

    names = args.models.split(",") if args.models else list(MODELS)
    peers = args.peers.split(",")
    batches = sorted(int(b) for b in args.batches.split(","))
    bad = [n for n in names if n not in MODELS] + [p for p in peers if p not in PEERS]
    if bad:
        sys.exit(f"unknown models or peers: {bad}; models: {', '.join(MODELS)}; "
                 f"peers: {', '.join(PEERS)}")
    (CACHE / "logs").mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(args), "versions": versions(),
              "settings": {"models": names, "batches": batches, "peers": peers,
                           "min_seconds": args.min_seconds, "min_reps": MIN_REPS,
                           "case_seconds": args.case_seconds,
                           "compile_timeout_s": args.compile_timeout,
                           "threads": THREADS["n"], "xla_flags": xla_flags(THREADS["n"]),
                           "compile_caches": "off (cold)" if args.cold_compile
                                             else f"on ({CACHE})",
                           "tvm_target": tvm_target_string(),
                           "tvm_tuning_trials": TVM_TUNING_TRIALS,
                           "tvm_pipeline": "relax default (cpu_generic), no tuning",
                           "inductor": "torch.compile default mode / mode='max-autotune'",
                           "ort": f"ORT_ENABLE_ALL, intra-op threads {THREADS['n']}, inter-op 1, "
                                  "sequential",
                           "onnx_cache": str(CACHE / "onnx")},
              "results": []}
    started = time.monotonic()
    for name in names:
        for batch in batches:
            for peer in peers:
                result = run_case(peer, name, batch, args, report["results"])
                report["results"].append(result)
                if result["status"] == "ok":
                    status = f"{result['median_ms']:.2f} ms ({result['reps']} calls)"
                else:
                    status = f"{result['status']}: {result['error']}"
                print(f"[{time.monotonic() - started:6.0f} s] {name} b{batch} {peer}: {status}",
                      file=sys.stderr, flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    report["total_s"] = time.monotonic() - started
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print(tables(report))


if __name__ == "__main__":
    main()
