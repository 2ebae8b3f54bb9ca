// An HLO module's op graph in the partitioning model, so the policy trains on the zoo and the
// corpus as well as on the profiled graphs.
#include <algorithm>

#include "costmodels/analytical/op_graph.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/json_util.h"

namespace mltune::opt::partition {

PartitionGraph PartitionGraphFromOpGraph(const costmodels::OpGraph& graph,
                                         const std::vector<double>& seconds_per_node,
                                         int32_t accelerators, double accelerator_bytes,
                                         double link_bytes_per_s, double cpu_slowdown) {
  PartitionGraph g;
  g.name = graph.module_name;
  g.accelerators = accelerators;
  g.accelerator_bytes = accelerator_bytes;
  g.cpus = 1;
  // Times in microseconds, the order of the profiled graphs' units.
  constexpr double kMicro = 1e6;
  std::vector<bool> weight_placed(static_cast<size_t>(graph.weight_count), false);
  for (int32_t i = 0; i < graph.size(); ++i) {
    const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
    PartitionNode n;
    n.id = i + 1;
    n.name = op.name;
    n.kind = op.opcode;
    n.accelerator_latency = seconds_per_node[static_cast<size_t>(i)] * kMicro;
    n.cpu_latency = n.accelerator_latency * cpu_slowdown;
    n.out_cost = op.output_bytes / link_bytes_per_s * kMicro;
    n.bytes = op.output_bytes;
    // A weight lives with its first reader (a shared weight is not counted twice).
    for (const costmodels::OpWeight& w : op.weights) {
      if (w.id < 0 || static_cast<size_t>(w.id) >= weight_placed.size()) continue;
      if (!weight_placed[static_cast<size_t>(w.id)]) {
        weight_placed[static_cast<size_t>(w.id)] = true;
        n.bytes += w.bytes;
      }
    }
    n.group = i;
    g.nodes.push_back(std::move(n));
  }
  g.groups = graph.size();
  g.succ.assign(g.nodes.size(), {});
  g.pred.assign(g.nodes.size(), {});
  for (int32_t i = 0; i < graph.size(); ++i) {
    for (const costmodels::OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
      if (in.node < 0 || in.node == i) continue;
      g.succ[static_cast<size_t>(in.node)].push_back(i);
      g.pred[static_cast<size_t>(i)].push_back(in.node);
    }
  }
  FinishGraph(g);
  return g;
}

}  // namespace mltune::opt::partition
