// An HLO module's op graph in the partitioning model, so the policy trains on the zoo and the
// corpus as well as on the profiled graphs.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/json_util.h"

namespace mltune::opt::partition {

PartitionGraph PartitionGraphFromOpGraph(const costmodels::OpGraph& graph,
                                         const std::vector<double>& seconds_per_node,
                                         int32_t accelerators, double accelerator_bytes,
                                         double link_bytes_per_s, double cpu_slowdown) {
  return MicrobatchedPartitionGraph(graph, seconds_per_node, 1, accelerators, accelerator_bytes,
                                    link_bytes_per_s, cpu_slowdown);
}

PartitionGraph MicrobatchedPartitionGraph(const costmodels::OpGraph& graph,
                                          const std::vector<double>& seconds_per_node,
                                          int32_t microbatches, int32_t accelerators,
                                          double accelerator_bytes, double link_bytes_per_s,
                                          double cpu_slowdown) {
  PartitionGraph g;
  g.name = graph.module_name;
  g.accelerators = accelerators;
  g.accelerator_bytes = accelerator_bytes;
  g.cpus = 1;
  // Times in microseconds, the order of the profiled graphs' units.
  constexpr double kMicro = 1e6;
  const int32_t n = graph.size();
  std::vector<bool> weight_placed(static_cast<size_t>(graph.weight_count), false);
  for (int32_t m = 0; m < std::max(1, microbatches); ++m) {
    for (int32_t i = 0; i < n; ++i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      PartitionNode node;
      node.id = static_cast<int64_t>(m) * n + i + 1;
      node.name = microbatches > 1 ? absl::StrCat("mb", m, "/", op.name) : op.name;
      node.kind = op.opcode;
      node.accelerator_latency = seconds_per_node[static_cast<size_t>(i)] * kMicro;
      node.cpu_latency = node.accelerator_latency * cpu_slowdown;
      node.out_cost = op.output_bytes / link_bytes_per_s * kMicro;
      node.bytes = op.output_bytes;
      // A weight lives with its first reader (a shared weight is not counted twice); a reader
      // in a later microbatch is colocated with the first microbatch's, where the weight is.
      for (const costmodels::OpWeight& w : op.weights) {
        if (w.id < 0 || static_cast<size_t>(w.id) >= weight_placed.size()) continue;
        if (!weight_placed[static_cast<size_t>(w.id)]) {
          weight_placed[static_cast<size_t>(w.id)] = true;
          node.bytes += w.bytes;
        }
      }
      node.group = m > 0 && !op.weights.empty() ? i : g.groups;
      if (node.group == g.groups) ++g.groups;
      g.nodes.push_back(std::move(node));
    }
  }
  g.succ.assign(g.nodes.size(), {});
  g.pred.assign(g.nodes.size(), {});
  for (int32_t m = 0; m < std::max(1, microbatches); ++m) {
    const int32_t base = m * n;
    for (int32_t i = 0; i < n; ++i) {
      for (const costmodels::OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
        if (in.node < 0 || in.node == i) continue;
        g.succ[static_cast<size_t>(base + in.node)].push_back(base + i);
        g.pred[static_cast<size_t>(base + i)].push_back(base + in.node);
      }
    }
  }
  FinishGraph(g);
  return g;
}

}  // namespace mltune::opt::partition
