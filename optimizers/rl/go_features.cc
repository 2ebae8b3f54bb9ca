// GO's unit features: shares of compute and memory, scaled costs, degrees, position, flags,
// graph-level values, op kind and the running totals a contiguous split cuts at.
#include "optimizers/rl/go_features.h"

#include <algorithm>
#include <cmath>

namespace mltune::opt::rl {
namespace internal {

GoGraph BuildGoGraph(std::string name, const std::vector<UnitFacts>& units,
                     std::vector<int32_t> src, std::vector<int32_t> dst, int32_t devices,
                     double device_bytes) {
  GoGraph g;
  g.name = std::move(name);
  g.units = static_cast<int32_t>(units.size());
  g.feature_size = kGoFeatures;
  g.devices = devices;
  double total_seconds = 0, total_bytes = 0;
  for (const UnitFacts& u : units) {
    total_seconds += u.seconds;
    total_bytes += u.bytes;
  }
  const double n = std::max<double>(1, static_cast<double>(units.size()));
  const double mean_seconds = std::max(total_seconds / n, 1e-30);
  std::vector<int32_t> in(units.size(), 0), out(units.size(), 0);
  for (size_t e = 0; e < src.size(); ++e) {
    ++out[static_cast<size_t>(src[e])];
    ++in[static_cast<size_t>(dst[e])];
  }
  const double pressure = device_bytes > 0 ? total_bytes / (devices * device_bytes) : 0;
  g.features.reserve(units.size() * kGoFeatures);
  // Compute and memory up to and including each unit, in topological order: a contiguous split
  // (what pipelines and the latency objective favour) cuts where these cross multiples of 1/k.
  double seconds_before = 0, bytes_before = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const UnitFacts& u = units[i];
    seconds_before += u.seconds;
    bytes_before += u.bytes;
    const float f[kGoFeatures] = {
        static_cast<float>(total_seconds > 0 ? u.seconds / total_seconds : 0),
        static_cast<float>(total_bytes > 0 ? u.bytes / total_bytes : 0),
        static_cast<float>(std::log1p(u.seconds / mean_seconds)),
        static_cast<float>(device_bytes > 0 ? std::min(4.0, u.bytes / device_bytes) : 0),
        static_cast<float>(std::log1p(u.out_cost / mean_seconds)),
        static_cast<float>(std::log1p(in[i])),
        static_cast<float>(std::log1p(out[i])),
        static_cast<float>(static_cast<double>(i) / n),
        u.backward ? 1.0f : 0.0f,
        u.cpu_only ? 1.0f : 0.0f,
        static_cast<float>(1.0 / devices),
        static_cast<float>(std::min(4.0, pressure)),
        static_cast<float>(std::log1p(n) / 10),
        u.kind == 1 ? 1.0f : 0.0f,
        u.kind == 2 ? 1.0f : 0.0f,
        u.kind == 3 ? 1.0f : 0.0f,
        static_cast<float>(total_seconds > 0 ? seconds_before / total_seconds : 0),
        static_cast<float>(device_bytes > 0 ? bytes_before / (devices * device_bytes) : 0),
    };
    g.features.insert(g.features.end(), f, f + kGoFeatures);
  }
  g.edge_src = std::move(src);
  g.edge_dst = std::move(dst);
  return g;
}

void OpGraphEdges(const costmodels::OpGraph& graph, std::vector<int32_t>* src,
                  std::vector<int32_t>* dst) {
  for (int32_t i = 0; i < graph.size(); ++i) {
    for (const costmodels::OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
      if (in.node < 0 || in.node == i) continue;
      src->push_back(in.node);
      dst->push_back(i);
    }
  }
}

}  // namespace internal

int GoFeatureSize() { return internal::kGoFeatures; }

}  // namespace mltune::opt::rl
