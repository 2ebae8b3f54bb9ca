// `mltune partition-graph`: dnn-partitioning graphs of 10k-100k nodes for the scale comparisons
// of issue 71, from the zoo's modules (op graphs costed by the CPU roofline, microbatches
// stacked) or as random layered DAGs.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/cli_commands.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/hlo_files.h"
#include "optimizers/cost_model_training/baselines.h"
#include "optimizers/device_partition/device_partition.h"

namespace mltune::client {
namespace {

namespace partition = opt::partition;

// The module's step: each op's CPU roofline seconds on this machine's measured peak and
// bandwidth (the figures the cost-model baselines use), k accelerators that each run like that
// core, and memory for the accelerators' share of the bytes with slack.
absl::StatusOr<partition::PartitionGraph> FromModule(const PartitionGraphCommand& cmd) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(cmd.hlo);
  if (!module.ok()) return module.status();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
  if (graph.size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(cmd.hlo, ": the entry computation has no ops"));
  }
  std::vector<double> seconds;
  for (const costmodels::OpNode& op : graph.nodes) {
    seconds.push_back(std::max(
        (op.cost.flops + op.cost.transcendentals) / opt::cost_model_training::kCpuPeakFlops,
        op.cost.bytes() / opt::cost_model_training::kCpuBandwidth));
  }
  const double link = cmd.link_gbps * 1e9;
  partition::PartitionGraph g = partition::MicrobatchedPartitionGraph(
      graph, seconds, cmd.microbatches, cmd.accelerators, 1, link);
  double bytes = 0, largest = 0;
  std::vector<double> class_bytes(static_cast<size_t>(g.groups), 0);
  for (const partition::PartitionNode& n : g.nodes) {
    bytes += n.bytes;
    class_bytes[static_cast<size_t>(n.group)] += n.bytes;
  }
  for (double b : class_bytes) largest = std::max(largest, b);
  g.accelerator_bytes = std::max({1.0, largest, cmd.memory_slack * bytes / cmd.accelerators});
  return g;
}

}  // namespace

int RunPartitionGraph(const PartitionGraphCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.accelerators < 1 || cmd.accelerators > 4096) {
    err << "error: --accelerators must be in 1..4096\n";
    return 1;
  }
  if (!std::isfinite(cmd.memory_slack) || cmd.memory_slack <= 0) {
    err << "error: --memory-slack must be > 0\n";
    return 1;
  }
  absl::StatusOr<partition::PartitionGraph> graph;
  if (!cmd.hlo.empty()) {
    if (cmd.microbatches < 1 || cmd.microbatches > 1000) {
      err << "error: --microbatches must be in 1..1000\n";
      return 1;
    }
    if (!std::isfinite(cmd.link_gbps) || cmd.link_gbps <= 0) {
      err << "error: --link-gbps must be > 0\n";
      return 1;
    }
    graph = FromModule(cmd);
  } else {
    partition::LayeredGraphOptions options;
    options.nodes = cmd.nodes;
    options.width = cmd.width;
    options.max_fan_in = cmd.fan_in;
    options.reach = cmd.reach;
    options.accelerators = cmd.accelerators;
    options.memory_slack = cmd.memory_slack;
    options.cpu_only_fraction = cmd.cpu_only;
    options.colocated_fraction = cmd.colocated;
    options.seed = cmd.seed;
    graph = partition::LayeredRandomGraph(options);
  }
  if (!graph.ok()) {
    err << "error: " << graph.status().message() << "\n";
    return 1;
  }
  std::ofstream file(cmd.out, std::ios::binary | std::ios::trunc);
  file << partition::FormatPartitionGraph(*graph);
  file.close();
  if (!file) {
    err << "error: cannot write " << cmd.out << "\n";
    return 1;
  }
  int64_t edges = 0;
  for (const auto& succ : graph->succ) edges += static_cast<int64_t>(succ.size());
  out << absl::StrFormat(
      "wrote %s: %d nodes, %d colocation classes, %d edges, %d accelerators of %.6g bytes\n",
      cmd.out, graph->size(), graph->groups, edges, graph->accelerators, graph->accelerator_bytes);
  return 0;
}

}  // namespace mltune::client
