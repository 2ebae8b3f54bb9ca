// Pipeline splits by dynamic programming over cut points in topological order.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>

#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What a run's value is: the model's device load (compute + send + receive), or PipeDream's
// stage time (compute, sending and receiving at once).
enum class RunValue { kLoad, kOverlapped };

// The DP cuts between units of `order` (positions of classes): the classes themselves, or above
// kMaxDpUnits consecutive blocks of about equal compute, so that time and memory stay
// O(units^2 k) on graphs of 100k nodes.
std::vector<int32_t> UnitStarts(const PartitionGraph& g, const std::vector<bool>& cpu,
                                const std::vector<int32_t>& order) {
  const int32_t groups = g.groups;
  std::vector<int32_t> starts;
  if (groups <= kMaxDpUnits) {
    for (int32_t c = 0; c <= groups; ++c) starts.push_back(c);
    return starts;
  }
  std::vector<double> compute(static_cast<size_t>(groups), 0);
  double total = 0;
  for (const PartitionNode& n : g.nodes) {
    // Every class weighs at least a little, so runs of free classes still split.
    const double w = cpu[static_cast<size_t>(n.group)] ? 0 : n.accelerator_latency;
    compute[static_cast<size_t>(n.group)] += w;
    total += w;
  }
  const double floor = total / groups * 1e-3;
  total += floor * groups;
  const double per_unit = total / kMaxDpUnits;
  starts.push_back(0);
  double acc = 0;
  for (int32_t p = 0; p < groups; ++p) {
    acc += compute[static_cast<size_t>(order[static_cast<size_t>(p)])] + floor;
    if (acc >= per_unit * static_cast<double>(starts.size()) && p + 1 < groups) {
      starts.push_back(p + 1);
    }
  }
  starts.push_back(groups);
  return starts;
}

