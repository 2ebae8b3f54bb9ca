// Re-measures a tile search's winners against the defaults before they are returned.
//
// A search keeps the fastest of many single measurements, so it favours the ones that read low:
// on a shared machine a co-runner only ever slows a run, and a configuration measured once in a
// quiet moment can look faster than a default it does not beat (measured here: a busy second
// core moves a 1.4 ns kernel to 2.0-2.5 ns; docs/cost_models.md). Each kernel whose tuned
// configuration differs from its default is measured again, the two alternating (default, tuned,
// tuned, default, ...) so drift weighs on both alike, and keeps its tuned configuration only
// where the fastest of its fresh runs beats the fastest of the default's.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/lowering.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::opt::tiling {

struct ConfirmOptions {
  // Runs of each configuration; 0 keeps every tuned configuration unmeasured.
  int rounds = 2;
};

struct KernelConfirmation {
  int32_t kernel = 0;
  // The fastest fresh run of each; +infinity when every run of it failed.
  double default_seconds = 0;
  double tuned_seconds = 0;
  bool kept = false;  // the tuned configuration stays
};

// One entry per kernel whose `tuned` configuration differs from `defaults` (same length: one
// configuration per kernel), in kernel order. A tuned configuration that fails is dropped; a
// default that fails keeps a tuned one that ran.
std::vector<KernelConfirmation> ConfirmTunedKernels(
    const std::vector<backends::cpu::KernelConfig>& defaults,
    const std::vector<backends::cpu::KernelConfig>& tuned, const CpuTileProblem::MeasureFn& measure,
    const ConfirmOptions& options = {});

struct ConfirmedWinners {
  Candidate best;                          // `best` with the reverted kernels at their defaults
  std::vector<KernelConfirmation> checks;  // the kernels measured again
  // Kernels set back to their defaults: their winner lost when measured again, or the search's
  // own measurements had it no faster than the default (a candidate wins on the sum of its
  // kernels, so one kernel can ride along slower).
  std::vector<int32_t> reverted;
};
// The search's `best` on `problem` after both checks; `fresh` measures without `problem`'s cache.
// Every kept kernel is faster than its default in the search's measurements too, so the result
// scores no worse than the defaults on `problem`.
ConfirmedWinners ConfirmWinners(CpuTileProblem& problem, const Candidate& best,
                                const CpuTileProblem::MeasureFn& fresh,
                                const ConfirmOptions& options = {});

}  // namespace mltune::opt::tiling
