"""Builds the mltune package with its gRPC stubs generated from the repository's proto/
(generate_stubs.py), so `pip install ./python` works from a source checkout."""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

# setuptools.build_meta does not put the project folder on sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_stubs  # noqa: E402


class BuildPyWithStubs(build_py):
    """The stubs into the build folder, where the wheel takes them from, then build_py (first
    the stubs: without proto/ the build stops before doing anything else)."""

    def run(self):
        generate_stubs.generate(self.build_lib)
        super().run()


setup(cmdclass={"build_py": BuildPyWithStubs},
      install_requires=generate_stubs.runtime_requirements())
