#include "daemon/gpu_tasks.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "nlohmann/json.hpp"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/tiling/cpu_kernel_graph.h"
#include "optimizers/tiling/gpu_tile_problem.h"

namespace mltune::daemon {
namespace {

using nlohmann::json;
namespace cpu = backends::cpu;
namespace gpu = backends::gpu;

// A kernel's GPU configuration as "name=value ..." for measurement rows and the kernel table.
std::string ConfigText(const cpu::Kernel& kernel, const cpu::KernelConfig& config) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < kernel.params.size() && i < config.size(); ++i) {
    parts.push_back(absl::StrCat(kernel.params[i].name, "=", config[i]));
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace

absl::StatusOr<TaskOutcome> SearchGpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options) {
  if (options.noise != 0) {
    return absl::InvalidArgumentError("option noise applies to tpu-sim only; gpu is measured");
  }
  // This machine's GPU, or a remote GPU worker's (whose architecture the kernels compile for).
  const absl::StatusOr<gpu::DeviceDescriptor> device = gpu::MeasuringDevice();
  if (!device.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU to measure on: ", device.status().message()));
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      cpu::RunCpuPipeline(*request.module, /*nhwc_convolutions=*/false);
  if (!module.ok()) return absl::FailedPreconditionError(module.status().message());
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module);
  if (!lowered.ok()) return absl::FailedPreconditionError(lowered.status().message());
  gpu::NvrtcOptions nvrtc;
  nvrtc.arch = device->Arch();
  // Compiling the default module first names any kernel the GPU cannot take.
  absl::StatusOr<gpu::GpuModuleProgram> defaults = gpu::CompileGpuModule(*lowered, {}, nvrtc);
  if (!defaults.ok()) return absl::FailedPreconditionError(defaults.status().message());
  const cpu::LoweredModule space = opt::tiling::WithGpuParams(*lowered);
  gpu::GpuMeasureOptions kernel_options;
  kernel_options.max_seconds = 0.05;
  const opt::tiling::CpuTileProblem::MeasureFn measure =
      opt::tiling::GpuKernelMeasure(space, nvrtc, kernel_options, options.seed);
  // Every kernel measurement is a row of the measurement log, the device in its worker field.
  const std::string worker = absl::StrCat(request.worker, " ", device->Key());
  opt::tiling::CpuTileProblem problem(
      space,
      [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
        absl::StatusOr<double> s = measure(k, config);
        if (s.ok() && request.record_measurement) {
          absl::StatusOr<opt::tiling::CpuKernelFeatures> features =
              opt::tiling::CpuKernelFeaturesOf(space, k);
          if (features.ok()) {
            storage::MeasurementRecord m;
            m.graph_key = features->key;
            m.task = "tile-kernel";
            m.target = gpu::GpuCacheTarget(*device);
            m.configuration = ConfigText(space.kernels[static_cast<size_t>(k)], config);
            m.value = *s;
            m.worker = worker;
            request.record_measurement(std::move(m));
          }
        }
        return s;
      },
      opt::tiling::GpuKernelProgramKey);
  const double baseline = problem.Evaluate(problem.DefaultCandidate());
  if (!std::isfinite(baseline)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the default kernels did not run: ", problem.last_error()));
  }
  absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
      request, "tile", problem, options.seed, baseline, baseline, "measured seconds (gpu)");
  if (!run.ok()) return run.status();
  const std::vector<cpu::KernelConfig> tuned = problem.Decode(run->best);
  const std::vector<cpu::KernelConfig> default_configs = problem.Decode(problem.DefaultCandidate());
  json kernels = json::array();
  for (const cpu::Kernel& k : space.kernels) {
    const size_t i = static_cast<size_t>(k.id);
    kernels.push_back({{"kernel", k.name},
                       {"kind", cpu::KernelKindName(k.kind)},
                       {"config", ConfigText(k, tuned[i])},
                       {"default_seconds", problem.KernelSeconds(k.id, default_configs[i])},
                       {"tuned_seconds", problem.KernelSeconds(k.id, tuned[i])}});
  }
  run->outcome.artifacts["kernels"] = kernels.dump(1);
  run->outcome.artifacts["device"] = device->Key();
  // The kernels were timed alone: the whole module, default against tuned, decides; a tuned
  // module measured slower than the default is not returned.
  json whole = json::object();
  gpu::GpuMeasureOptions module_options;
  absl::StatusOr<gpu::GpuTiming> d = gpu::MeasureGpu(*defaults, options.seed, module_options);
  absl::StatusOr<gpu::GpuModuleProgram> tuned_program =
      gpu::CompileGpuModule(*lowered, tuned, nvrtc);
  absl::StatusOr<gpu::GpuTiming> t =
      tuned_program.ok() ? gpu::MeasureGpu(*tuned_program, options.seed, module_options)
                         : absl::StatusOr<gpu::GpuTiming>(tuned_program.status());
  if (d.ok()) whole["default_seconds"] = d->median_s;
  if (t.ok()) whole["tuned_seconds"] = t->median_s;
  if (d.ok() && (!t.ok() || t->median_s > d->median_s)) {
    run->best = problem.DefaultCandidate();
    run->outcome.tuned_score = baseline;
    run->outcome.artifacts["configuration"] = opt::ConfigProblem::Format(run->best);
    whole["returned"] = "default (the tuned module measured slower)";
  } else {
    whole["returned"] = "tuned";
  }
  run->outcome.artifacts["module_timing"] = whole.dump();
  return std::move(run->outcome);
}

