// A kernel as a graph, the input of the learned cost model (issue 9; Kaufman et al., "A Learned
// Performance Model for TPUs", MLSys 2021): one node per op of the kernel with its opcode id and
// scalar features, the data edges between them, and kernel-level features (the tunable
// configuration and static performance figures). Plain data, so features are built without
// LibTorch and stored in the measurement store (docs/cost_models.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/module.h"

namespace mltune::costmodels::features {

// Per-node scalar features (see node_features.cc for the list and their scaling).
// Append-only: a model trained on fewer features uses the leading ones.
inline constexpr int kNodeFeatures = 41;
// Kernel-level features: static figures, the configuration, then the configuration applied to
// the kernel's reduced row and inner loop, then the work of its fused loop nests (see
// kernel_features.cc). Append-only, as kNodeFeatures.
inline constexpr int kKernelFeatures = 44;

struct KernelGraph {
  std::vector<int32_t> opcodes;        // per node: OpcodeId(); 0 = unknown opcode
  std::vector<float> node_features;    // [nodes x kNodeFeatures], row-major
  std::vector<int32_t> edge_src;       // producer node, per edge
  std::vector<int32_t> edge_dst;       // consumer node, per edge
  std::vector<float> kernel_features;  // [kKernelFeatures]

  int32_t size() const { return static_cast<int32_t>(opcodes.size()); }
  bool operator==(const KernelGraph&) const = default;
};

// The opcode vocabulary: a stable id in [1, OpcodeVocabularySize()) per HLO opcode name, 0 for
// names it does not hold.
int32_t OpcodeId(const std::string& opcode);
int32_t OpcodeVocabularySize();

// A kernel configuration as (parameter name, value) pairs, e.g. the CPU backend's
// {("block", 32), ("unroll", 4), ...} or the tpu-sim tile's {("tile_m", 256), ...}.
using Configuration = std::vector<std::pair<std::string, int64_t>>;

// The kernel-feature slot of a configuration parameter, or -1 for a name no slot holds.
int ConfigSlot(std::string_view parameter);
// Every parameter name that has a slot, in slot order.
const std::vector<std::string>& ConfigParameterNames();

// Writes `config` into `graph`'s configuration slots (clearing the others). InvalidArgument for a
// parameter without a slot. The store keeps one graph per kernel with every slot at 0; a trainer
// sets each measurement's configuration on a copy.
absl::Status SetConfiguration(const Configuration& config, KernelGraph* graph);
// "name=value,name=value" (the measurement log's configuration text) as pairs; "" is empty.
absl::StatusOr<Configuration> ParseConfiguration(std::string_view text);

// Nanoseconds one element of elementwise `op` of `type` costs in the CPU backend's generated code
// (element_cost.cc; bench/element_costs measures them again): vectorized arithmetic and the
// prelude's exp and tanh 0.1-1 ns, scalar libm calls 4-25 ns. Node slot 40, kernel slot 42.
double ElementCostNs(ir::Opcode op, ir::PrimitiveType type);
// Whether the backend computes `op` of `type` with a scalar libm call, which also keeps the loop
// around it from vectorizing (kernel slot 43).
bool CallsScalarLibm(ir::Opcode op, ir::PrimitiveType type);

// The kernel made of `nodes` (ids into `graph`, topological order, as a costmodels::FusionPlan
// kernel lists them) of `module`'s entry computation, which `graph` was built from
// (costmodels::BuildOpGraph); per-instruction detail (dims, layout, windows, reduced
// dimensions) is looked up in `module` by node name. InvalidArgument for an empty or
// out-of-range node list or a configuration parameter without a slot.
absl::StatusOr<KernelGraph> BuildKernelGraph(const OpGraph& graph, const ir::Module& module,
                                             const std::vector<int32_t>& nodes,
                                             const Configuration& config);

// The kernel's identity for grouping measurements: SHA-256 (hex) of its structure (per node in
// the given order: opcode, result shape with layout, attributes, called computations' ops, and
// operands as kernel-local references or the shapes of values read from outside; which nodes
// leave the kernel). Names and the configuration do not enter it, so the same kernel in two
// modules has one key. Same preconditions as BuildKernelGraph.
absl::StatusOr<std::string> KernelKey(const OpGraph& graph, const ir::Module& module,
                                      const std::vector<int32_t>& nodes);

// Compact little-endian binary form ("MKG1", counts, then the arrays). ParseKernelGraph checks
// everything (magic, counts against the length, feature widths, opcode and edge ranges, finite
// values) and returns InvalidArgument for malformed bytes.
std::string SerializeKernelGraph(const KernelGraph& graph);
absl::StatusOr<KernelGraph> ParseKernelGraph(std::string_view bytes);
// Whether this build reads `bytes` (ParseKernelGraph succeeds): a stored graph of an older
// feature set is not, and storage::Store::PutKernelGraph replaces it given this check.
bool IsCurrentKernelGraph(const std::string& bytes);

}  // namespace mltune::costmodels::features
