// The baselines every partitioning strategy is compared with: one accelerator, random, Baechi's
// m-ETF, METIS and the repository's local search.
#include <metis.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/incremental_load.h"

namespace mltune::opt::partition {
namespace {

std::vector<bool> CpuGroups(const PartitionGraph& g) {
  std::vector<bool> cpu(static_cast<size_t>(g.groups), false);
  for (const PartitionNode& n : g.nodes) {
    if (!n.accelerator_ok) cpu[static_cast<size_t>(n.group)] = true;
  }
  return cpu;
}

Split Expand(const PartitionGraph& g, const std::vector<int32_t>& device_of_group) {
  Split split(g.nodes.size());
  for (size_t v = 0; v < split.size(); ++v) {
    split[v] = device_of_group[static_cast<size_t>(g.nodes[v].group)];
  }
  return split;
}

// Invalid splits (a cycle among latency's pieces) lose to valid ones; infeasible splits compare
// by how far over memory they are, then by objective.
bool Better(const SplitScore& a, const SplitScore& b) {
  if (a.valid != b.valid) return a.valid;
  if (a.overflow_bytes != b.overflow_bytes) return a.overflow_bytes < b.overflow_bytes;
  return a.objective < b.objective - 1e-9;
}

// LocalSearch's steepest descent under max-load, each move scored incrementally (IncrementalLoad)
// in time proportional to the class's edges; the same moves as scoring each candidate in full, up
// to rounding. Returns the final split's score (recomputed in full).
template <typename Left>
SplitScore Descend(const PartitionGraph& g, const std::vector<bool>& cpu,
                   std::vector<int32_t>& device, const Left& left, int64_t& spent) {
  IncrementalLoad state(g, device);
  SplitScore current = state.Score();
  while (left()) {
    SplitScore best_move = current;
    int32_t move_class = -1, move_to = -1;
    for (int32_t c = 0; c < g.groups && left(); ++c) {
      if (cpu[static_cast<size_t>(c)]) continue;
      const int32_t was = state.DeviceOf(c);
      for (int32_t d = 1; d <= g.accelerators && left(); ++d) {
        if (d == was) continue;
        state.Move(c, d);
        const SplitScore s = state.Score();
        state.Move(c, was);
        ++spent;
        if (Better(s, best_move)) {
          best_move = s;
          move_class = c;
          move_to = d;
        }
      }
    }
    if (move_to < 0) break;
    state.Move(move_class, move_to);
    state.Reset();
    current = state.Score();
  }
  for (int32_t c = 0; c < g.groups; ++c) device[static_cast<size_t>(c)] = state.DeviceOf(c);
  return Score(g, Expand(g, device), Objective::kThroughput);
}

}  // namespace

Split OneAccelerator(const PartitionGraph& g) {
  const std::vector<bool> cpu = CpuGroups(g);
  std::vector<int32_t> device(static_cast<size_t>(g.groups));
  for (size_t c = 0; c < device.size(); ++c) device[c] = cpu[c] ? 0 : 1;
  return Expand(g, device);
}

Split RandomSplit(const PartitionGraph& g, std::mt19937_64& rng) {
  const std::vector<bool> cpu = CpuGroups(g);
  std::uniform_int_distribution<int32_t> pick(1, g.accelerators);
  std::vector<int32_t> device(static_cast<size_t>(g.groups));
  for (size_t c = 0; c < device.size(); ++c) device[c] = cpu[c] ? 0 : pick(rng);
  return Expand(g, device);
}

Split EarliestFinish(const PartitionGraph& g) {
  const std::vector<bool> cpu = CpuGroups(g);
  const size_t k = static_cast<size_t>(g.accelerators);
  std::vector<double> group_bytes(static_cast<size_t>(g.groups), 0);
  for (const PartitionNode& n : g.nodes) group_bytes[static_cast<size_t>(n.group)] += n.bytes;
  std::vector<int32_t> device_of_group(static_cast<size_t>(g.groups), -1);
  for (size_t c = 0; c < cpu.size(); ++c) {
    if (cpu[c]) device_of_group[c] = 0;
  }
  std::vector<double> free_at(k + 1, 0), bytes(k + 1, 0);
  std::vector<double> finish(g.nodes.size(), 0);
  std::vector<int32_t> device(g.nodes.size(), -1);
  std::vector<int32_t> waiting(g.nodes.size());
  std::vector<int32_t> ready;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    waiting[v] = static_cast<int32_t>(g.pred[v].size());
    if (waiting[v] == 0) ready.push_back(static_cast<int32_t>(v));
  }
  // Nodes on a cycle (not in a DAG) are placed at the end by class alone.
  auto finish_on = [&](int32_t v, int32_t d) {
    const PartitionNode& n = g.nodes[static_cast<size_t>(v)];
    double start = free_at[static_cast<size_t>(d)];
    for (int32_t u : g.pred[static_cast<size_t>(v)]) {
      const double transfer =
          device[static_cast<size_t>(u)] == d ? 0 : g.nodes[static_cast<size_t>(u)].out_cost;
      start = std::max(start, finish[static_cast<size_t>(u)] + transfer);
    }
    return start + (d == 0 ? n.cpu_latency : n.accelerator_latency);
  };
  while (!ready.empty()) {
    double best = std::numeric_limits<double>::infinity();
    size_t best_slot = 0;
    int32_t best_device = 1;
    for (size_t slot = 0; slot < ready.size(); ++slot) {
      const int32_t v = ready[slot];
      const size_t c = static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group);
      auto consider = [&](int32_t d) {
        const double f = finish_on(v, d);
        if (f < best) {
          best = f;
          best_slot = slot;
          best_device = d;
        }
      };
      if (device_of_group[c] >= 0) {
        consider(device_of_group[c]);
        continue;
      }
      // Among accelerators with room for the whole class; all of them when none has room.
      bool any = false;
      for (size_t d = 1; d <= k; ++d) {
        if (bytes[d] + group_bytes[c] <= g.accelerator_bytes) {
          consider(static_cast<int32_t>(d));
          any = true;
        }
      }
      if (!any) {
        for (size_t d = 1; d <= k; ++d) consider(static_cast<int32_t>(d));
      }
    }
    const int32_t v = ready[best_slot];
    ready[best_slot] = ready.back();
    ready.pop_back();
    const size_t c = static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group);
    if (device_of_group[c] < 0) {
      device_of_group[c] = best_device;
      bytes[static_cast<size_t>(best_device)] += group_bytes[c];
    }
    device[static_cast<size_t>(v)] = best_device;
    finish[static_cast<size_t>(v)] = best;
    free_at[static_cast<size_t>(best_device)] = best;
    for (int32_t w : g.succ[static_cast<size_t>(v)]) {
      if (--waiting[static_cast<size_t>(w)] == 0) ready.push_back(w);
    }
  }
  for (size_t c = 0; c < device_of_group.size(); ++c) {
    if (device_of_group[c] < 0) device_of_group[c] = 1;
  }
  return Expand(g, device_of_group);
}