absl::StatusOr<TaskOutcome> SearchGpuFusion(const TaskRequest& request,
                                            const ConfigTaskOptions& options) {
  if (options.noise != 0) {
    return absl::InvalidArgumentError("option noise applies to tpu-sim only; gpu is measured");
  }
  // This machine's GPU, or a remote GPU worker's (whose architecture the kernels compile for).
  const absl::StatusOr<gpu::DeviceDescriptor> device = gpu::MeasuringDevice();
  if (!device.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU to measure on: ", device.status().message()));
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      cpu::RunCpuPipeline(*request.module, /*nhwc_convolutions=*/false);
  if (!module.ok()) return absl::FailedPreconditionError(module.status().message());
  gpu::NvrtcOptions nvrtc;
  nvrtc.arch = device->Arch();
  // Each plan's module compiled with the default kernel parameters and timed whole.
  const gpu::GpuMeasureOptions plan_options;
  auto seconds = [&](const costmodels::FusionPlan* plan) -> absl::StatusOr<double> {
    absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module, plan);
    if (!lowered.ok()) return lowered.status();
    absl::StatusOr<gpu::GpuModuleProgram> program = gpu::CompileGpuModule(*lowered, {}, nvrtc);
    if (!program.ok()) return program.status();
    absl::StatusOr<gpu::GpuTiming> t = gpu::MeasureGpu(*program, options.seed, plan_options);
    if (!t.ok()) return t.status();
    return t->median_s;
  };
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(**module),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        absl::StatusOr<double> s = seconds(&plan);
        if (!s.ok()) return s.status();
        return opt::fusion::PlanTiming{*s, {}};
      });
  const double baseline = problem.Evaluate(problem.DefaultCandidate());
  if (!std::isfinite(baseline)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the default fusion did not run: ", problem.last_error()));
  }
  const costmodels::FusionPlan unfused = costmodels::Unfused(problem.graph());
  absl::StatusOr<double> original = seconds(&unfused);
  absl::StatusOr<ConfigSearchRun> run =
      RunConfigSearch(request, "fusion", problem, options.seed,
                      original.ok() ? *original : baseline, baseline, "measured seconds (gpu)");
  if (!run.ok()) return run.status();
  run->outcome.artifacts["device"] = device->Key();
  return std::move(run->outcome);
}

}  // namespace mltune::daemon
