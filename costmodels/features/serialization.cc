// The binary form of a KernelGraph, as the store keeps it: "MKG1", then five little-endian
// uint32 counts (nodes, node features, edges, kernel features, reserved 0), then opcodes (int32),
// node features (float32), edge sources and destinations (int32) and kernel features (float32).
// Parsing trusts nothing: every count is checked against the length before anything is
// allocated, and every value against its range.
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/features/kernel_graph.h"

namespace mltune::costmodels::features {
namespace {

constexpr char kMagic[4] = {'M', 'K', 'G', '1'};
constexpr size_t kHeaderBytes = 4 + 5 * 4;

static_assert(sizeof(float) == 4, "float32 features");

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void PutInts(std::string& out, const std::vector<int32_t>& values) {
  for (int32_t v : values) PutU32(out, static_cast<uint32_t>(v));
}

void PutFloats(std::string& out, const std::vector<float>& values) {
  for (float f : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    PutU32(out, bits);
  }
}

absl::Status Malformed(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("malformed kernel graph: ", why));
}

}  // namespace

std::string SerializeKernelGraph(const KernelGraph& graph) {
  std::string out(kMagic, 4);
  PutU32(out, static_cast<uint32_t>(graph.opcodes.size()));
  PutU32(out, kNodeFeatures);
  PutU32(out, static_cast<uint32_t>(graph.edge_src.size()));
  PutU32(out, static_cast<uint32_t>(graph.kernel_features.size()));
  PutU32(out, 0);
  PutInts(out, graph.opcodes);
  PutFloats(out, graph.node_features);
  PutInts(out, graph.edge_src);
  PutInts(out, graph.edge_dst);
  PutFloats(out, graph.kernel_features);
  return out;
}

absl::StatusOr<KernelGraph> ParseKernelGraph(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return Malformed("no MKG1 header");
  }
  const char* p = bytes.data() + 4;
  const uint64_t nodes = GetU32(p), width = GetU32(p + 4), edges = GetU32(p + 8),
                 kernel_width = GetU32(p + 12), reserved = GetU32(p + 16);
  if (width != kNodeFeatures || kernel_width != kKernelFeatures) {
    return Malformed(absl::StrCat(width, " node and ", kernel_width,
                                  " kernel features per entry; this mltune uses ", kNodeFeatures,
                                  " and ", kKernelFeatures));
  }
  if (reserved != 0) return Malformed("reserved header field is not 0");
  const uint64_t words = nodes + nodes * width + 2 * edges + kernel_width;
  if (bytes.size() != kHeaderBytes + 4 * words) {
    return Malformed(
        absl::StrCat(bytes.size(), " bytes; the header's counts need ", kHeaderBytes + 4 * words));
  }
  p += 20;
  auto next = [&p]() {
    const uint32_t v = GetU32(p);
    p += 4;
    return v;
  };
  auto next_float = [&next]() {
    const uint32_t bits = next();
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  KernelGraph g;
  const int32_t vocabulary = OpcodeVocabularySize();
  for (uint64_t i = 0; i < nodes; ++i) {
    const int32_t id = static_cast<int32_t>(next());
    if (id < 0 || id >= vocabulary) return Malformed(absl::StrCat("opcode id ", id));
    g.opcodes.push_back(id);
  }
  for (uint64_t i = 0; i < nodes * width; ++i) g.node_features.push_back(next_float());
  for (std::vector<int32_t>* list : {&g.edge_src, &g.edge_dst}) {
    for (uint64_t i = 0; i < edges; ++i) {
      const int32_t node = static_cast<int32_t>(next());
      if (node < 0 || static_cast<uint64_t>(node) >= nodes) {
        return Malformed(absl::StrCat("edge endpoint ", node, " with ", nodes, " nodes"));
      }
      list->push_back(node);
    }
  }
  for (uint64_t i = 0; i < kernel_width; ++i) g.kernel_features.push_back(next_float());
  for (const std::vector<float>* list : {&g.node_features, &g.kernel_features}) {
    for (float f : *list) {
      if (!std::isfinite(f)) return Malformed("a feature is not a finite number");
    }
  }
  return g;
}

bool IsCurrentKernelGraph(const std::string& bytes) { return ParseKernelGraph(bytes).ok(); }

}  // namespace mltune::costmodels::features
