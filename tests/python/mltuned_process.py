"""A real mltuned child for the Python client's tests, started as tests/support/daemon_child.cc
starts one: ephemeral loopback port, a data folder of its own, its output in DATA_DIR/mltuned.log,
ready once it writes its ready file, killed when the test ends (or when this process dies)."""

import ctypes
import os
import signal
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # A test runner killed by CTest's timeout must not leave a daemon behind.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def daemon_binary():
    path = os.environ.get("MLTUNED")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"$MLTUNED names no mltuned binary ({path!r}); "
                           "tests/python/run_tests sets it")
    return path


class MltunedProcess:
    def __init__(self, data_dir, extra=(), env=None):
        os.makedirs(data_dir, exist_ok=True)
        ready = os.path.join(data_dir, "ready")
        if os.path.exists(ready):
            os.remove(ready)
        self.log_path = os.path.join(data_dir, "mltuned.log")
        args = [daemon_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                "--data-dir", data_dir, "--ready-file", ready, "--max-budget-steps", "100000000",
                "--worker-threads", "1", *extra]
        child_env = dict(os.environ)
        # The XLA worker's child runs on this interpreter: the same jax as the tests.
        child_env.setdefault("MLTUNE_XLA_PYTHON", sys.executable)
        child_env.update(env or {})
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                             env=child_env, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if self._process.poll() is not None:
                raise RuntimeError(f"mltuned exited early:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"mltuned did not serve within 60 s:\n{self.log()}")
            time.sleep(0.02)
        # mltuned writes the file whole and renames it into place.
        with open(ready) as f:
            lines = f.read().splitlines()
        self.address = next((l[len("listen="):] for l in lines if l.startswith("listen=")), "")
        if not self.address:
            self.stop()
            raise RuntimeError(f"no listen= line in {ready}:\n{self.log()}")

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def signal(self, number):
        self._process.send_signal(number)

    def stop(self):
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
