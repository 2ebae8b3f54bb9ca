#include "client/cost_model_baselines.h"

#include <algorithm>
#include <cmath>

namespace mltune::client {
namespace {

// Kernel feature slots (costmodels/features/kernel_features.cc), each log2(1 + x).
constexpr int kFlops = 0, kTranscendentals = 1, kBytesIn = 2, kBytesOut = 3;

double Unlog(const costmodels::features::KernelGraph& graph, int slot) {
  if (graph.kernel_features.size() <= static_cast<size_t>(slot)) return 0;
  return std::max(0.0, std::exp2(static_cast<double>(graph.kernel_features[slot])) - 1);
}

}  // namespace

double CpuRooflineSeconds(const costmodels::features::KernelGraph& graph) {
  const double ops = Unlog(graph, kFlops) + Unlog(graph, kTranscendentals);
  const double bytes = Unlog(graph, kBytesIn) + Unlog(graph, kBytesOut);
  return std::max(ops / kCpuPeakFlops, bytes / kCpuBandwidth);
}

}  // namespace mltune::client
