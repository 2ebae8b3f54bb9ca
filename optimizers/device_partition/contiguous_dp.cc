// Pipeline splits by dynamic programming over cut points in topological order.
#include <algorithm>
#include <limits>

#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// cost[a][b - a - 1] and bytes of the run of classes [a, b), for every a < b: each start grows
// its run one class at a time, tracking which outputs leave it and which inputs enter it. cost
// is the model's device load (compute + send + receive); overlapped, PipeDream's stage time
// (compute, sending and receiving at once).
struct RunCosts {
  std::vector<std::vector<double>> cost, overlapped, bytes;
};

RunCosts ComputeRunCosts(const PartitionGraph& g, const std::vector<bool>& cpu) {
  const size_t groups = static_cast<size_t>(g.groups);
  RunCosts runs;
  runs.cost.resize(groups);
  runs.overlapped.resize(groups);
  runs.bytes.resize(groups);
  std::vector<int32_t> in_run(g.nodes.size(), -1);  // the start `a` whose run holds the node
  std::vector<int32_t> outside_succ(g.nodes.size(), 0), into_run(g.nodes.size(), 0);
  std::vector<int32_t> stamp(g.nodes.size(), -1);  // into_run is valid for this start only
  for (size_t a = 0; a < groups; ++a) {
    double compute = 0, send = 0, receive = 0, bytes = 0;
    const int32_t tag = static_cast<int32_t>(a);
    for (size_t b = a; b < groups; ++b) {
      for (int32_t w : g.group_nodes[b]) {
        const PartitionNode& node = g.nodes[static_cast<size_t>(w)];
        if (stamp[static_cast<size_t>(w)] == tag && into_run[static_cast<size_t>(w)] > 0) {
          receive -= node.out_cost;  // an input that was received is now inside
        }
        in_run[static_cast<size_t>(w)] = tag;
        compute += cpu[b] ? 0 : node.accelerator_latency;
        bytes += node.bytes;
        for (int32_t u : g.pred[static_cast<size_t>(w)]) {
          if (in_run[static_cast<size_t>(u)] == tag) {
            if (--outside_succ[static_cast<size_t>(u)] == 0) {
              send -= g.nodes[static_cast<size_t>(u)].out_cost;
            }
          } else {
            if (stamp[static_cast<size_t>(u)] != tag) {
              stamp[static_cast<size_t>(u)] = tag;
              into_run[static_cast<size_t>(u)] = 0;
            }
            if (into_run[static_cast<size_t>(u)]++ == 0) {
              receive += g.nodes[static_cast<size_t>(u)].out_cost;
            }
          }
        }
        int32_t outside = 0;
        for (int32_t s : g.succ[static_cast<size_t>(w)]) {
          if (in_run[static_cast<size_t>(s)] != tag) ++outside;
        }
        outside_succ[static_cast<size_t>(w)] = outside;
        if (outside > 0) send += node.out_cost;
        // A successor already in the run (classes need not follow the node order) is not an
        // edge out of it.
      }
      runs.cost[a].push_back(compute + send + receive);
      runs.overlapped[a].push_back(std::max({compute, send, receive}));
      runs.bytes[a].push_back(bytes);
    }
  }
  return runs;
}

// The DP over cut points: the classes [0, j) in s runs, each run's value from `run_cost`
// (summed for latency, the largest for throughput); runs that overflow an accelerator are
// skipped. Returns one device per class (0 for CPU classes), or empty when nothing fits.
std::vector<int32_t> CutPointDp(const PartitionGraph& g, const std::vector<bool>& cpu,
                                const std::vector<std::vector<double>>& run_cost,
                                const std::vector<std::vector<double>>& run_bytes, bool sum) {
  const size_t groups = static_cast<size_t>(g.groups);
  const size_t k = static_cast<size_t>(g.accelerators);
  // best[s][j]: the classes [0, j) in s runs; choice[s][j]: where the last run starts.
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(groups + 1, kInf));
  std::vector<std::vector<int32_t>> choice(k + 1, std::vector<int32_t>(groups + 1, -1));
  best[0][0] = 0;
  for (size_t s = 1; s <= k; ++s) {
    for (size_t j = 1; j <= groups; ++j) {
      for (size_t i = j; i-- > 0;) {
        if (run_bytes[i][j - i - 1] > g.accelerator_bytes) break;  // longer runs only grow
        if (best[s - 1][i] == kInf) continue;
        const double c = run_cost[i][j - i - 1];
        const double v = sum ? best[s - 1][i] + c : std::max(best[s - 1][i], c);
        if (v < best[s][j]) {
          best[s][j] = v;
          choice[s][j] = static_cast<int32_t>(i);
        }
      }
    }
  }
  size_t runs_used = 0;
  double value = kInf;
  for (size_t s = 1; s <= k; ++s) {
    if (best[s][groups] < value) {
      value = best[s][groups];
      runs_used = s;
    }
  }
  if (runs_used == 0) return {};
  std::vector<int32_t> device(groups, 1);
  size_t j = groups;
  for (size_t s = runs_used; s >= 1; --s) {
    const size_t i = static_cast<size_t>(choice[s][j]);
    for (size_t c = i; c < j; ++c) device[c] = cpu[c] ? 0 : static_cast<int32_t>(s);
    j = i;
  }
  return device;
}

Split SplitOf(const PartitionGraph& g, const std::vector<int32_t>& device) {
  Split split(g.nodes.size());
  for (size_t v = 0; v < split.size(); ++v) {
    split[v] = device[static_cast<size_t>(g.nodes[v].group)];
  }
  return split;
}

std::vector<bool> CpuClasses(const PartitionGraph& g) {
  std::vector<bool> cpu(static_cast<size_t>(g.groups), false);
  for (const PartitionNode& n : g.nodes) {
    if (!n.accelerator_ok) cpu[static_cast<size_t>(n.group)] = true;
  }
  return cpu;
}

}  // namespace

Split ContiguousDpSplit(const PartitionGraph& g, Objective objective) {
  const std::vector<bool> cpu = CpuClasses(g);
  const RunCosts runs = ComputeRunCosts(g, cpu);
  const std::vector<int32_t> device =
      CutPointDp(g, cpu, runs.cost, runs.bytes, objective == Objective::kLatency);
  return device.empty() ? ContiguousSplit(g) : SplitOf(g, device);
}

Split PipeDreamSplit(const PartitionGraph& g) {
  const std::vector<bool> cpu = CpuClasses(g);
  const RunCosts runs = ComputeRunCosts(g, cpu);
  const std::vector<int32_t> device = CutPointDp(g, cpu, runs.overlapped, runs.bytes, false);
  return device.empty() ? ContiguousSplit(g) : SplitOf(g, device);
}

}  // namespace mltune::opt::partition
