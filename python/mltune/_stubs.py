"""The generated gRPC stubs, or an ImportError that says how to get them."""

try:
    from mltune.v1 import compile_service_pb2 as pb
    from mltune.v1 import compile_service_pb2_grpc as pb_grpc
except ImportError as e:
    raise ImportError(
        f"mltune's gRPC stubs (mltune.v1) are missing ({e}): they are generated when the package "
        "is built, so install it with `pip install ./python` from an mltune checkout, or run "
        "`python python/generate_stubs.py DIR` and put DIR on PYTHONPATH") from e

__all__ = ["pb", "pb_grpc"]
