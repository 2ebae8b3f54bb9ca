#include "optimizers/cost_model_training/baselines.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mltune::opt::cost_model_training {
namespace {

// Kernel feature slots (costmodels/features/kernel_features.cc), each log2(1 + x).
constexpr int kFlops = 0, kTranscendentals = 1, kBytesIn = 2, kBytesOut = 3, kHasMatmul = 9;

double Unlog(const costmodels::features::KernelGraph& graph, int slot) {
  if (graph.kernel_features.size() <= static_cast<size_t>(slot)) return 0;
  return std::max(0.0, std::exp2(static_cast<double>(graph.kernel_features[slot])) - 1);
}

// The value of parameter `name` in `config`, or `absent`.
double Param(const costmodels::features::Configuration& config, const std::string& name,
             double absent) {
  for (const auto& [n, v] : config) {
    if (n == name) return static_cast<double>(v);
  }
  return absent;
}

}  // namespace

double CpuRooflineSeconds(const costmodels::features::KernelGraph& graph) {
  const double ops = Unlog(graph, kFlops) + Unlog(graph, kTranscendentals);
  const double bytes = Unlog(graph, kBytesIn) + Unlog(graph, kBytesOut);
  return std::max(ops / kCpuPeakFlops, bytes / kCpuBandwidth);
}

double CpuTileSeconds(const costmodels::features::KernelGraph& graph,
                      const costmodels::features::Configuration& config, int threads) {
  double ops = Unlog(graph, kFlops) + Unlog(graph, kTranscendentals);
  const double bytes = Unlog(graph, kBytesIn) + Unlog(graph, kBytesOut);
  double efficiency = 1;
  if (graph.kernel_features.size() > kHasMatmul && graph.kernel_features[kHasMatmul] > 0) {
    efficiency = Param(config, "impl", 0) >= 1 ? 0.9 : 0.5;
  } else {
    if (Param(config, "simd", 1) == 0) efficiency /= 8;
    efficiency *= std::min(1.0, 0.5 + Param(config, "unroll", 8) / 16);
    efficiency *= std::min(1.0, std::max(1.0, Param(config, "lanes", 8)) / 8);
    if (Param(config, "cache", 1) == 0) ops *= 1.5;
  }
  const double cores = Param(config, "parallel", 0) != 0 ? std::max(1, threads) : 1;
  return std::max(ops / (kCpuPeakFlops * efficiency * cores), bytes / kCpuBandwidth);
}

}  // namespace mltune::opt::cost_model_training
