// Helpers shared by the costmodels/features/*.cc files. Internal to costmodels/features/.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/module.h"

namespace mltune::costmodels::features {

// A kernel's nodes with what every feature needs: their instructions and how each node sits in
// the kernel.
struct KernelView {
  const OpGraph* graph = nullptr;
  std::vector<int32_t> nodes;                  // graph ids, in the caller's order
  std::unordered_map<int32_t, int32_t> local;  // graph id -> position in `nodes`
  std::vector<const ir::Instruction*> instrs;  // per node; nullptr when the module lacks it
  std::vector<uint8_t> is_output;    // its value leaves the kernel (or is a module result)
  std::vector<uint8_t> reads_input;  // reads another kernel's value or a parameter/constant array

  const OpNode& node(int32_t i) const { return graph->nodes[static_cast<size_t>(nodes[i])]; }
  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
};

// InvalidArgument for an empty node list, an id outside the graph or a repeated id.
absl::StatusOr<KernelView> MakeKernelView(const OpGraph& graph, const ir::Module& module,
                                          const std::vector<int32_t>& nodes);

// log2(1 + max(x, 0)): sizes and counts span many orders of magnitude.
float Log2p(double x);

// The first array of a shape (the shape itself unless it is a tuple); nullptr for none.
const ir::Shape* FirstArray(const ir::Shape& shape);

// How the kernel's ops run in its fused loop nests (index_flow.cc): the loop nests are those the
// CPU backend emits, an output's dimensions outermost first, each reduce's reduced dimensions and
// each window inner to them.
struct IndexFlow {
  // Per node: times it is computed (its index's loops, hoisted out of the loops it does not
  // depend on; once per distinct index it is asked for).
  std::vector<double> evaluations;
  std::vector<uint8_t> inner;             // computed in its nest's innermost loop
  std::vector<uint8_t> strided_reads;     // loads from outside with a non-unit inner stride
  std::vector<uint8_t> contiguous_reads;  // loads from outside that step by one element
  double compute_evaluations = 0;         // sum over ops that do arithmetic (not index remaps)
  double transcendental_evaluations = 0;  // the same over ops with transcendentals
  double strided_loads = 0, contiguous_loads = 0;  // loads varying with the inner loop, by kind
  std::vector<double> element_ns;  // per node: times computed x ElementCostNs (elementwise ops)
  double total_element_ns = 0;     // their sum
  bool scalar_call_inner = false;  // a scalar libm call in an innermost loop: it stays scalar
};
IndexFlow AnalyzeIndexFlow(const KernelView& view);

// Writes node `i`'s kNodeFeatures values to `out` (node_features.cc documents each).
void FillNodeFeatures(const KernelView& view, const IndexFlow& flow, int32_t i, float* out);

}  // namespace mltune::costmodels::features
