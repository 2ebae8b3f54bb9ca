// Fusion decisions and the kernels they make: an op graph split into kernels XLA-style (loop and
// input fusion of elementwise-like chains into their consumer, a dot or convolution with its
// elementwise prologue and epilogue, at most one matrix op or reduction per kernel), and the
// FLOPs and bytes of each kernel, which the simulators and the analytical CostModel price.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "costmodels/analytical/op_graph.h"

namespace mltune::costmodels {

struct FusionPlan {
  std::vector<int32_t> kernel_of;             // per node
  std::vector<std::vector<int32_t>> kernels;  // node ids per kernel, topological
  int32_t size() const { return static_cast<int32_t>(kernels.size()); }
};

// A concatenate of more distinct operands than this is not fused into its consumers: fused, each
// element of the consumer selects among all operands and computes every one of them (a 128-step
// scan's stacked outputs read by a reduction ran 30 s). Alone, the CPU backend writes it operand by
// operand, as XLA's CPU backend copies each operand of a concatenate.
inline constexpr int kMaxFusedConcatOperands = 8;

// Nodes the planner may fuse into their consumers (ops with users that are not opaque, and not
// reductions, gathers or wide concatenates, which stay kernel roots), in topological order: the
// positions of the fusion decision vector.
std::vector<int32_t> FusibleProducers(const OpGraph& graph);

// Greedy fusion in reverse topological order: a producer joins its consumers' kernel when every
// consumer is in that one kernel, the producer is fusible, the kernel keeps at most one "heavy"
// op (dot, convolution, reduction, gather, ...), and `allow` (one flag per FusibleProducers
// entry; empty = all) lets it. All-allowed is the compiler's default fusion.
FusionPlan PlanFusion(const OpGraph& graph, const std::vector<uint8_t>& allow = {});
// Priority fusion (XLA's priority fusion, GO's learned fusion): every fusible producer with a
// priority above zero, highest priority first (ties: later ops first), joins its consumers'
// kernel under the same legality rules as PlanFusion; priority 0 keeps it apart. `priority` has
// one entry per FusibleProducers entry; all ones is PlanFusion's default plan.
FusionPlan PlanFusionByPriority(const OpGraph& graph, const std::vector<int32_t>& priority);
// One kernel per op (no fusion).
FusionPlan Unfused(const OpGraph& graph);

// OK, or InvalidArgument naming the kernel and the rule it breaks: every node in exactly one
// kernel, kernels acyclic (no path leaves a kernel and comes back), at most one heavy op, opaque
// ops alone.
absl::Status ValidateFusion(const OpGraph& graph, const FusionPlan& plan);

// What a kernel does, as the simulators see it.
struct KernelSummary {
  int32_t id = 0;
  std::string name;          // its root op's name
  std::string element_type;  // of the root
  int64_t element_bytes = 4;
  bool opaque = false;  // one op that cannot be tiled (control flow, custom call, sort, ...)
  bool matmul = false;  // has a dot or convolution; `mm` and `matmul_element_bytes` are set
  MatmulDims mm;
  int64_t matmul_element_bytes = 4;
  double matrix_flops = 0;  // of the matrix op
  double vector_flops = 0;  // everything else (elementwise, reductions)
  double transcendentals = 0;
  double matmul_input_bytes = 0;  // the matrix op's two operands (re-read across tiles)
  double other_input_bytes = 0;   // the kernel's other inputs from outside (read once)
  double output_bytes = 0;        // results used outside the kernel or by the module
  double weight_bytes = 0;        // parameters and constants read (counted in inputs)
  // The iteration space of a non-matmul kernel: its largest array (results, values and parameters
  // read) as rows x cols.
  int64_t rows = 1, cols = 1;
  int32_t ops = 0;
  OpCost roofline_cost;  // sum of flops, transcendentals and kernel-level bytes

  double input_bytes() const { return matmul_input_bytes + other_input_bytes; }
};

std::vector<KernelSummary> SummarizeKernels(const OpGraph& graph, const FusionPlan& plan);

// The op graph of a fusion plan's kernels, so the placement simulator runs fused code: one node
// per kernel (its summary's costs, outputs and weights), in a topological order; an edge per
// producer whose result crosses kernels, counted once per producer op. `kernel_of_node[i]` gets
// the plan's kernel id of node i.
OpGraph FuseOpGraph(const OpGraph& graph, const FusionPlan& plan,
                    std::vector<int32_t>* kernel_of_node = nullptr);

}  // namespace mltune::costmodels
