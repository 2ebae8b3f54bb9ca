"""`pip install ./python` from a copy of the checkout: the package installs with its gRPC stubs
generated from proto/ and the runtime versions they need, and says what is missing without
proto/. Offline: no build isolation, no dependencies fetched (this interpreter has them)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("MLTUNE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
# What a build leaves in python/; a copy without it builds as a fresh checkout does.
LEFT_BY_BUILDS = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "v1")


def pip_install(project, target):
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
         "--no-index", "--target", target, project], capture_output=True, text=True)


class PackageTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="mltune-package-test-")
        self.checkout = os.path.join(self.dir.name, "checkout")
        shutil.copytree(os.path.join(SOURCE, "python"), os.path.join(self.checkout, "python"),
                        ignore=LEFT_BY_BUILDS)

    def tearDown(self):
        self.dir.cleanup()

    def test_installs_with_its_stubs(self):
        shutil.copytree(os.path.join(SOURCE, "proto"), os.path.join(self.checkout, "proto"))
        site = os.path.join(self.dir.name, "site")
        installed = pip_install(os.path.join(self.checkout, "python"), site)
        self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
        env = dict(os.environ, PYTHONPATH=site)
        check = subprocess.run(
            [sys.executable, "-c", "import mltune, mltune.jax\n"
             "from mltune.v1 import compile_service_pb2_grpc, worker_service_pb2\n"
             "print(mltune.__file__)\n"
             "print(mltune.Client('127.0.0.1:1').address)"],
            cwd=self.dir.name, env=env, capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertEqual(check.stdout.splitlines(),
                         [os.path.join(site, "mltune", "__init__.py"), "127.0.0.1:1"])
        metadata = next(os.path.join(site, d, "METADATA") for d in os.listdir(site)
                        if d.startswith("mltune-") and d.endswith(".dist-info"))
        with open(metadata) as f:
            requires = [line for line in f.read().splitlines() if line.startswith("Requires-Dist")]
        self.assertTrue(any("grpcio>=" in r for r in requires), requires)
        self.assertTrue(any("protobuf" in r for r in requires), requires)

    def test_without_proto_it_says_where_it_looked(self):
        installed = pip_install(os.path.join(self.checkout, "python"),
                                os.path.join(self.dir.name, "site"))
        self.assertNotEqual(installed.returncode, 0)
        self.assertIn("no mltune/v1/*.proto under", installed.stdout + installed.stderr)
        self.assertIn("MLTUNE_PROTO_DIR", installed.stdout + installed.stderr)


if __name__ == "__main__":
    unittest.main()
