"""mltune.Client against a real mltuned: submit, watch (with its progress display), result, lookup,
cancel, the listings, and the CLI's errors (client/rpc_commands.cc)."""

import io
import itertools
import os
import pathlib
import signal
import socket
import tempfile
import time
import unittest

import grpc
import mltune
from mltune.progress import Progress
from mltuned_process import MltunedProcess

EXAMPLES = pathlib.Path(os.environ.get("MLTUNE_SOURCE_DIR", "../..")) / "examples"
EXAMPLE_HLO = EXAMPLES / "mlp_train_step.hlo"
JAX_HLO = EXAMPLES / "mlp_train_step_jax.hlo"  # each test tunes a graph of its own: no cache hits


def slow_hlo(blocks=3000):
    """Blocks of 6 instructions full of work for algsimp and CSE: a search on it runs for
    minutes (tests/daemon/daemon_test_util.h, SlowHlo)."""
    lines = ["HloModule slow", "", "ENTRY e {", "  p = f32[16,16] parameter(0)",
             "  zero = f32[] constant(0)", "  one = f32[] constant(1)",
             "  x0 = f32[16,16] negate(p)"]
    for i in range(1, blocks + 1):
        lines += [f"  o{i} = f32[16,16] broadcast(one), dimensions={{}}",
                  f"  a{i} = f32[16,16] multiply(x{i - 1}, o{i})",
                  f"  z{i} = f32[16,16] broadcast(zero), dimensions={{}}",
                  f"  d{i} = f32[16,16] add(a{i}, z{i})",
                  f"  e{i} = f32[16,16] add(a{i}, z{i})",
                  f"  x{i} = f32[16,16] maximum(d{i}, e{i})"]
    return "\n".join(lines + [f"  ROOT r = f32[16,16] negate(x{blocks})", "}", ""])


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def free_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="mltune-client-test-")
        cls.daemon = MltunedProcess(cls.dir.name)
        cls.client = mltune.Client(cls.daemon.address, timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()
        cls.dir.cleanup()

    def submit_pass_order(self, graph, budget=20, **kwargs):
        return self.client.submit(graph, task="pass-order", target="cpu", budget=budget,
                                  strategy="greedy", **kwargs)

    def submit_slow(self, budget):
        return self.client.submit(slow_hlo(), task="pass-order", target="cpu", budget=budget,
                                  strategy="random", name="slow.hlo")

    def wait_until_searching(self, job_id):
        """Until the job's search has taken a step. (A cancel that arrives while the daemon is
        still starting the job can be lost: the job then runs to its end, `done`.)"""
        while True:
            job = self.client.get_job(job_id)
            self.assertFalse(job.final, job)
            if job.state == "running" and job.steps_done > 0:
                return
            time.sleep(0.01)

    def test_submit_watch_result_lookup(self):
        before = self.client.lookup(JAX_HLO, task="pass-order", target="cpu")
        self.assertEqual(before.results, [])
        self.assertEqual(len(before.fingerprint), 64)

        submitted = self.submit_pass_order(JAX_HLO)
        self.assertFalse(submitted.cached)
        self.assertTrue(submitted.job_id)
        self.assertEqual(submitted.job.graph_name, str(JAX_HLO))
        shown = io.StringIO()
        job = self.client.watch(submitted.job_id, progress=Progress("lines", shown))
        self.assertEqual(job.state, "done")
        self.assertIn(f"job {job.job_id} done      100%", shown.getvalue())
        result = job.result("pass-order")
        self.assertEqual((result.task, result.target), ("pass-order", "cpu"))
        self.assertEqual(result.fingerprint, before.fingerprint)
        self.assertLessEqual(result.tuned_score, result.baseline_score)
        self.assertIn("HloModule", result.optimized_hlo)
        self.assertTrue(result.pass_sequence)
        self.assertEqual(result.provenance.mltune_version, self.client.stats()["version"])

        finished = self.client.result(submitted.job_id)
        self.assertEqual(finished.results, job.results)

        found = self.client.lookup(JAX_HLO, task="pass-order", target="cpu")
        self.assertEqual(len(found.results), 1)
        self.assertEqual(found.results[0].optimized_hlo, result.optimized_hlo)
        by_fingerprint = self.client.lookup(fingerprint=before.fingerprint, omit_artifacts=True)
        self.assertEqual([r.task for r in by_fingerprint.results], ["pass-order"])
        self.assertEqual(by_fingerprint.results[0].artifacts, {})

        # The same graph as text: the cache answers, no job.
        again = self.client.submit(JAX_HLO.read_text(), task="pass-order", target="cpu",
                                   budget=20, strategy="greedy", name="as text")
        self.assertEqual(again.cached, True)
        self.assertEqual(again.job_id, "")
        self.assertTrue(again.job.results[0].from_cache)

    def test_live_progress_draws_a_bar_on_a_terminal(self):
        submitted = self.submit_pass_order(EXAMPLE_HLO, budget=10, skip_cache=True)
        terminal = FakeTerminal()
        progress = Progress(stream=terminal)
        self.assertEqual(progress.style, "live")
        self.client.watch(submitted.job_id, progress=progress)
        drawn = terminal.getvalue()
        self.assertTrue(drawn.startswith("\r"), drawn)
        self.assertIn("[########################] 100%", drawn)
        self.assertIn("\x1b[K", drawn)
        self.assertTrue(drawn.endswith("\n"))
        self.assertEqual(Progress(stream=io.StringIO()).style, "lines")

    def test_an_unfinished_job_has_no_result_and_a_cancelled_one_fails(self):
        submitted = self.submit_slow(budget=1_000_000)
        with self.assertRaises(mltune.NoResult) as no_result:
            self.client.result(submitted.job_id)
        self.assertIn(f"job {submitted.job_id} is ", str(no_result.exception))
        self.assertIn("no result yet; follow it with", str(no_result.exception))
        self.wait_until_searching(submitted.job_id)
        self.client.cancel(submitted.job_id)
        with self.assertRaises(mltune.JobFailed) as failed:
            self.client.watch(submitted.job_id, progress=False)
        self.assertEqual(str(failed.exception), f"job {submitted.job_id} was cancelled")
        self.assertEqual(failed.exception.job.state, "cancelled")
        with self.assertRaises(mltune.JobFailed):
            self.client.result(submitted.job_id)

    def test_on_update_stops_the_watch(self):
        submitted = self.submit_slow(budget=1_000_001)
        seen = []
        job = self.client.watch(submitted.job_id, progress=False,
                                on_update=lambda j: (seen.append(j), False)[1])
        self.assertEqual(len(seen), 1)
        self.assertFalse(job.final)
        self.client.cancel(submitted.job_id)

    def test_daemon_errors_keep_their_code_and_name_the_job(self):
        with self.assertRaises(mltune.MltuneError) as missing:
            self.client.get_job("nosuchjob")
        self.assertEqual(missing.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("nosuchjob", str(missing.exception))
        with self.assertRaises(mltune.MltuneError) as bad:
            self.client.submit("HloModule broken\n\nENTRY e {\n  ROOT x = nonsense\n}\n")
        self.assertEqual(bad.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("<graph>:", str(bad.exception))
        with self.assertRaises(ValueError):
            self.client.lookup()
        with self.assertRaises(ValueError):
            self.client.lookup(EXAMPLE_HLO, fingerprint="ab")
        with self.assertRaises(ValueError):
            self.client.submit(pathlib.Path("/nonexistent/model.hlo"))
        with self.assertRaises(TypeError):
            self.client.submit(EXAMPLE_HLO, budget="many")

    def test_listings(self):
        self.assertIn("inprocess-0", [w["name"] for w in self.client.workers()])
        strategies = self.client.strategies()
        self.assertIn(strategies["default_strategy"], [s["name"] for s in
                                                       strategies["strategies"]])
        tasks = {t["name"]: t["targets"] for t in strategies["tasks"]}
        self.assertIn("xla-cpu", tasks["xla-options"])
        stats = self.client.stats()
        self.assertIsInstance(stats["queue_capacity"], int)
        self.assertEqual(stats["data_dir"], self.dir.name)

    def test_server_from_the_environment(self):
        os.environ["MLTUNE_SERVER"] = self.daemon.address
        try:
            with mltune.Client() as client:
                self.assertEqual(client.address, self.daemon.address)
                client.wait_for_ready(10)
        finally:
            del os.environ["MLTUNE_SERVER"]
        self.assertEqual(mltune.server_address(), "127.0.0.1:8470")


class DrainingDaemonTest(unittest.TestCase):
    def test_its_unavailable_is_not_unreachable(self):
        # Connected, the daemon's own UNAVAILABLE ("shutting down") is its answer, not "cannot
        # reach": the client tells them apart by the channel's state, as the C++ client does.
        with tempfile.TemporaryDirectory(prefix="mltune-drain-test-") as folder:
            daemon = MltunedProcess(folder, ["--drain-seconds", "30"])
            try:
                with mltune.Client(daemon.address, timeout=10) as client:
                    # Running for minutes: the daemon drains it and serves meanwhile.
                    running = client.submit(slow_hlo(), task="pass-order", target="cpu",
                                            budget=50_000_000, strategy="random")
                    while client.get_job(running.job_id).steps_done == 0:
                        time.sleep(0.01)
                    daemon.signal(signal.SIGTERM)
                    deadline = time.monotonic() + 10
                    for budget in itertools.count(5):  # a new request each time, never attached
                        try:
                            client.submit(EXAMPLE_HLO, target="cpu", budget=budget)
                        except mltune.MltuneError as e:
                            error = e
                            break
                        self.assertLess(time.monotonic(), deadline, "no refusal after SIGTERM")
                        time.sleep(0.05)
                    self.assertNotIsInstance(error, mltune.Unreachable)
                    self.assertEqual(error.code, grpc.StatusCode.UNAVAILABLE)
                    self.assertIn("shutting down", str(error))
                    client.cancel(running.job_id)
            finally:
                daemon.stop()


class NoDaemonTest(unittest.TestCase):
    def test_unreachable_says_so(self):
        address = f"127.0.0.1:{free_port()}"
        with mltune.Client(address, timeout=5) as client:
            with self.assertRaises(mltune.Unreachable) as e:
                client.stats()
            self.assertTrue(str(e.exception).startswith(f"cannot reach mltuned at {address} ("))
            self.assertIn("is it running?", str(e.exception))
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)
            with self.assertRaises(mltune.Unreachable) as e:
                client.wait_for_ready(0.2)
            self.assertIn("no connection within 0.2 s", str(e.exception))

    def test_an_unreadable_credential_is_named(self):
        with self.assertRaises(mltune.MltuneError) as e:
            mltune.Client("127.0.0.1:1", ca="/nonexistent/ca.pem")
        self.assertEqual(str(e.exception), "cannot read the CA file (ca=, $MLTUNE_CA) "
                         "/nonexistent/ca.pem")


if __name__ == "__main__":
    unittest.main()
