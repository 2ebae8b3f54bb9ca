// A fusion plan as an op graph of kernels (the joint fusion and placement task).
#include <algorithm>
#include <map>

#include "costmodels/analytical/kernels.h"

namespace mltune::costmodels {

OpGraph FuseOpGraph(const OpGraph& graph, const FusionPlan& plan,
                    std::vector<int32_t>* kernel_of_node) {
  const std::vector<KernelSummary> summaries = SummarizeKernels(graph, plan);
  const size_t kernels = plan.kernels.size();
  // Kernel-level producers, each with the bytes crossing (once per producer op).
  std::vector<std::map<int32_t, double>> inputs(kernels);
  for (size_t k = 0; k < kernels; ++k) {
    std::vector<int32_t> seen;
    for (int32_t v : plan.kernels[k]) {
      for (const OpInput& in : graph.nodes[static_cast<size_t>(v)].inputs) {
        if (in.node < 0) continue;
        const int32_t from = plan.kernel_of[static_cast<size_t>(in.node)];
        if (from == static_cast<int32_t>(k)) continue;
        if (std::find(seen.begin(), seen.end(), in.node) != seen.end()) continue;
        seen.push_back(in.node);
        inputs[k][from] += in.bytes;
      }
    }
  }
  // Kahn's order over kernels (a valid plan's kernels are acyclic).
  std::vector<int32_t> waiting(kernels, 0);
  std::vector<std::vector<int32_t>> users(kernels);
  for (size_t k = 0; k < kernels; ++k) {
    for (const auto& [from, bytes] : inputs[k]) {
      ++waiting[k];
      users[static_cast<size_t>(from)].push_back(static_cast<int32_t>(k));
    }
  }
  std::vector<int32_t> order, ready;
  for (size_t k = kernels; k-- > 0;) {
    if (waiting[k] == 0) ready.push_back(static_cast<int32_t>(k));
  }
  while (!ready.empty()) {
    const int32_t k = ready.back();
    ready.pop_back();
    order.push_back(k);
    for (int32_t u : users[static_cast<size_t>(k)]) {
      if (--waiting[static_cast<size_t>(u)] == 0) ready.push_back(u);
    }
  }
  std::vector<int32_t> position(kernels, -1);
  for (size_t i = 0; i < order.size(); ++i)
    position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);

  OpGraph fused;
  fused.module_name = graph.module_name;
  fused.weight_count = graph.weight_count;
  fused.weight_bytes = graph.weight_bytes;
  fused.weight_rows = graph.weight_rows;
  fused.weight_cols = graph.weight_cols;
  for (int32_t k : order) {
    const KernelSummary& s = summaries[static_cast<size_t>(k)];
    OpNode n;
    n.name = s.name;
    const OpNode& root =
        graph.nodes[static_cast<size_t>(plan.kernels[static_cast<size_t>(k)].back())];
    n.opcode = plan.kernels[static_cast<size_t>(k)].size() == 1 ? root.opcode : "fusion";
    n.element_type = s.element_type;
    n.element_bytes = s.element_bytes;
    n.cost = s.roofline_cost;
    n.output_bytes = s.output_bytes;
    n.rows = s.rows;
    n.cols = s.cols;
    n.matmul = s.matmul;
    n.mm = s.mm;
    n.opaque = s.opaque;
    for (const auto& [from, bytes] : inputs[static_cast<size_t>(k)]) {
      n.inputs.push_back({position[static_cast<size_t>(from)], bytes});
    }
    std::sort(n.inputs.begin(), n.inputs.end(),
              [](const OpInput& a, const OpInput& b) { return a.node < b.node; });
    std::vector<int32_t> weight_ids;
    for (int32_t v : plan.kernels[static_cast<size_t>(k)]) {
      const OpNode& op = graph.nodes[static_cast<size_t>(v)];
      n.is_output = n.is_output || op.is_output;
      for (const OpWeight& w : op.weights) {
        if (std::find(weight_ids.begin(), weight_ids.end(), w.id) != weight_ids.end()) continue;
        weight_ids.push_back(w.id);
        n.weights.push_back(w);
      }
    }
    fused.nodes.push_back(std::move(n));
  }
  fused.LinkUsers();
  if (kernel_of_node != nullptr) *kernel_of_node = order;
  return fused;
}

}  // namespace mltune::costmodels
