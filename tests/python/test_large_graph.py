"""A model of hundreds of MB through mltune.Client to a real mltuned: a generated 300 MiB ONNX
file (its weights an initializer) is uploaded once in chunks, read from disk piece by piece, and
named by its SHA-256; a second submit sends nothing and is answered from the cache; lookup finds
it by the file; an upload whose bytes do not match its hash is refused and stores nothing.
About 10 s and 1.5 GB of memory in the daemon (its import of the model), little in the client."""

import os
import pathlib
import struct
import tempfile
import unittest

import grpc
import mltune
from mltune._stubs import pb, pb_grpc
from mltuned_process import MltunedProcess


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number, value):
    return _varint(number << 3) + _varint(value)


def _value_info(name, dims):
    shape = b"".join(_field(1, _int_field(1, d)) for d in dims)
    tensor_type = _int_field(1, 1) + _field(2, shape)  # FLOAT
    return _field(1, name.encode()) + _field(2, _field(1, tensor_type))


def write_matmul_onnx(path, rows, cols):
    """Y = X @ W, W an f32[rows, cols] initializer, as tests/support/large_onnx.cc writes it,
    streamed so the weights never sit in memory. Returns the file's size."""
    weight_bytes = rows * cols * 4
    tensor_head = (_int_field(1, rows) + _int_field(1, cols) + _int_field(2, 1) +
                   _field(8, b"W") + _varint(9 << 3 | 2) + _varint(weight_bytes))
    node = (_field(1, b"X") + _field(1, b"W") + _field(2, b"Y") + _field(3, b"matmul") +
            _field(4, b"MatMul"))
    graph_head = (_field(1, node) + _field(2, b"large") + _varint(5 << 3 | 2) +
                  _varint(len(tensor_head) + weight_bytes) + tensor_head)
    graph_tail = _field(11, _value_info("X", [1, rows])) + _field(12, _value_info("Y", [1, cols]))
    model_head = (_int_field(1, 8) + _field(8, _int_field(2, 17)) + _varint(7 << 3 | 2) +
                  _varint(len(graph_head) + weight_bytes + len(graph_tail)) + graph_head)
    block = struct.pack("<4096f", *[((i * 37) % 2001 - 1000) * 1e-4 for i in range(4096)]) * 256
    with open(path, "wb") as f:
        f.write(model_head)
        left = weight_bytes
        while left > 0:
            f.write(block[:min(left, len(block))])
            left -= len(block)
        f.write(graph_tail)
    return os.path.getsize(path)


class LargeGraphTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="mltune-large-graph-test-")
        cls.daemon = MltunedProcess(os.path.join(cls.dir.name, "daemon"))
        cls.client = mltune.Client(cls.daemon.address, timeout=30)
        cls.model = pathlib.Path(cls.dir.name) / "large.onnx"
        cls.size = write_matmul_onnx(cls.model, 8192, 9600)  # 300 MiB of weights

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()
        cls.dir.cleanup()

    def submit(self):
        return self.client.submit(self.model, task="placement", target="cluster-sim", budget=5,
                                  strategy="random")

    def test_uploaded_once_then_answered_from_its_hash(self):
        self.assertGreater(self.size, 300 << 20)
        before = self.client.stats()
        first = self.submit()
        self.assertFalse(first.cached)
        self.assertEqual(first.graph.size, self.size)
        self.assertEqual(first.graph.bytes_sent, self.size)
        self.assertFalse(first.graph.already_stored)
        self.assertEqual(len(first.graph.sha256), 64)
        job = self.client.watch(first.job_id, progress=False)
        self.assertEqual(job.state, "done")
        self.assertEqual(job.graph_name, str(self.model))

        second = self.submit()
        self.assertTrue(second.cached)
        self.assertTrue(second.graph.already_stored)
        self.assertEqual(second.graph.bytes_sent, 0)
        self.assertEqual(second.graph.sha256, first.graph.sha256)
        found = self.client.lookup(self.model, task="placement")
        self.assertEqual(found.fingerprint, job.fingerprint)
        self.assertEqual(len(found.results), 1)
        stats = self.client.stats()
        self.assertEqual(stats["stored_graphs"], before["stored_graphs"] + 1)
        self.assertEqual(stats["stored_graph_bytes"], before["stored_graph_bytes"] + self.size)

    def test_a_corrupted_upload_is_refused_and_stores_nothing(self):
        data = bytes(range(256)) * 8192  # 2 MiB
        source = mltune.graph.GraphSource(data)
        sha256 = source.sha256()
        corrupted = bytearray(data)
        corrupted[1 << 20] ^= 0x01
        stub = pb_grpc.CompileServiceStub(self.client._channel)
        half = 1 << 20
        chunks = [pb.GraphChunk(sha256=sha256, size=len(data), offset=0,
                                data=bytes(corrupted[:half])),
                  pb.GraphChunk(offset=half, data=bytes(corrupted[half:]))]
        with self.assertRaises(grpc.RpcError) as refused:
            stub.UploadGraph(iter(chunks), timeout=30)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("the upload was corrupted", refused.exception.details())
        self.assertFalse(stub.HasGraph(pb.HasGraphRequest(sha256=sha256), timeout=30).stored)
        ref = self.client.upload_graph(data)
        self.assertEqual((ref.sha256, ref.bytes_sent, ref.already_stored),
                         (sha256, len(data), False))


if __name__ == "__main__":
    unittest.main()