// The DP over cut points of the classes in `order`: units [0, j) in s runs, each run's value summed
// (latency) or the largest (throughput); runs that overflow an accelerator are skipped. A push DP:
// from each start i in order, the runs [i, j) grow one unit at a time, tracking which outputs leave
// the run and which inputs enter it, and relax best[s][j]; best[.][i] is final by then, since every
// run ending at i starts before it. Returns one device per class (0 for CPU classes), or empty when
// nothing fits.
std::vector<int32_t> CutPointDp(const PartitionGraph& g, const std::vector<bool>& cpu,
                                const std::vector<int32_t>& order, RunValue value, bool sum) {
  const std::vector<int32_t> starts = UnitStarts(g, cpu, order);
  const size_t units = starts.size() - 1;
  const size_t k = static_cast<size_t>(g.accelerators);
  // best[s][j]: units [0, j) in s runs; choice[s][j]: where the last run starts.
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(units + 1, kInf));
  std::vector<std::vector<int32_t>> choice(k + 1, std::vector<int32_t>(units + 1, -1));
  best[0][0] = 0;
  std::vector<int32_t> in_run(g.nodes.size(), -1);  // the start whose run holds the node
  std::vector<int32_t> outside_succ(g.nodes.size(), 0), into_run(g.nodes.size(), 0);
  std::vector<int32_t> stamp(g.nodes.size(), -1);  // into_run is valid for this start only
  for (size_t i = 0; i < units; ++i) {
    bool reachable = false;
    for (size_t s = 0; s < k; ++s) reachable |= best[s][i] < kInf;
    if (!reachable) continue;
    double compute = 0, send = 0, receive = 0, bytes = 0;
    const int32_t tag = static_cast<int32_t>(i);
    for (size_t j = i + 1; j <= units; ++j) {
      for (int32_t p = starts[j - 1]; p < starts[j]; ++p) {
        const int32_t c = order[static_cast<size_t>(p)];
        for (int32_t w : g.group_nodes[static_cast<size_t>(c)]) {
          const PartitionNode& node = g.nodes[static_cast<size_t>(w)];
          if (stamp[static_cast<size_t>(w)] == tag && into_run[static_cast<size_t>(w)] > 0) {
            receive -= node.out_cost;  // an input that was received is now inside
          }
          in_run[static_cast<size_t>(w)] = tag;
          compute += cpu[static_cast<size_t>(c)] ? 0 : node.accelerator_latency;
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
          // A successor already in the run (classes need not follow the node order) is not an
          // edge out of it.
          int32_t outside = 0;
          for (int32_t s : g.succ[static_cast<size_t>(w)]) {
            if (in_run[static_cast<size_t>(s)] != tag) ++outside;
          }
          outside_succ[static_cast<size_t>(w)] = outside;
          if (outside > 0) send += node.out_cost;
        }
      }
      if (bytes > g.accelerator_bytes) break;  // longer runs only grow
      const double c =
          value == RunValue::kLoad ? compute + send + receive : std::max({compute, send, receive});
      for (size_t s = 1; s <= k; ++s) {
        if (best[s - 1][i] == kInf) continue;
        const double v = sum ? best[s - 1][i] + c : std::max(best[s - 1][i], c);
        // On ties the latest start wins, as the pull form scanning starts downwards did.
        if (v <= best[s][j] && v < kInf) {
          best[s][j] = v;
          choice[s][j] = static_cast<int32_t>(i);
        }
      }
    }
  }
  size_t runs_used = 0;
  double best_value = kInf;
  for (size_t s = 1; s <= k; ++s) {
    if (best[s][units] < best_value) {
      best_value = best[s][units];
      runs_used = s;
    }
  }
  if (runs_used == 0) return {};
  std::vector<int32_t> device(static_cast<size_t>(g.groups), 1);
  size_t j = units;
  for (size_t s = runs_used; s >= 1; --s) {
    const size_t i = static_cast<size_t>(choice[s][j]);
    for (int32_t p = starts[i]; p < starts[j]; ++p) {
      const size_t c = static_cast<size_t>(order[static_cast<size_t>(p)]);
      device[c] = cpu[c] ? 0 : static_cast<int32_t>(s);
    }
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

std::vector<int32_t> ClassNumberOrder(const PartitionGraph& g) {
  std::vector<int32_t> order(static_cast<size_t>(g.groups));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The classes in a topological order of the graph of classes, lowest rank first among those
// whose predecessors are placed (ties by number); classes left on a cycle follow by rank.
std::vector<int32_t> RankedClassOrder(const PartitionGraph& g, const std::vector<double>& rank) {
  const size_t groups = static_cast<size_t>(g.groups);
  std::vector<std::vector<int32_t>> class_succ(groups);
  std::vector<int32_t> waiting(groups, 0);
  for (int32_t v = 0; v < g.size(); ++v) {
    const int32_t a = g.nodes[static_cast<size_t>(v)].group;
    for (int32_t w : g.succ[static_cast<size_t>(v)]) {
      const int32_t b = g.nodes[static_cast<size_t>(w)].group;
      if (a == b) continue;
      class_succ[static_cast<size_t>(a)].push_back(b);
      ++waiting[static_cast<size_t>(b)];
    }
  }
  using Entry = std::pair<double, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (size_t c = 0; c < groups; ++c) {
    if (waiting[c] == 0) ready.emplace(rank[c], static_cast<int32_t>(c));
  }
  std::vector<int32_t> order;
  order.reserve(groups);
  std::vector<bool> placed(groups, false);
  while (!ready.empty()) {
    const int32_t c = ready.top().second;
    ready.pop();
    order.push_back(c);
    placed[static_cast<size_t>(c)] = true;
    for (int32_t d : class_succ[static_cast<size_t>(c)]) {
      if (--waiting[static_cast<size_t>(d)] == 0) ready.emplace(rank[static_cast<size_t>(d)], d);
    }
  }
  if (order.size() < groups) {
    std::vector<int32_t> rest;
    for (size_t c = 0; c < groups; ++c) {
      if (!placed[c]) rest.push_back(static_cast<int32_t>(c));
    }
    std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) {
      return rank[static_cast<size_t>(a)] < rank[static_cast<size_t>(b)];
    });
    order.insert(order.end(), rest.begin(), rest.end());
  }
  return order;
}

}  // namespace

Split ContiguousDpSplit(const PartitionGraph& g, Objective objective) {
  const std::vector<bool> cpu = CpuClasses(g);
  const std::vector<int32_t> device =
      CutPointDp(g, cpu, ClassNumberOrder(g), RunValue::kLoad, objective == Objective::kLatency);
  return device.empty() ? ContiguousSplit(g) : SplitOf(g, device);
}

Split RankedDpSplit(const PartitionGraph& g, Objective objective, const std::vector<double>& rank) {
  if (rank.size() != static_cast<size_t>(g.groups)) return ContiguousDpSplit(g, objective);
  const std::vector<bool> cpu = CpuClasses(g);
  const std::vector<int32_t> device = CutPointDp(g, cpu, RankedClassOrder(g, rank), RunValue::kLoad,
                                                 objective == Objective::kLatency);
  return device.empty() ? ContiguousSplit(g) : SplitOf(g, device);
}

Split PipeDreamSplit(const PartitionGraph& g) {
  const std::vector<bool> cpu = CpuClasses(g);
  const std::vector<int32_t> device =
      CutPointDp(g, cpu, ClassNumberOrder(g), RunValue::kOverlapped, false);
  return device.empty() ? ContiguousSplit(g) : SplitOf(g, device);
}

}  // namespace mltune::opt::partition
