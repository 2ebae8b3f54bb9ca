// The CPU backend's kernels as the learned cost model sees them (costmodels/features): the op
// graph nodes of a lowered kernel, its structural key, its graph, and its configuration as
// named pairs and as the measurement log's text. Shared by the daemon's cpu tile task and
// `mltune collect`, so both log the same keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "costmodels/features/kernel_graph.h"

namespace mltune::opt::tiling {

// The op graph nodes of kernel `kernel` (its members that are nodes: bitcasts are views), in
// graph (topological) order.
std::vector<int32_t> CpuKernelNodes(const backends::cpu::LoweredModule& module, int32_t kernel);

// (parameter name, value) pairs of `config` for `kernel`'s parameters.
costmodels::features::Configuration CpuKernelConfiguration(
    const backends::cpu::Kernel& kernel, const backends::cpu::KernelConfig& config);
// "name=value,..." in parameter order: the measurement log's configuration text.
std::string CpuConfigText(const backends::cpu::Kernel& kernel,
                          const backends::cpu::KernelConfig& config);

// The kernel's key (costmodels::features::KernelKey) and its graph with the configuration slots
// empty, as the store keeps it.
struct CpuKernelFeatures {
  std::string key;
  costmodels::features::KernelGraph graph;
};
absl::StatusOr<CpuKernelFeatures> CpuKernelFeaturesOf(const backends::cpu::LoweredModule& module,
                                                      int32_t kernel);

}  // namespace mltune::opt::tiling