Split ContiguousSplit(const PartitionGraph& g) {
  const std::vector<bool> cpu = CpuGroups(g);
  std::vector<double> latency(static_cast<size_t>(g.groups), 0), bytes(latency);
  double total = 0;
  for (const PartitionNode& n : g.nodes) {
    latency[static_cast<size_t>(n.group)] += n.accelerator_latency;
    bytes[static_cast<size_t>(n.group)] += n.bytes;
    total += n.accelerator_latency;
  }
  // Classes are numbered in topological order of their first node (FinishGraph).
  std::vector<int32_t> device(static_cast<size_t>(g.groups), 0);
  int32_t stage = 1;
  double done = 0, stage_bytes = 0;
  for (size_t c = 0; c < device.size(); ++c) {
    if (cpu[c]) continue;
    const bool full = stage_bytes > 0 && stage_bytes + bytes[c] > g.accelerator_bytes;
    // Move on once this stage has its share of the compute, or its memory is full.
    const bool share_done = done + latency[c] / 2 > total * stage / g.accelerators;
    if ((full || share_done) && stage < g.accelerators && stage_bytes > 0) {
      ++stage;
      stage_bytes = 0;
    }
    device[c] = stage;
    stage_bytes += bytes[c];
    done += latency[c];
  }
  return Expand(g, device);
}

