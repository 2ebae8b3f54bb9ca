// MaxLoad's sums (objectives.cc) maintained term by term: a node's latency on its device, its
// output's send once on its own accelerator when some successor is elsewhere, and one receive on
// each other accelerator holding a successor.
#include "optimizers/device_partition/incremental_load.h"

#include <algorithm>

namespace mltune::opt::partition {

IncrementalLoad::IncrementalLoad(const PartitionGraph& graph, const std::vector<int32_t>& device)
    : g_(graph), class_device_(device) {
  int32_t top = g_.accelerators;
  for (int32_t d : device) top = std::max(top, d);
  devices_ = static_cast<size_t>(top) + 1;
  Reset();
}

double IncrementalLoad::Latency(int32_t w, int32_t d) const {
  const PartitionNode& n = g_.nodes[static_cast<size_t>(w)];
  return d == 0 ? n.cpu_latency : n.accelerator_latency;
}

void IncrementalLoad::Reset() {
  const size_t n = g_.nodes.size();
  node_device_.assign(n, 0);
  for (size_t v = 0; v < n; ++v) {
    node_device_[v] = class_device_[static_cast<size_t>(g_.nodes[v].group)];
  }
  successors_on_.assign(n * devices_, 0);
  elsewhere_.assign(n, 0);
  load_.assign(devices_, 0);
  bytes_.assign(devices_, 0);
  for (size_t u = 0; u < n; ++u) {
    const int32_t own = node_device_[u];
    load_[static_cast<size_t>(own)] += Latency(static_cast<int32_t>(u), own);
    bytes_[static_cast<size_t>(own)] += g_.nodes[u].bytes;
    for (int32_t w : g_.succ[u]) {
      const int32_t d = node_device_[static_cast<size_t>(w)];
      if (Count(static_cast<int32_t>(u), d)++ == 0 && d != own && d != 0) {
        load_[static_cast<size_t>(d)] += g_.nodes[u].out_cost;
      }
      if (d != own) ++elsewhere_[u];
    }
    if (elsewhere_[u] > 0 && own != 0) load_[static_cast<size_t>(own)] += g_.nodes[u].out_cost;
  }
}

void IncrementalLoad::SetNode(int32_t w, int32_t to) {
  const size_t wi = static_cast<size_t>(w);
  const int32_t from = node_device_[wi];
  if (from == to) return;
  const double out = g_.nodes[wi].out_cost;
  // Its own latency, memory and send.
  load_[static_cast<size_t>(from)] -= Latency(w, from);
  load_[static_cast<size_t>(to)] += Latency(w, to);
  bytes_[static_cast<size_t>(from)] -= g_.nodes[wi].bytes;
  bytes_[static_cast<size_t>(to)] += g_.nodes[wi].bytes;
  if (elsewhere_[wi] > 0 && from != 0) load_[static_cast<size_t>(from)] -= out;
  elsewhere_[wi] = static_cast<int32_t>(g_.succ[wi].size()) - Count(w, to);
  if (elsewhere_[wi] > 0 && to != 0) load_[static_cast<size_t>(to)] += out;
  // Its output's receives: `from` now receives it where a successor stays; `to` no longer does.
  if (from != 0 && Count(w, from) > 0) load_[static_cast<size_t>(from)] += out;
  if (to != 0 && Count(w, to) > 0) load_[static_cast<size_t>(to)] -= out;
  // Its predecessors' receives and sends.
  for (int32_t u : g_.pred[wi]) {
    if (u == w) continue;
    const size_t ui = static_cast<size_t>(u);
    const int32_t own = node_device_[ui];
    const double in = g_.nodes[ui].out_cost;
    if (--Count(u, from) == 0 && from != own && from != 0) load_[static_cast<size_t>(from)] -= in;
    if (Count(u, to)++ == 0 && to != own && to != 0) load_[static_cast<size_t>(to)] += in;
    if (from == own && elsewhere_[ui]++ == 0 && own != 0) load_[static_cast<size_t>(own)] += in;
    if (to == own && --elsewhere_[ui] == 0 && own != 0) load_[static_cast<size_t>(own)] -= in;
  }
  node_device_[wi] = to;
}

void IncrementalLoad::Move(int32_t c, int32_t to) {
  for (int32_t w : g_.group_nodes[static_cast<size_t>(c)]) SetNode(w, to);
  class_device_[static_cast<size_t>(c)] = to;
}

SplitScore IncrementalLoad::Score() const {
  SplitScore score;
  score.objective = 0;
  for (double l : load_) score.objective = std::max(score.objective, l);
  for (size_t d = 1; d < devices_; ++d) {
    score.max_bytes = std::max(score.max_bytes, bytes_[d]);
    // Sums of removed and added sizes round: a class that fits is not counted over by a hair.
    const double over = bytes_[d] - g_.accelerator_bytes;
    if (over > 1e-9 * g_.accelerator_bytes) {
      score.overflow_bytes += over;
      score.feasible = false;
    }
  }
  return score;
}

}  // namespace mltune::opt::partition
