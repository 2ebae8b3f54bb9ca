"""How a graph goes on the wire: the one place that turns a caller's graph into a request's Graph
message (submit and lookup both come here). A graph over INLINE_GRAPH_BYTES (a model with its
weights) goes by content hash: the client asks HasGraph, uploads it in chunks only when the daemon
lacks it (UploadGraph, proto/mltune/v1/compile_service.proto), and names it by its SHA-256."""

import hashlib
import os

from mltune._stubs import pb

# As the C++ client (client/rpc_client.h): inline up to 1 MiB, uploads in chunks of 4 MiB.
INLINE_GRAPH_BYTES = 1 << 20
UPLOAD_CHUNK_BYTES = 4 << 20

# HLO text is printable; a serialized ONNX ModelProto starts with a field tag (0x08). The same
# test as the C++ client's (ir::onnx::LooksLikeText).
_SNIFF_BYTES = 64


def looks_like_text(data):
    return all(b >= 0x20 or b in (0x09, 0x0A, 0x0D) for b in data[:_SNIFF_BYTES])


class GraphSource:
    """A graph given as bytes, str (HLO text) or os.PathLike (a file, read piece by piece, never
    whole unless it goes inline), with its name (a file's path unless `name` is given)."""

    def __init__(self, graph, name=None):
        self._data = None
        self._path = None
        if isinstance(graph, os.PathLike):
            self._path = os.fspath(graph)
            try:
                self.size = os.path.getsize(self._path)
                with open(self._path, "rb") as f:
                    self.head = f.read(_SNIFF_BYTES)
            except OSError as e:
                raise ValueError(f"cannot read {self._path}: {e.strerror}") from None
            self.name = name if name is not None else self._path
        elif isinstance(graph, str):
            self._data = graph.encode("utf-8")
        elif isinstance(graph, (bytes, bytearray, memoryview)):
            self._data = bytes(graph)
        else:
            raise TypeError("a graph is bytes, str (HLO text) or a path (pathlib.Path), not "
                            f"{type(graph).__name__}")
        if self._data is not None:
            self.size = len(self._data)
            self.head = self._data[:_SNIFF_BYTES]
            self.name = name or ""

    def pieces(self, size=UPLOAD_CHUNK_BYTES):
        """(offset, bytes) of consecutive pieces of at most `size` bytes."""
        if self._data is not None:
            for offset in range(0, self.size, size):
                yield offset, self._data[offset:offset + size]
            return
        try:
            with open(self._path, "rb") as f:
                offset = 0
                while offset < self.size:
                    piece = f.read(size)
                    if not piece:
                        raise ValueError(f"cannot read {self._path}: it ended early, at byte "
                                         f"{offset}")
                    yield offset, piece
                    offset += len(piece)
        except OSError as e:
            raise ValueError(f"cannot read {self._path}: {e.strerror}") from None

    def sha256(self):
        digest = hashlib.sha256()
        for _, piece in self.pieces():
            digest.update(piece)
        return digest.hexdigest()

    def read_all(self):
        if self._data is not None:
            return self._data
        return b"".join(piece for _, piece in self.pieces())


def upload_chunks(source, sha256):
    """The GraphChunk stream of an upload: the first names the graph's hash and size."""
    for offset, piece in source.pieces():
        if offset == 0:
            yield pb.GraphChunk(sha256=sha256, size=source.size, offset=0, data=piece)
        else:
            yield pb.GraphChunk(offset=offset, data=piece)


def graph_message(graph, name=None, format=None, store=None):
    """(Graph message, GraphSource). format: None (told by content, as the daemon does), "hlo" or
    "onnx"; a binary graph is ONNX whatever `format` says, as in the C++ client. store(source):
    uploads a large graph and returns its hash, or None to send it inline (a daemon without
    UploadGraph)."""
    source = graph if isinstance(graph, GraphSource) else GraphSource(graph, name)
    if format not in (None, "hlo", "onnx"):
        raise ValueError(f"graph format {format!r}: hlo or onnx")
    onnx = format == "onnx" or not looks_like_text(source.head)
    message = pb.Graph(name=source.name,
                       format=pb.GRAPH_FORMAT_ONNX if onnx else pb.GRAPH_FORMAT_HLO_TEXT)
    sha256 = store(source) if store is not None and source.size > INLINE_GRAPH_BYTES else None
    if sha256:
        message.sha256 = sha256
    else:
        message.data = source.read_all()
    return message, source
