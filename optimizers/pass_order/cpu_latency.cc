#include "optimizers/pass_order/cpu_latency.h"

#include <chrono>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "ir/fingerprint.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::opt::pass_order {
namespace {

namespace cpu = backends::cpu;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool HasCalls(const ir::Module& module) {
  for (const ir::Computation* c : module.computations()) {
    for (const ir::Instruction* instr : c->instructions()) {
      if (instr->opcode() == ir::Opcode::kCall) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ir::Module>> InlineCallsForLowering(const ir::Module& module) {
  std::unique_ptr<ir::Module> copy = module.Clone();
  if (HasCalls(module)) {
    static const passes::Registry& registry = passes::Registry::Global();
    absl::StatusOr<std::unique_ptr<passes::Pass>> inliner = registry.Create("call-inliner");
    if (!inliner.ok()) return inliner.status();
    if (absl::StatusOr<bool> changed = (*inliner)->Run(*copy); !changed.ok()) {
      return absl::InternalError(
          absl::StrCat("call-inliner before lowering failed: ", changed.status().message()));
    }
  }
  // One buffer per tuple leaf, as the backend's own pipeline leaves modules (a while's state).
  cpu::NormalizeTupleUses(*copy);
  return copy;
}

cpu::MeasureOptions LatencyMeasureOptions(double max_seconds) {
  cpu::MeasureOptions m;
  m.threads = 1;
  m.min_reps = 3;
  m.max_seconds = max_seconds;
  return m;
}

CpuLatencyScorer::CpuLatencyScorer(CpuLatencyOptions options) : options_(std::move(options)) {}

absl::StatusOr<double> CpuLatencyScorer::Measure(const ir::Module& candidate) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.calls;
  // Keyed by what is compiled: candidates that differ only in calls not yet inlined share it.
  absl::StatusOr<std::unique_ptr<ir::Module>> lowered = InlineCallsForLowering(candidate);
  std::string fingerprint = ir::Fingerprint(lowered.ok() ? **lowered : candidate);
  if (auto it = memo_.find(fingerprint); it != memo_.end()) {
    ++stats_.memo_hits;
    return it->second;
  }
  absl::StatusOr<double> seconds = [&]() -> absl::StatusOr<double> {
    if (!lowered.ok()) {
      ++stats_.failed;
      return lowered.status();
    }
    const ir::Module& module = **lowered;
    if (absl::Status s = cpu::CheckSupported(module); !s.ok()) {
      ++stats_.unsupported;
      return s;
    }
    const auto compile_start = std::chrono::steady_clock::now();
    absl::StatusOr<cpu::CompiledModule> compiled =
        cpu::CompileModule(module, {}, nullptr, options_.compiler);
    stats_.compile_seconds += SecondsSince(compile_start);
    if (!compiled.ok()) {
      ++stats_.failed;
      return compiled.status();
    }
    const auto run_start = std::chrono::steady_clock::now();
    absl::StatusOr<cpu::Timing> timing =
        cpu::Measure(compiled->object, compiled->program, options_.seed, options_.measure);
    stats_.measure_seconds += SecondsSince(run_start);
    if (!timing.ok()) {
      ++stats_.failed;
      return timing.status();
    }
    ++stats_.measured;
    return timing->median_s;
  }();
  if (!seconds.ok() && first_error_.empty()) first_error_ = seconds.status().ToString();
  memo_.emplace(std::move(fingerprint), seconds);
  return seconds;
}

double CpuLatencyScorer::Score(const ir::Module& module) {
  absl::StatusOr<double> seconds = Measure(module);
  return seconds.ok() ? *seconds : std::numeric_limits<double>::infinity();
}

CpuLatencyStats CpuLatencyScorer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string CpuLatencyScorer::first_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

ScoreFn LatencyScoreFn(std::shared_ptr<CpuLatencyScorer> scorer) {
  return [scorer = std::move(scorer)](const ir::Module& module) { return scorer->Score(module); };
}

absl::Status CheckLatencyScorable(const ir::Module& module) {
  absl::StatusOr<std::unique_ptr<ir::Module>> lowered = InlineCallsForLowering(module);
  if (!lowered.ok()) return lowered.status();
  absl::Status s = cpu::CheckSupported(**lowered);
  if (s.ok()) return s;
  return absl::FailedPreconditionError(absl::StrCat(
      "score=latency needs a module the cpu backend can compile as given (calls inlined): ",
      s.message()));
}

absl::StatusOr<double> DefaultCpuPipelineLatency(const ir::Module& module,
                                                 CpuLatencyScorer& scorer) {
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPasses(module);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<double> seconds = scorer.Measure(**optimized);
  if (!seconds.ok()) {
    return absl::Status(
        seconds.status().code(),
        absl::StrCat("XLA's default cpu pipeline's module: ", seconds.status().message()));
  }
  return seconds;
}

}  // namespace mltune::opt::pass_order
