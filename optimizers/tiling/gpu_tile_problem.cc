#include "optimizers/tiling/gpu_tile_problem.h"

#include <map>
#include <memory>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/gpu/gpu_codegen.h"

namespace mltune::opt::tiling {

namespace cpu = backends::cpu;
namespace gpu = backends::gpu;

cpu::LoweredModule WithGpuParams(const cpu::LoweredModule& module) {
  cpu::LoweredModule out = module;
  for (cpu::Kernel& k : out.kernels) {
    k.params =
        gpu::CheckGpuSupported(k).ok() ? gpu::GpuKernelParams(k) : std::vector<cpu::KernelParam>{};
  }
  return out;
}

absl::StatusOr<std::string> GpuKernelProgramKey(const cpu::LoweredModule& module,
                                                const cpu::Kernel& kernel) {
  absl::StatusOr<gpu::GpuKernelProgram> program = gpu::GenerateGpuKernel(module, kernel.id);
  if (!program.ok()) return program.status();
  const std::regex names(absl::StrCat("\\b", program->name, "(?=[(_ ])|red_", program->name, "_"));
  std::string key = std::regex_replace(program->source, names, "");
  for (const cpu::KernelParam& p : kernel.params) {
    absl::StrAppend(&key, "|", p.name, ":", absl::StrJoin(p.choices, ","));
  }
  return key;
}

cpu::KernelConfig CanonicalGpuConfig(const cpu::Kernel& kernel, cpu::KernelConfig config) {
  if (config.size() != kernel.params.size()) return config;
  bool library = false;
  for (size_t i = 0; i < config.size(); ++i) {
    library |= kernel.params[i].name == "impl" && config[i] != 0;
  }
  if (!library) return config;
  for (size_t i = 0; i < config.size(); ++i) {
    if (kernel.params[i].name != "impl") config[i] = kernel.params[i].choices.front();
  }
  return config;
}

CpuTileProblem::MeasureFn GpuKernelMeasure(const cpu::LoweredModule& module,
                                           const gpu::NvrtcOptions& nvrtc,
                                           const gpu::GpuMeasureOptions& options, uint64_t seed) {
  auto seen = std::make_shared<std::map<std::pair<int32_t, cpu::KernelConfig>, double>>();
  return [&module, nvrtc, options, seed, seen](
             int32_t kernel, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
    const cpu::KernelConfig canonical =
        CanonicalGpuConfig(module.kernels[static_cast<size_t>(kernel)], config);
    if (auto it = seen->find({kernel, canonical}); it != seen->end()) return it->second;
    absl::StatusOr<gpu::GpuModuleProgram> program =
        gpu::CompileGpuKernel(module, kernel, canonical, nvrtc);
    if (!program.ok()) return program.status();
    absl::StatusOr<gpu::GpuTiming> t = gpu::MeasureGpu(*program, seed, options);
    if (!t.ok()) return t.status();
    (*seen)[{kernel, canonical}] = t->median_s;
    return t->median_s;
  };
}

}  // namespace mltune::opt::tiling
