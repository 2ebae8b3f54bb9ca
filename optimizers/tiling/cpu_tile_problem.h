// Tile search on the CPU backend: every tunable parameter of every kernel (loop blocking,
// unrolling, vectorization, reduction order, GEMM implementation, register and cache tiles,
// parallel split) is a position; the score is the sum of the kernels' measured times. Kernels are
// measured alone, each (kernel, program) once (configurations with one cpu::CanonicalConfig make
// one program), so a step that changes one kernel costs at most one measurement. Kernels that
// compile to one program (a model's repeated layers) are tuned once, the first standing for the
// others. The compiler's default configuration is the seed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "backends/cpu/runner.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::tiling {

// How a kernel is measured alone while tuning: short runs on hot caches. The daemon's tile task,
// `mltune collect` and the benchmarks share it, so the cost model's training data is measured
// the way the daemon measures.
backends::cpu::MeasureOptions KernelTuningMeasureOptions();
// How a whole module is measured while tuning (the daemon's cpu fusion task, its tile task's
// default-against-tuned check, the fusion benchmark): a little longer than a kernel alone.
backends::cpu::MeasureOptions ModuleTuningMeasureOptions();

// Kernel `kernel`'s program under its defaults, less what names it (its number in function
// names, the comment naming its ops), with its parameter space: equal for kernels that compile
// to one program under every configuration.
absl::StatusOr<std::string> KernelProgramKey(const backends::cpu::LoweredModule& module,
                                             const backends::cpu::Kernel& kernel);

class CpuTileProblem : public ConfigProblem {
 public:
  // Seconds of kernel `kernel` under `config`; an error makes the candidate invalid.
  using MeasureFn =
      std::function<absl::StatusOr<double>(int32_t kernel, const backends::cpu::KernelConfig&)>;

  // Predicted cost of each configuration of kernel `kernel` (lower is better; only the order
  // within one call matters): a learned cost model, for the "model-topk" strategy.
  using RankFn = std::function<absl::StatusOr<std::vector<double>>(
      int32_t kernel, const std::vector<backends::cpu::KernelConfig>&)>;

  // A kernel's program under its defaults, less what names it: kernels with one key are tuned
  // as one (KernelProgramKey for the CPU; the GPU's tile problem passes its own).
  using KeyFn = std::function<absl::StatusOr<std::string>(const backends::cpu::LoweredModule&,
                                                          const backends::cpu::Kernel&)>;

  CpuTileProblem(const backends::cpu::LoweredModule& module, MeasureFn measure,
                 KeyFn key = KernelProgramKey);
  void SetRanker(RankFn rank) { rank_ = std::move(rank); }

  std::string name() const override { return "tile"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  // Summed kernel seconds; +infinity when a kernel fails to compile or run.
  double Evaluate(const Candidate& candidate) override;

  // One part per kernel with parameters: its positions. Kernels are measured alone and their
  // seconds add up, so each is ranked and tuned on its own. Slowest first by the defaults'
  // measured seconds (kernels not measured yet last, in kernel order).
  std::vector<std::vector<int64_t>> Parts() const override;
  // Ranks the configurations that `settings` make of the kernel of part `part` of the latest
  // Parts() list with the ranker; FailedPrecondition without one. The best-ranked setting of each
  // implementation (the kernel's `impl` parameter: generated code or a oneDNN call) is marked
  // -infinity, so a top-k search measures every implementation's best guess besides its k best:
  // implementations differ in kind, and a wrong guess between them costs 2-3x on a convolution.
  // A setting that compiles to the same program as an earlier one scores +infinity.
  absl::StatusOr<std::vector<double>> RankSettings(int64_t part,
                                                   const std::vector<Candidate>& settings) override;

  Candidate DefaultCandidate() const { return Candidate(slots_.size(), 0); }
  // What each position sets: parameter `param` of kernel `kernel` (a kernel standing for its
  // copies; the copies have no positions).
  struct Slot {
    int32_t kernel;
    size_t param;
  };
  const std::vector<Slot>& positions() const { return slots_; }
  // RankSettings' must-tries: sets the score of each implementation's best-scored setting among
  // `settings` of `kernel` to -infinity (when the kernel has more than one implementation).
  static void MarkImplementationMustTries(const backends::cpu::Kernel& kernel,
                                          const std::vector<Candidate>& settings,
                                          std::vector<double>& scores);
  // One canonical configuration (cpu::CanonicalConfig) per kernel of the module.
  std::vector<backends::cpu::KernelConfig> Decode(const Candidate& candidate) const;
  // `candidate` with the kernels in `kernels` set back to their default configurations.
  Candidate WithDefaultKernels(Candidate candidate, const std::vector<int32_t>& kernels) const;
  // Seconds of one kernel in `candidate` (measuring it if needed).
  double KernelSeconds(int32_t kernel, const backends::cpu::KernelConfig& config);
  int64_t measurements() const { return static_cast<int64_t>(cache_.size()); }
  const std::string& last_error() const { return last_error_; }

 private:
  const backends::cpu::LoweredModule& module_;
  MeasureFn measure_;
  RankFn rank_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int64_t>> parts_;
  std::vector<int32_t> part_kernel_;  // per part, in kernel order
  // Per kernel, the kernel of its program that is tuned for it (itself for the first), and per
  // kernel how many it stands for.
  std::vector<int32_t> representative_;
  std::vector<int64_t> copies_;
  mutable std::vector<int32_t> listed_kernel_;  // per part, as Parts() last listed them
  SearchSpace space_;
  std::map<std::pair<int32_t, backends::cpu::KernelConfig>, double> cache_;
  std::string last_error_;
};

}  // namespace mltune::opt::tiling
