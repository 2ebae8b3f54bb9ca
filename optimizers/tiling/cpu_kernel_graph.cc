#include "optimizers/tiling/cpu_kernel_graph.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::opt::tiling {

namespace cpu = backends::cpu;
namespace features = costmodels::features;

std::vector<int32_t> CpuKernelNodes(const cpu::LoweredModule& module, int32_t kernel) {
  std::unordered_map<std::string, int32_t> node_of;
  for (int32_t i = 0; i < module.graph.size(); ++i) {
    node_of.emplace(module.graph.nodes[static_cast<size_t>(i)].name, i);
  }
  std::vector<int32_t> nodes;
  for (const ir::Instruction* member : module.kernels[static_cast<size_t>(kernel)].members) {
    auto it = node_of.find(member->name());
    if (it != node_of.end()) nodes.push_back(it->second);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

features::Configuration CpuKernelConfiguration(const cpu::Kernel& kernel,
                                               const cpu::KernelConfig& config) {
  features::Configuration out;
  for (size_t p = 0; p < kernel.params.size() && p < config.size(); ++p) {
    out.emplace_back(kernel.params[p].name, config[p]);
  }
  return out;
}

std::string CpuConfigText(const cpu::Kernel& kernel, const cpu::KernelConfig& config) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : CpuKernelConfiguration(kernel, config)) {
    parts.push_back(absl::StrCat(name, "=", value));
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<CpuKernelFeatures> CpuKernelFeaturesOf(const cpu::LoweredModule& module,
                                                      int32_t kernel) {
  if (kernel < 0 || kernel >= static_cast<int32_t>(module.kernels.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
  }
  const std::vector<int32_t> nodes = CpuKernelNodes(module, kernel);
  CpuKernelFeatures out;
  absl::StatusOr<std::string> key = features::KernelKey(module.graph, *module.module, nodes);
  if (!key.ok()) return key.status();
  absl::StatusOr<features::KernelGraph> graph =
      features::BuildKernelGraph(module.graph, *module.module, nodes, {});
  if (!graph.ok()) return graph.status();
  out.key = *std::move(key);
  out.graph = *std::move(graph);
  return out;
}

}  // namespace mltune::opt::tiling
