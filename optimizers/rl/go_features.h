// The unit features every GO environment describes its graph with (internal to
// optimizers/rl): one policy learns across graphs because they all look alike to it.
#pragma once

#include <string>
#include <vector>

#include "costmodels/analytical/op_graph.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl::internal {

inline constexpr int kGoFeatures = 18;

// What every unit of every graph is described by; see GoGraph for features 0 and 1.
struct UnitFacts {
  double seconds = 0;  // on one accelerator
  double bytes = 0;
  double out_cost = 0;  // moving the unit's output to another device, in the unit of seconds
  bool backward = false;
  bool cpu_only = false;
  int kind = 0;  // 0 unknown, 1 matmul-like, 2 elementwise-like, 3 other
};

// The GoGraph of `units` (in topological order) and their edges on `devices` devices of
// `device_bytes` each (0: no memory limit).
GoGraph BuildGoGraph(std::string name, const std::vector<UnitFacts>& units,
                     std::vector<int32_t> src, std::vector<int32_t> dst, int32_t devices,
                     double device_bytes);

// The data edges of an op graph as (producer, consumer) pairs, self-loops left out.
void OpGraphEdges(const costmodels::OpGraph& graph, std::vector<int32_t>* src,
                  std::vector<int32_t>* dst);

}  // namespace mltune::opt::rl::internal
