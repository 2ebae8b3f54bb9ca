// Random layered DAGs in the partitioning model: graphs of any size for the scale benchmarks
// (bench/go_bench --large, `mltune partition-graph --nodes`), since the profiled ones stop at a
// few thousand nodes.
#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/json_util.h"

namespace mltune::opt::partition {

absl::StatusOr<PartitionGraph> LayeredRandomGraph(const LayeredGraphOptions& o) {
  if (o.nodes < 1 || o.nodes > 10'000'000) {
    return absl::InvalidArgumentError("nodes: expected 1..10000000");
  }
  if (o.width < 1 || o.max_fan_in < 1 || o.reach < 1) {
    return absl::InvalidArgumentError("width, max_fan_in and reach: expected >= 1");
  }
  if (o.accelerators < 1 || o.accelerators > 4096) {
    return absl::InvalidArgumentError("accelerators: expected 1..4096");
  }
  if (!(o.memory_slack > 0) || !std::isfinite(o.memory_slack) || !(o.link_bytes_per_unit > 0) ||
      !std::isfinite(o.link_bytes_per_unit)) {
    return absl::InvalidArgumentError("memory_slack and link_bytes_per_unit: expected > 0");
  }
  if (!(o.cpu_only_fraction >= 0 && o.cpu_only_fraction <= 1) ||
      !(o.colocated_fraction >= 0 && o.colocated_fraction <= 1)) {
    return absl::InvalidArgumentError(
        "cpu_only_fraction and colocated_fraction: expected in [0, 1]");
  }
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto integer = [&](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  std::lognormal_distribution<double> latency(std::log(10.0), 1.0), output(std::log(1e6), 1.0),
      weight(std::log(4e6), 1.0);

  PartitionGraph g;
  g.name = absl::StrCat("layered-", o.nodes, "-seed", o.seed);
  g.accelerators = o.accelerators;
  g.cpus = 1;
  // Layers as [first node, end) ranges; nodes are numbered layer by layer, so ids are a
  // topological order.
  std::vector<std::pair<int32_t, int32_t>> layers;
  for (int32_t next = 0; next < o.nodes;) {
    const int32_t w = std::min(o.nodes - next, integer(1, 2 * o.width - 1));
    layers.emplace_back(next, next + w);
    next += w;
  }
  g.nodes.resize(static_cast<size_t>(o.nodes));
  g.succ.assign(g.nodes.size(), {});
  g.pred.assign(g.nodes.size(), {});
  double total_bytes = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    for (int32_t v = layers[l].first; v < layers[l].second; ++v) {
      PartitionNode& n = g.nodes[static_cast<size_t>(v)];
      n.id = v + 1;
      n.name = absl::StrCat("n", v + 1);
      n.accelerator_latency = latency(rng);
      n.cpu_latency = n.accelerator_latency * uniform(5, 20);
      const double out = output(rng);
      n.out_cost = out / o.link_bytes_per_unit;
      n.bytes = out + (uniform(0, 1) < 1.0 / 3 ? weight(rng) : 0);
      n.accelerator_ok = !(uniform(0, 1) < o.cpu_only_fraction);
      n.group = v;
      if (l == 0) continue;
      // Inputs: mostly the previous layer, sometimes up to `reach` layers back (skip edges).
      const int32_t fan_in = integer(1, o.max_fan_in);
      for (int32_t k = 0; k < fan_in; ++k) {
        const size_t back = static_cast<size_t>(integer(1, std::min<int32_t>(o.reach, l)));
        const auto [lo, hi] = layers[l - (k == 0 ? 1 : back)];
        const int32_t u = integer(lo, hi - 1);
        g.succ[static_cast<size_t>(u)].push_back(v);
        g.pred[static_cast<size_t>(v)].push_back(u);
      }
    }
  }
  // Colocation with the single producer (never closes a cycle: classes grow along edges).
  for (int32_t v = 0; v < o.nodes; ++v) {
    PartitionNode& n = g.nodes[static_cast<size_t>(v)];
    std::vector<int32_t>& pred = g.pred[static_cast<size_t>(v)];
    std::sort(pred.begin(), pred.end());
    pred.erase(std::unique(pred.begin(), pred.end()), pred.end());
    if (pred.size() == 1 && o.colocated_fraction > 0 && uniform(0, 1) < o.colocated_fraction) {
      n.group = g.nodes[static_cast<size_t>(pred[0])].group;
    }
  }
  // Dense classes; a class holding an unsupported node runs on the CPU and needs no memory.
  std::vector<int32_t> dense(g.nodes.size(), -1);
  std::vector<bool> cpu_class(g.nodes.size(), false);
  for (PartitionNode& n : g.nodes) {
    int32_t& d = dense[static_cast<size_t>(n.group)];
    if (d < 0) d = g.groups++;
    n.group = d;
    if (!n.accelerator_ok) cpu_class[static_cast<size_t>(d)] = true;
  }
  for (const PartitionNode& n : g.nodes) {
    if (!cpu_class[static_cast<size_t>(n.group)]) total_bytes += n.bytes;
  }
  // Memory for the accelerators' share with slack, and never less than the largest class.
  std::vector<double> class_bytes(static_cast<size_t>(g.groups), 0);
  for (const PartitionNode& n : g.nodes) class_bytes[static_cast<size_t>(n.group)] += n.bytes;
  const double largest = *std::max_element(class_bytes.begin(), class_bytes.end());
  g.accelerator_bytes = std::max(largest, o.memory_slack * total_bytes / o.accelerators);
  FinishGraph(g);
  return g;
}

}  // namespace mltune::opt::partition
