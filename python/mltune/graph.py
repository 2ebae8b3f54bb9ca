"""How a graph goes on the wire: the one place that turns a caller's graph into a request's Graph
message (submit and lookup both come here), so sending large graphs by content hash, uploaded
once, is a change to this file alone."""

import os

from mltune._stubs import pb

# HLO text is printable; a serialized ONNX ModelProto starts with a field tag (0x08). The same
# test as the C++ client's (ir::onnx::LooksLikeText).
_SNIFF_BYTES = 64


def looks_like_text(data):
    return all(b >= 0x20 or b in (0x09, 0x0A, 0x0D) for b in data[:_SNIFF_BYTES])


def graph_bytes(graph, name=None):
    """(bytes, name) of a graph given as bytes, str (HLO text) or os.PathLike (a file, named by
    its path unless `name` is given)."""
    if isinstance(graph, os.PathLike):
        path = os.fspath(graph)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ValueError(f"cannot read {path}: {e.strerror}") from None
        return data, name if name is not None else path
    if isinstance(graph, str):
        return graph.encode("utf-8"), name or ""
    if isinstance(graph, (bytes, bytearray, memoryview)):
        return bytes(graph), name or ""
    raise TypeError("a graph is bytes, str (HLO text) or a path (pathlib.Path), not "
                    f"{type(graph).__name__}")


def graph_message(graph, name=None, format=None):
    """The Graph message. format: None (told by content, as the daemon does), "hlo" or "onnx"; a
    binary graph is ONNX whatever `format` says, as in the C++ client."""
    data, name = graph_bytes(graph, name)
    if format not in (None, "hlo", "onnx"):
        raise ValueError(f"graph format {format!r}: hlo or onnx")
    onnx = format == "onnx" or not looks_like_text(data)
    return pb.Graph(data=data, name=name,
                    format=pb.GRAPH_FORMAT_ONNX if onnx else pb.GRAPH_FORMAT_HLO_TEXT)