absl::StatusOr<Split> MetisSplit(const PartitionGraph& g, uint64_t seed) {
  const std::vector<bool> cpu = CpuGroups(g);
  if (g.accelerators == 1 || g.groups == 1) return OneAccelerator(g);
  // The graph of classes, symmetrised: an edge's weight is the transfer it would cost.
  std::vector<std::map<int32_t, double>> adjacent(static_cast<size_t>(g.groups));
  std::vector<double> latency(static_cast<size_t>(g.groups), 0), bytes(latency);
  double max_latency = 0, max_cost = 0;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const PartitionNode& n = g.nodes[v];
    latency[static_cast<size_t>(n.group)] += n.accelerator_latency;
    bytes[static_cast<size_t>(n.group)] += n.bytes;
    std::vector<int32_t> seen;
    for (int32_t w : g.succ[v]) {
      const int32_t other = g.nodes[static_cast<size_t>(w)].group;
      if (other == n.group || std::find(seen.begin(), seen.end(), other) != seen.end()) continue;
      seen.push_back(other);
      adjacent[static_cast<size_t>(n.group)][other] += n.out_cost;
      adjacent[static_cast<size_t>(other)][n.group] += n.out_cost;
    }
  }
  for (double l : latency) max_latency = std::max(max_latency, l);
  for (const auto& row : adjacent) {
    for (const auto& [other, cost] : row) max_cost = std::max(max_cost, cost);
  }
  // METIS takes integer weights: scale into [1, 1e6].
  auto scaled = [](double x, double top) {
    return static_cast<idx_t>(1 + (top > 0 ? std::llround(x / top * 1e6) : 0));
  };
  std::vector<idx_t> xadj{0}, adjncy, adjwgt, vwgt;
  for (size_t c = 0; c < adjacent.size(); ++c) {
    for (const auto& [other, cost] : adjacent[c]) {
      adjncy.push_back(other);
      adjwgt.push_back(scaled(cost, max_cost));
    }
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
    vwgt.push_back(scaled(latency[c], max_latency));
  }
  idx_t vertices = g.groups, constraints = 1, parts = g.accelerators, cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed % 1000003);
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(static_cast<size_t>(g.groups), 0);
  int rc = METIS_OK;
  {
    // METIS printf()s some warnings ("***Cannot bisect a graph with 0 vertices!" on 100k-node
    // graphs), which broke `mltune partition --json`'s output: they go to stderr instead.
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    std::fflush(stdout);
    const int saved = dup(STDOUT_FILENO);
    if (saved >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
    rc = METIS_PartGraphKway(&vertices, &constraints, xadj.data(), adjncy.data(), vwgt.data(),
                             nullptr, adjwgt.data(), &parts, nullptr, nullptr, options, &cut,
                             part.data());
    std::fflush(stdout);
    if (saved >= 0) {
      dup2(saved, STDOUT_FILENO);
      close(saved);
    }
  }
  if (rc != METIS_OK) {
    return absl::InternalError(
        absl::StrCat("METIS_PartGraphKway failed with code ", rc, " on ", g.name));
  }
  std::vector<int32_t> device(static_cast<size_t>(g.groups));
  for (size_t c = 0; c < device.size(); ++c) {
    device[c] = cpu[c] ? 0 : static_cast<int32_t>(part[c]) + 1;
  }
  return Expand(g, device);
}

Split LocalSearch(const PartitionGraph& g, Objective objective, int restarts, std::mt19937_64& rng,
                  int64_t max_evaluations, int64_t* evaluations) {
  return LocalSearch(g, objective, restarts, rng, Budget(max_evaluations, 0), evaluations);
}

Split LocalSearch(const PartitionGraph& g, Objective objective, int restarts, std::mt19937_64& rng,
                  const Budget& budget, int64_t* evaluations, const Split* first) {
  const std::vector<bool> cpu = CpuGroups(g);
  const auto start = std::chrono::steady_clock::now();
  int64_t spent = 0;
  // The first evaluation always runs, so a spent budget still answers a scored split.
  auto left = [&] {
    if (spent == 0) return true;
    if (budget.max_steps > 0 && spent >= budget.max_steps) return false;
    if (budget.max_seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
            budget.max_seconds) {
      return false;
    }
    return !(budget.stop && budget.stop());
  };
  Split best_split = OneAccelerator(g);
  SplitScore best;
  best.overflow_bytes = std::numeric_limits<double>::infinity();
  best.valid = false;
  std::uniform_int_distribution<int32_t> pick(1, g.accelerators);
  for (int restart = 0; restart < restarts && left(); ++restart) {
    std::vector<int32_t> device(static_cast<size_t>(g.groups));
    for (size_t c = 0; c < device.size(); ++c) {
      device[c] = restart == 0 && first != nullptr
                      ? (*first)[static_cast<size_t>(g.group_nodes[c][0])]
                  : cpu[c] ? 0
                           : pick(rng);
    }
    // A random split of a branchy graph is rarely valid under latency, and no single move may
    // make it so: descent starts from its repair (kept as drawn when nothing valid exists).
    if (absl::StatusOr<Split> valid = ValidSplit(g, objective, Expand(g, device)); valid.ok()) {
      for (size_t c = 0; c < device.size(); ++c) {
        device[c] = (*valid)[static_cast<size_t>(g.group_nodes[c][0])];
      }
    }
    SplitScore current = Score(g, Expand(g, device), objective);
    ++spent;
    if (objective == Objective::kThroughput && current.valid) {
      current = Descend(g, cpu, device, left, spent);
    }
    // Steepest descent over moves of one class to another accelerator.
    while (objective == Objective::kLatency && left()) {
      SplitScore best_move = current;
      size_t move_class = 0;
      int32_t move_to = -1;
      for (size_t c = 0; c < device.size() && left(); ++c) {
        if (cpu[c]) continue;
        const int32_t was = device[c];
        for (int32_t d = 1; d <= g.accelerators && left(); ++d) {
          if (d == was) continue;
          device[c] = d;
          const SplitScore s = Score(g, Expand(g, device), objective);
          ++spent;
          if (Better(s, best_move)) {
            best_move = s;
            move_class = c;
            move_to = d;
          }
        }
        device[c] = was;
      }
      if (move_to < 0) break;
      device[move_class] = move_to;
      current = best_move;
    }
    if (Better(current, best)) {
      best = current;
      best_split = Expand(g, device);
    }
  }
  if (evaluations != nullptr) *evaluations = spent;
  return best_split;
}

}  // namespace mltune::opt::partition
