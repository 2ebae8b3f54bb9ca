// `mltune run FILE --target gpu`: the module's kernels generated as CUDA, compiled with NVRTC
// for the attached device's architecture (or --arch without one), run and timed in the
// mltune-gpu-runner child, checked against the reference evaluator with --check, and with --tuned
// each kernel's GPU parameters searched by measurement. Without a GPU it compiles every kernel,
// says so, and why nothing ran.
#include <chrono>
#include <cmath>
#include <map>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/search.h"
#include "optimizers/tiling/gpu_tile_problem.h"

namespace mltune::client {
namespace {

namespace cpu = backends::cpu;
namespace gpu = backends::gpu;
using json = nlohmann::ordered_json;

std::string Ms(double s) { return absl::StrFormat("%.4g ms", s * 1e3); }

}  // namespace

int RunGpuRun(const RunCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> original = LoadVerified(cmd.file, err);
  if (original == nullptr) return 1;
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      cpu::RunCpuPipeline(*original, /*nhwc_convolutions=*/false);
  if (!module.ok()) {
    err << "error: " << cmd.file << ": " << module.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module);
  if (!lowered.ok()) {
    err << "error: " << cmd.file << ": " << lowered.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<gpu::DeviceDescriptor> device = gpu::ProbeDevice(0);
  gpu::NvrtcOptions nvrtc;
  if (!cmd.arch.empty()) {
    nvrtc.arch = cmd.arch;
  } else if (device.ok() && !cmd.emulate) {
    nvrtc.arch = device->Arch();
  }
  std::map<std::string, int> kinds;
  for (const cpu::Kernel& k : lowered->kernels) ++kinds[cpu::KernelKindName(k.kind)];
  std::vector<std::string> counts;
  for (const auto& [kind, n] : kinds) counts.push_back(absl::StrCat(kind, " ", n));
  out << "module " << (*module)->name() << ": " << lowered->kernels.size() << " kernels ("
      << absl::StrJoin(counts, ", ") << ")\n";
  json j;
  j["module"] = (*module)->name();
  j["kernels"] = lowered->kernels.size();
  j["arch"] = nvrtc.arch;
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<gpu::GpuModuleProgram> program = gpu::CompileGpuModule(*lowered, {}, nvrtc);
  if (!program.ok()) {
    err << "error: " << cmd.file << ": " << program.status().message() << "\n";
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out << "compiled: " << program->ptx.size() << " kernels to PTX for " << nvrtc.arch << " ("
      << program->cache_hits << " from the cache) in " << absl::StrFormat("%.2f s", seconds) << ", "
      << program->launches.size() << " launches\n";
  if (cmd.emulate) {
    // The generated code's semantics on the host: indexing, arithmetic, the GEMMs' operands.
    gpu::GpuMeasureOptions options;
    options.runner = gpu::GpuEmulatorPath();
    options.timeout_seconds = 3600;
    if (options.runner.empty()) {
      err << "error: this build has no mltune-gpu-emulator (no CUDA toolkit)\n";
      return 1;
    }
    const auto c0 = std::chrono::steady_clock::now();
    int64_t ill = 0;
    const absl::Status s =
        gpu::CheckGpuAgainstEvaluator(*original, *program, cmd.seed, options, nullptr, &ill);
    const double check_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    if (!s.ok()) {
      out << "check (emulated on the host): MISMATCH: " << s.message() << "\n";
      return 1;
    }
    out << "check (emulated on the host): matches the reference evaluator (seed " << cmd.seed << ")"
        << (ill > 0 ? absl::StrCat("; ", ill, " ill-conditioned element(s)") : "") << " in "
        << absl::StrFormat("%.1f s", check_s) << "\n";
    return 0;
  }
  if (!device.ok()) {
    err << "error: no GPU to run on: " << device.status().message() << "\n";
    return 1;
  }
  out << "device: " << device->Key() << "\n";
  j["device"] = device->Key();
  gpu::GpuMeasureOptions options;
  if (cmd.repeat > 0) {
    options.min_reps = static_cast<int>(cmd.repeat);
    options.max_reps = static_cast<int>(cmd.repeat);
    options.max_seconds = 1e9;
  } else {
    options.max_seconds = 1.0;
  }
  options.launch_times = cmd.kernel_times;
  int exit_code = 0;
  if (cmd.check) {
    int64_t ill_conditioned = 0;
    const absl::Status s = gpu::CheckGpuAgainstEvaluator(*original, *program, cmd.seed, options,
                                                         nullptr, &ill_conditioned);
    j["check"] = s.ok() ? "match" : std::string(s.message());
    if (s.ok()) {
      out << "check: matches the reference evaluator (seed " << cmd.seed << ")";
      if (ill_conditioned > 0) {
        out << "; " << ill_conditioned << " ill-conditioned element(s) only within "
            << cpu::Tolerance{}.spread_factor << "x how far rounding noise moves the evaluator";
      }
      out << "\n";
    } else {
      out << "check: MISMATCH: " << s.message() << "\n";
      exit_code = 1;
    }
  }
  absl::StatusOr<gpu::GpuTiming> t = gpu::MeasureGpu(*program, cmd.seed, options);
  if (!t.ok()) {
    err << "error: " << t.status().message() << "\n";
    return 1;
  }
  out << "latency (default kernels): median " << Ms(t->median_s) << ", p25-p75 " << Ms(t->p25_s)
      << " - " << Ms(t->p75_s) << " (spread " << absl::StrFormat("%.1f%%", t->spread * 100) << "), "
      << t->samples << " samples, L2 flushed before each\n";
  j["median_s"] = t->median_s;
  j["p25_s"] = t->p25_s;
  j["p75_s"] = t->p75_s;
  if (cmd.kernel_times && t->launch_s.size() == program->launches.size()) {
    std::vector<size_t> order(t->launch_s.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return t->launch_s[a] > t->launch_s[b]; });
    double total = 0;
    for (double s : t->launch_s) total += s;
    out << "launch times (each alone, L2 flushed; their sum " << Ms(total) << "):\n";
    json launches = json::array();
    for (size_t i : order) {
      const gpu::GpuModuleProgram::Launch& l = program->launches[i];
      const cpu::Kernel& k = lowered->kernels[static_cast<size_t>(l.kernel)];
      out << absl::StrFormat("  %-28s %-10s %-24s %9.3f us %5.1f%%\n", k.name,
                             cpu::KernelKindName(k.kind), l.entry, t->launch_s[i] * 1e6,
                             total > 0 ? 100 * t->launch_s[i] / total : 0.0);
      launches.push_back({{"kernel", k.name}, {"entry", l.entry}, {"seconds", t->launch_s[i]}});
    }
    j["launches"] = launches;
  }
  if (cmd.tuned) {
    // Each kernel's GPU parameters searched with its siblings' kernels alone on the device
    // (CpuTileProblem over WithGpuParams), then the tuned module timed beside the default: a
    // tuned module slower than the default is not kept.
    const cpu::LoweredModule space = opt::tiling::WithGpuParams(*lowered);
    gpu::GpuMeasureOptions kernel_options;
    kernel_options.max_seconds = 0.05;
    const opt::tiling::CpuTileProblem::MeasureFn measure =
        opt::tiling::GpuKernelMeasure(space, nvrtc, kernel_options, cmd.seed);
    opt::tiling::CpuTileProblem problem(space, measure, opt::tiling::GpuKernelProgramKey);
    absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy =
        opt::StrategyRegistry::Global().Create(cmd.strategy);
    if (!strategy.ok()) {
      err << "error: " << strategy.status().message() << "\n";
      return 1;
    }
    const double default_kernels = problem.Evaluate(problem.DefaultCandidate());
    if (!std::isfinite(default_kernels)) {
      err << "error: tuning: the default kernels failed: " << problem.last_error() << "\n";
      return 1;
    }
    absl::StatusOr<opt::Result> r =
        (*strategy)->Search(problem, opt::Budget(cmd.budget, 0), cmd.seed);
    if (!r.ok()) {
      err << "error: tuning: " << r.status().message() << "\n";
      return 1;
    }
    const opt::Candidate best =
        r->best_score < default_kernels ? r->best : problem.DefaultCandidate();
    absl::StatusOr<gpu::GpuModuleProgram> tuned =
        gpu::CompileGpuModule(*lowered, problem.Decode(best), nvrtc);
    if (!tuned.ok()) {
      err << "error: " << tuned.status().message() << "\n";
      return 1;
    }
    out << "tuned: " << cmd.strategy << ", " << r->steps << " steps, " << problem.measurements()
        << " kernel measurements; kernels alone " << Ms(default_kernels) << " -> "
        << Ms(problem.Evaluate(best)) << "\n";
    if (cmd.check) {
      const absl::Status s = gpu::CheckGpuAgainstEvaluator(*original, *tuned, cmd.seed, options);
      if (!s.ok()) {
        out << "check (tuned): MISMATCH: " << s.message() << "\n";
        exit_code = 1;
      }
    }
    absl::StatusOr<gpu::GpuTiming> tt = gpu::MeasureGpu(*tuned, cmd.seed, options);
    if (!tt.ok()) {
      err << "error: " << tt.status().message() << "\n";
      return 1;
    }
    const bool kept = tt->median_s < t->median_s;
    out << "latency (tuned kernels): median " << Ms(tt->median_s) << " ("
        << absl::StrFormat("%+.1f%%", (tt->median_s / t->median_s - 1) * 100)
        << " against the default" << (kept ? "" : "; not kept: the default is as fast") << ")\n";
    j["tuned_s"] = tt->median_s;
    j["tuned_kept"] = kept;
  }
  if (cmd.json) out << j.dump() << "\n";
  return exit_code;
}

}  // namespace mltune::client
