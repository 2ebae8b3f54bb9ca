#include "optimizers/tiling/confirm_tuned_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mltune::opt::tiling {

std::vector<KernelConfirmation> ConfirmTunedKernels(
    const std::vector<backends::cpu::KernelConfig>& defaults,
    const std::vector<backends::cpu::KernelConfig>& tuned, const CpuTileProblem::MeasureFn& measure,
    const ConfirmOptions& options) {
  constexpr double kFailed = std::numeric_limits<double>::infinity();
  std::vector<KernelConfirmation> out;
  const size_t n = std::min(defaults.size(), tuned.size());
  for (size_t k = 0; k < n; ++k) {
    if (defaults[k] == tuned[k]) continue;
    KernelConfirmation c;
    c.kernel = static_cast<int32_t>(k);
    c.default_seconds = kFailed;
    c.tuned_seconds = kFailed;
    auto run = [&](const backends::cpu::KernelConfig& config, double& fastest) {
      absl::StatusOr<double> s = measure(c.kernel, config);
      if (s.ok() && std::isfinite(*s) && *s >= 0) fastest = std::min(fastest, *s);
    };
    for (int r = 0; r < options.rounds; ++r) {
      // ABBA order: whichever ran second in one round runs first in the next.
      if (r % 2 == 0) {
        run(defaults[k], c.default_seconds);
        run(tuned[k], c.tuned_seconds);
      } else {
        run(tuned[k], c.tuned_seconds);
        run(defaults[k], c.default_seconds);
      }
    }
    c.kept = options.rounds <= 0 ||
             (std::isfinite(c.tuned_seconds) && c.tuned_seconds < c.default_seconds);
    out.push_back(c);
  }
  return out;
}

ConfirmedWinners ConfirmWinners(CpuTileProblem& problem, const Candidate& best,
                                const CpuTileProblem::MeasureFn& fresh,
                                const ConfirmOptions& options) {
  ConfirmedWinners out;
  const std::vector<backends::cpu::KernelConfig> defaults =
      problem.Decode(problem.DefaultCandidate());
  std::vector<backends::cpu::KernelConfig> tuned = problem.Decode(best);
  for (size_t k = 0; k < tuned.size() && k < defaults.size(); ++k) {
    if (tuned[k] == defaults[k]) continue;
    const int32_t kernel = static_cast<int32_t>(k);
    if (!(problem.KernelSeconds(kernel, tuned[k]) < problem.KernelSeconds(kernel, defaults[k]))) {
      out.reverted.push_back(kernel);
      tuned[k] = defaults[k];  // nothing to confirm
    }
  }
  out.checks = ConfirmTunedKernels(defaults, tuned, fresh, options);
  for (const KernelConfirmation& c : out.checks) {
    if (!c.kept) out.reverted.push_back(c.kernel);
  }
  std::sort(out.reverted.begin(), out.reverted.end());
  out.best = problem.WithDefaultKernels(best, out.reverted);
  return out;
}

}  // namespace mltune::opt::tiling
