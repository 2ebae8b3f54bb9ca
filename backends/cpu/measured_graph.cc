// A module's kernels as the placement simulator's op graph, each costed by its time measured on
// this host (the cluster simulator's expensive, real costs; issue 71's measured placement).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "costmodels/analytical/kernels.h"

namespace mltune::backends::cpu {

absl::StatusOr<costmodels::OpGraph> MeasuredKernelGraph(const ir::Module& module,
                                                        const MeasureOptions& options,
                                                        uint64_t seed) {
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(module);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**optimized);
  if (!compiled.ok()) return compiled.status();
  MeasureOptions measure = options;
  measure.kernel_times = true;
  absl::StatusOr<Timing> timing = Measure(compiled->object, compiled->program, seed, measure);
  if (!timing.ok()) return timing.status();
  const LoweredModule& lowered = compiled->lowered;
  if (timing->kernel_s.size() != lowered.kernels.size()) {
    return absl::InternalError(absl::StrCat("the runner timed ", timing->kernel_s.size(),
                                            " kernels of ", lowered.kernels.size()));
  }
  std::vector<int32_t> kernel_of_node;
  costmodels::OpGraph graph = costmodels::FuseOpGraph(lowered.graph, lowered.plan, &kernel_of_node);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    // A kernel's timer also counts what it waits for; an empty kernel still takes its call.
    graph.nodes[i].measured_s =
        std::max(1e-9, timing->kernel_s[static_cast<size_t>(kernel_of_node[i])]);
  }
  return graph;
}

}  // namespace mltune::backends::cpu
