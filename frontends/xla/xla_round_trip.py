"""Passes HLO text files through XLA itself, as mltune's users hand them to it: jaxlib's HLO
parser (hlo_module_from_text), its conversion to StableHLO (hlo_to_stablehlo) and, on request,
its compiler (compile_and_load, with jax.jit's compile options). Run by
frontends/xla/xla_round_trip.cc on build/xla-venv's Python.

    python xla_round_trip.py REQUESTS.jsonl VERDICTS.jsonl

REQUESTS: one {"path": ..., "compile": true|false} per line (a path ending in .gz is gunzipped).
VERDICTS: one {"path", "ok", "stage", "error", "seconds"} per request, in order; "stage" is where
XLA refused the module (parse, convert, compile; abort when XLA ended the process, e.g. on a
CHECK; timeout), or the last stage run when it was accepted.

The modules go through a worker child, so an abort costs only that module: the worker is
started again for the rest. Exits 3 when that child cannot import jax. MLTUNE_XLA_CHECK_TIMEOUT
bounds each module's time (seconds, default 600).
"""

import gzip
import json
import os
import select
import subprocess
import sys
import tempfile
import time

# One thread, as the zoo's XLA peer runs: the tests run beside others.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TIMEOUT_SECONDS = float(os.environ.get("MLTUNE_XLA_CHECK_TIMEOUT", "600"))
NO_JAX_EXIT_CODE = 3  # xla_round_trip.cc reports it as "no XLA here"


def _worker():
    """Answers one request line at a time on stdin/stdout."""
    from jax._src import compiler
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir
    import jax

    device = jax.devices("cpu")[0]
    backend = device.client
    print(json.dumps({"ready": jax.__version__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        path = request["path"]
        start = time.monotonic()
        verdict = {"path": path, "ok": False, "stage": "parse", "error": ""}
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                text = f.read()
            module = xc.hlo.hlo_module_from_text(text)
            verdict["stage"] = "convert"
            stablehlo = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
            if request.get("compile", False):
                verdict["stage"] = "compile"
                options = compiler.get_compile_options(num_replicas=1, num_partitions=1,
                                                       backend=backend)
                with jax_mlir.make_ir_context():
                    backend.compile_and_load(ir.Module.parse(stablehlo),
                                             executable_devices=xc.DeviceList((device,)),
                                             compile_options=options)
            verdict["ok"] = True
        except Exception as e:  # XLA's message names the line and what it refused
            verdict["error"] = f"{type(e).__name__}: {e}"
        verdict["seconds"] = time.monotonic() - start
        print(json.dumps(verdict), flush=True)


class NoJax(Exception):
    """The worker ended before it could import jax and make a CPU client."""


class _Worker:
    """The worker child, started on first use and again after it died."""

    def __init__(self):
        self.proc = None
        self.stderr_file = None

    def start(self):
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-u", __file__, "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file, text=True)
        if not self._read_line(TIMEOUT_SECONDS):
            self.stop()
            raise NoJax(self.stderr_tail())

    def stderr_tail(self, limit=2000):
        """XLA's fatal log line (a failed CHECK) when there is one, else the end of stderr."""
        self.stderr_file.seek(0)
        text = self.stderr_file.read().strip()
        for line in text.splitlines():
            if "Check failed" in line or "RET_CHECK" in line:
                return line[:limit]
        return text[-limit:]

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _read_line(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline() if ready else None

    def ask(self, request):
        """The worker's verdict, or one saying how it ended."""
        if self.proc is None:
            self.start()
        start = time.monotonic()
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._read_line(TIMEOUT_SECONDS)
        if line:
            return json.loads(line)
        self.stop()
        return {"path": request["path"], "ok": False,
                "stage": "timeout" if line is None else "abort",
                "error": (f"no answer within {TIMEOUT_SECONDS:.0f} s" if line is None
                          else "XLA ended the process: " + self.stderr_tail()),
                "seconds": time.monotonic() - start}


def _die_with_parent():
    """Linux: killed when the process that started this one ends, so a killed test leaves no
    compiler running on."""
    import ctypes
    import signal
    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def main(argv):
    _die_with_parent()
    if argv[1:] == ["--worker"]:
        _worker()
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        requests = [json.loads(line) for line in f if line.strip()]
    worker = _Worker()
    try:
        with open(argv[2], "w", encoding="utf-8") as out:
            for request in requests:
                out.write(json.dumps(worker.ask(request)) + "\n")
                out.flush()
    except NoJax as e:
        print(f"{sys.executable} cannot import jax or make its CPU client: {e}", file=sys.stderr)
        return NO_JAX_EXIT_CODE
    finally:
        worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
