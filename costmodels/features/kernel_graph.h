// A kernel as a graph, the input of the learned cost model (issue 9; Kaufman et al., "A Learned
// Performance Model for TPUs", MLSys 2021): one node per op of the kernel with its opcode id and
// scalar features, the data edges between them, and kernel-level features (the tunable
// configuration and static performance figures). Plain data, so features are built without
// LibTorch and stored in the measurement store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mltune::costmodels::features {

// Per-node scalar features (see kernel_graph.cc for the list and their scaling).
inline constexpr int kNodeFeatures = 24;
// Kernel-level features: static figures, then the configuration (see kernel_graph.cc).
inline constexpr int kKernelFeatures = 24;

struct KernelGraph {
  std::vector<int32_t> opcodes;     // per node: OpcodeId(); 0 = unknown opcode
  std::vector<float> node_features;  // [nodes x kNodeFeatures], row-major
  std::vector<int32_t> edge_src;     // producer node, per edge
  std::vector<int32_t> edge_dst;     // consumer node, per edge
  std::vector<float> kernel_features;  // [kKernelFeatures]

  int32_t size() const { return static_cast<int32_t>(opcodes.size()); }
};

// The opcode vocabulary: a stable id in [1, OpcodeVocabularySize()) per HLO opcode name, 0 for
// names it does not hold.
int32_t OpcodeId(const std::string& opcode);
int32_t OpcodeVocabularySize();

}  // namespace mltune::costmodels::features
