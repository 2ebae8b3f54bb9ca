#include "tests/support/large_onnx.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

namespace mltune::testing {
namespace {

void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void Key(std::string& out, int field, int wire_type) { Varint(out, (field << 3) | wire_type); }

void VarintField(std::string& out, int field, uint64_t v) {
  Key(out, field, 0);
  Varint(out, v);
}

void BytesField(std::string& out, int field, const std::string& bytes) {
  Key(out, field, 2);
  Varint(out, bytes.size());
  out += bytes;
}

// ValueInfoProto: a name and a tensor type f32[dims...].
std::string ValueInfo(const std::string& name, std::vector<int64_t> dims) {
  std::string shape;
  for (int64_t d : dims) {
    std::string dim;
    VarintField(dim, 1, static_cast<uint64_t>(d));  // dim_value
    BytesField(shape, 1, dim);
  }
  std::string tensor;
  VarintField(tensor, 1, 1);  // elem_type FLOAT
  BytesField(tensor, 2, shape);
  std::string type;
  BytesField(type, 1, tensor);  // tensor_type
  std::string info;
  BytesField(info, 1, name);
  BytesField(info, 2, type);
  return info;
}

}  // namespace

int64_t WriteMatMulOnnx(const std::string& path, int64_t rows, int64_t cols, uint32_t seed) {
  const uint64_t weight_bytes = static_cast<uint64_t>(rows * cols) * 4;
  // TensorProto W up to its raw_data's bytes: dims, data_type, name, the raw_data key and length.
  std::string tensor_head;
  VarintField(tensor_head, 1, static_cast<uint64_t>(rows));
  VarintField(tensor_head, 1, static_cast<uint64_t>(cols));
  VarintField(tensor_head, 2, 1);  // FLOAT
  BytesField(tensor_head, 8, "W");
  Key(tensor_head, 9, 2);
  Varint(tensor_head, weight_bytes);
  // GraphProto: the node, its name, then the initializer (whose weights follow), then inputs and
  // outputs after them.
  std::string node;
  BytesField(node, 1, "X");
  BytesField(node, 1, "W");
  BytesField(node, 2, "Y");
  BytesField(node, 3, "matmul");
  BytesField(node, 4, "MatMul");
  std::string graph_head;
  BytesField(graph_head, 1, node);
  BytesField(graph_head, 2, "large");
  Key(graph_head, 5, 2);
  Varint(graph_head, tensor_head.size() + weight_bytes);
  graph_head += tensor_head;
  std::string graph_tail;
  BytesField(graph_tail, 11, ValueInfo("X", {1, rows}));
  BytesField(graph_tail, 12, ValueInfo("Y", {1, cols}));
  // ModelProto: ir_version 8, opset 17, the graph.
  std::string model_head;
  VarintField(model_head, 1, 8);
  std::string opset;
  VarintField(opset, 2, 17);
  BytesField(model_head, 8, opset);
  Key(model_head, 7, 2);
  Varint(model_head, graph_head.size() + weight_bytes + graph_tail.size());
  model_head += graph_head;

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(model_head.data(), static_cast<std::streamsize>(model_head.size()));
  // Small weights of a few thousand distinct values, in pieces of 4 MiB.
  std::vector<float> piece(1 << 20);
  uint64_t written = 0;
  uint32_t state = 2463534242u ^ seed;
  while (written < weight_bytes) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(piece.size(), (weight_bytes - written) / 4));
    for (size_t i = 0; i < n; ++i) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      piece[i] = static_cast<float>(static_cast<int>(state % 2001) - 1000) * 1e-4f;
    }
    out.write(reinterpret_cast<const char*>(piece.data()), static_cast<std::streamsize>(n * 4));
    written += n * 4;
  }
  out.write(graph_tail.data(), static_cast<std::streamsize>(graph_tail.size()));
  out.close();
  if (!out) return -1;
  return static_cast<int64_t>(model_head.size() + weight_bytes + graph_tail.size());
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

}  // namespace mltune::testing
