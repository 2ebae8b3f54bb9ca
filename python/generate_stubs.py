"""Generates mltune's gRPC stubs (mltune/v1/*_pb2.py, *_pb2_grpc.py) from the repository's
proto/ with grpc_tools.protoc. setup.py runs it when the package is built; the tests run it into
the build folder (tests/python/run_tests). Usage: python generate_stubs.py OUT_DIR [PROTO_DIR]."""

import glob
import os
import sys

# The stubs import each other as `mltune.v1.*`, the protos' own package path: generating them
# under OUT_DIR/mltune/v1 makes them part of the `mltune` package without rewriting imports.
PROTO_PACKAGE = os.path.join("mltune", "v1")


def default_proto_dir():
    """$MLTUNE_PROTO_DIR, else the checkout's proto/ beside python/."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("MLTUNE_PROTO_DIR") or os.path.join(os.path.dirname(here), "proto")


def generate(out_dir, proto_dir=None):
    """Writes the stubs of every proto/mltune/v1/*.proto under out_dir; returns their paths."""
    proto_dir = proto_dir or default_proto_dir()
    protos = sorted(glob.glob(os.path.join(proto_dir, PROTO_PACKAGE, "*.proto")))
    if not protos:
        raise SystemExit(
            f"mltune: no {PROTO_PACKAGE}/*.proto under {proto_dir}: the Python package is built "
            "from a source checkout (pip install ./python at the repository's root), or set "
            "MLTUNE_PROTO_DIR to the folder holding mltune/v1/compile_service.proto")
    try:
        from grpc_tools import protoc
        import grpc_tools
    except ImportError:
        raise SystemExit("mltune: building the gRPC stubs needs grpcio-tools "
                         "(pip install grpcio-tools)") from None
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    os.makedirs(out_dir, exist_ok=True)
    args = ["grpc_tools.protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}", *protos]
    if protoc.main(args) != 0:
        raise SystemExit(f"mltune: protoc failed on {', '.join(protos)}")
    package = os.path.join(out_dir, PROTO_PACKAGE)
    open(os.path.join(package, "__init__.py"), "a").close()
    return sorted(glob.glob(os.path.join(package, "*.py")))


def runtime_requirements():
    """The grpcio and protobuf versions the generated code needs at run time: those that the
    grpcio-tools which generated it requires (its stubs refuse older runtimes)."""
    from importlib import metadata
    wanted = []
    for requirement in metadata.requires("grpcio-tools") or []:
        name = requirement.split(";")[0].strip()
        if name.startswith(("grpcio", "protobuf")) and not name.startswith("grpcio-tools"):
            wanted.append(name)
    return wanted or ["grpcio", "protobuf"]


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    for path in generate(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None):
        print(path)
