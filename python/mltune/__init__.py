"""Python client of mltuned, mltune's autotuning daemon (docs/python.md).

    client = mltune.Client()                       # $MLTUNE_SERVER, else 127.0.0.1:8470
    submitted = client.submit(pathlib.Path("model.hlo"), task="pass-order", budget=200)
    job = client.watch(submitted.job_id)           # a progress bar on a terminal
    job.results[0].optimized_hlo

JAX users: mltune.jax.tune(fn, *example_args) returns fn compiled with the tuned result.
"""

import pkgutil

# The gRPC stubs (mltune.v1) are generated at build time; tests generate them into a folder of
# their own, which this lets join the package when it is on sys.path.
__path__ = pkgutil.extend_path(__path__, __name__)

from mltune.client import Client, server_address  # noqa: E402
from mltune.errors import JobFailed, MltuneError, NoResult, Unreachable  # noqa: E402
from mltune.types import (Budget, GraphRef, Job, LookupResult, Provenance, Submission,  # noqa: E402
                          TaskResult)

__all__ = ["Budget", "Client", "Job", "JobFailed", "LookupResult", "MltuneError", "NoResult",
           "GraphRef", "Provenance", "Submission", "TaskResult", "Unreachable", "server_address"]
__version__ = "0.1.0"
