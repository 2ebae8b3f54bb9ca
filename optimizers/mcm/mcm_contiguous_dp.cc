// The optimal contiguous partition by dynamic programming over cut points in op order (after
// Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph Operators", NeurIPS
// 2020): a run's stage time is its ops' compute plus the transfers on its outgoing hop, and a run
// must fit a chip's SRAM. Every cut's crossing tensors are counted once per producer (the
// simulator counts one per receiving chip), so the DP's value is a lower bound the simulator
// then checks; the triangle rule is left to the solver's repair.
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "optimizers/mcm/mcm_problem.h"

namespace mltune::opt::mcm {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

std::vector<int32_t> ContiguousDpPartition(const costmodels::OpGraph& graph,
                                           const backends::mcm::McmSimulator& sim) {
  const int32_t n = graph.size();
  const size_t un = static_cast<size_t>(n);
  if (n == 0) return {};
  const backends::TargetSpec& spec = sim.spec();
  const backends::MemoryLevel* sram = spec.Memory("sram");
  if (sram == nullptr) sram = &spec.memory.front();
  const double sram_bytes = static_cast<double>(sram->bytes);
  double bandwidth = 1, latency = 0;
  for (const backends::Link& l : spec.links) {
    if (l.bandwidth > 0) {
      bandwidth = l.bandwidth;
      latency = l.latency_s;
      break;
    }
  }
  const std::vector<double> seconds = sim.OpSeconds(graph);
  // Per cut j (between ops j - 1 and j): the tensors produced before it and read after it, each
  // producer once at its largest such edge.
  std::vector<double> cross_bytes(un + 1, 0), cross_sends(un + 1, 0);
  {
    std::vector<double> diff_bytes(un + 2, 0), diff_sends(un + 2, 0);
    std::vector<int32_t> last(un, -1);
    std::vector<double> widest(un, 0);
    for (int32_t i = 0; i < n; ++i) {
      for (const costmodels::OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
        if (in.node < 0 || in.node >= i) continue;
        last[static_cast<size_t>(in.node)] = std::max(last[static_cast<size_t>(in.node)], i);
        widest[static_cast<size_t>(in.node)] =
            std::max(widest[static_cast<size_t>(in.node)], in.bytes);
      }
    }
    for (int32_t p = 0; p < n; ++p) {
      if (last[static_cast<size_t>(p)] < 0) continue;
      // Crosses the cuts p + 1 .. last.
      diff_bytes[static_cast<size_t>(p) + 1] += widest[static_cast<size_t>(p)];
      diff_bytes[static_cast<size_t>(last[static_cast<size_t>(p)]) + 1] -=
          widest[static_cast<size_t>(p)];
      diff_sends[static_cast<size_t>(p) + 1] += 1;
      diff_sends[static_cast<size_t>(last[static_cast<size_t>(p)]) + 1] -= 1;
    }
    double bytes = 0, sends = 0;
    for (size_t j = 0; j <= un; ++j) {
      bytes += diff_bytes[j];
      sends += diff_sends[j];
      cross_bytes[j] = bytes;
      cross_sends[j] = sends;
    }
  }
  const size_t chips = static_cast<size_t>(sim.chips());
  // best[s][j]: ops [0, j) on s chips; from[s][j]: where the last run starts.
  std::vector<std::vector<double>> best(chips + 1, std::vector<double>(un + 1, kInf));
  std::vector<std::vector<int32_t>> from(chips + 1, std::vector<int32_t>(un + 1, -1));
  best[0][0] = 0;
  // The run [i, j) grows to the left from each end j: its SRAM (weights, tensors it receives,
  // its largest result) and compute are kept as op i - 1 joins.
  std::unordered_map<int64_t, int32_t> weight_count;
  std::unordered_map<int32_t, double> received_from;  // producer -> largest edge into the run
  for (int32_t j = 1; j <= n; ++j) {
    weight_count.clear();
    received_from.clear();
    double compute = 0, weights = 0, received = 0, largest = 0;
    const double out = j < n ? cross_bytes[static_cast<size_t>(j)] / bandwidth +
                                   cross_sends[static_cast<size_t>(j)] * latency
                             : 0;
    for (int32_t i = j - 1; i >= 0; --i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      compute += seconds[static_cast<size_t>(i)];
      largest = std::max(largest, op.output_bytes);
      for (const costmodels::OpWeight& w : op.weights) {
        if (w.id < 0 || ++weight_count[w.id] == 1) weights += w.bytes;
      }
      // Op i joins: what it sent into the run is inside now; what it reads from before arrives.
      if (auto it = received_from.find(i); it != received_from.end()) {
        received -= it->second;
        received_from.erase(it);
      }
      for (const costmodels::OpInput& in : op.inputs) {
        if (in.node < 0 || in.node >= i) continue;
        double& held = received_from[in.node];
        if (in.bytes > held) {
          received += in.bytes - held;
          held = in.bytes;
        }
      }
      if (weights + received + largest > sram_bytes) break;  // a longer run only needs more
      const double stage = compute + out;
      for (size_t s = 1; s <= chips; ++s) {
        const double prior = best[s - 1][static_cast<size_t>(i)];
        if (prior == kInf) continue;
        const double v = std::max(prior, stage);
        if (v < best[s][static_cast<size_t>(j)]) {
          best[s][static_cast<size_t>(j)] = v;
          from[s][static_cast<size_t>(j)] = i;
        }
      }
    }
  }
  // The DP's best for each chip count, checked by the simulator (whose per-destination
  // transfers and triangle rule the DP does not model): the best valid one, else the DP's best.
  auto partition_with = [&](size_t used) {
    std::vector<int32_t> chip(un, 0);
    size_t j = un;
    for (size_t s = used; s >= 1; --s) {
      const int32_t i = from[s][j];
      for (size_t k = static_cast<size_t>(i); k < j; ++k) chip[k] = static_cast<int32_t>(s) - 1;
      j = static_cast<size_t>(i);
    }
    return chip;
  };
  std::vector<int32_t> best_valid, best_estimate;
  double valid_value = kInf, estimate = kInf;
  for (size_t s = 1; s <= chips; ++s) {
    if (best[s][un] == kInf) continue;
    std::vector<int32_t> chip = partition_with(s);
    if (best[s][un] < estimate) {
      estimate = best[s][un];
      best_estimate = chip;
    }
    const backends::mcm::McmResult r = sim.Simulate(graph, chip);
    if (r.valid && r.stage_seconds < valid_value) {
      valid_value = r.stage_seconds;
      best_valid = std::move(chip);
    }
  }
  return best_valid.empty() ? best_estimate : best_valid;
}

}  // namespace mltune::opt::mcm
