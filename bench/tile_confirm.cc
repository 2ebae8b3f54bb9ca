// Does measuring a tile search's winners again (optimizers/tiling/confirm_tuned_kernels.h) keep
// regressions out of its answer, and what gain does it give up?
//
//   build/release/bench/tile_confirm [FILES...] [--strategy annealing] [--budget 40]
//       [--seeds 2] [--verify-rounds 5]
//
// FILES default to the time-to-best benchmark's modules (bench/time_to_best.h). Per module and
// seed, the strategy searches the kernel parameters as the daemon's tile task does (each kernel
// measured alone, each (kernel, configuration) once) and ConfirmWinners checks its answer. Then
// every kernel whose searched configuration differs from its default is measured
// `verify-rounds` times more, default and winner alternating: times independent of both the
// search and the check, which the table scores both answers by. A kernel regresses when its
// winner's fastest verifying run is slower than its default's.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/time_to_best.h"
#include "optimizers/core/search.h"
#include "optimizers/tiling/confirm_tuned_kernels.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace {

using namespace mltune;
namespace cpu = backends::cpu;

struct Totals {
  int64_t runs = 0, changed = 0, reverted = 0, regressed_search = 0, regressed_kept = 0;
  int64_t reverted_rightly = 0;  // reverted, and the default verified no slower
  double gain_search = 0, gain_confirmed = 0, default_seconds = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tile search winners measured again (ConfirmWinners): regressions kept out"};
  std::vector<std::string> files;
  std::string strategy = "annealing";
  int64_t budget = 40;
  int seeds = 2, verify_rounds = 5;
  app.add_option("files", files, "HLO files (default: the time-to-best benchmark's modules)");
  app.add_option("--strategy", strategy, "Search strategy")->default_val("annealing");
  app.add_option("--budget", budget, "Search steps per run")->default_val(40);
  app.add_option("--seeds", seeds, "Seeds per module (0, 1, ...)")->default_val(2);
  app.add_option("--verify-rounds", verify_rounds, "Verifying runs of each configuration")
      ->default_val(5)
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  if (files.empty()) files = bench::TimeToBestFiles();

  const cpu::MeasureOptions measure = opt::tiling::KernelTuningMeasureOptions();
  std::cout << absl::StrFormat(
      "## Tile search winners measured again: %s, %d steps, %d seed(s), %d verifying runs, 1 "
      "thread\n\n",
      strategy, budget, seeds, verify_rounds);
  std::cout << "| module | seed | kernels | changed | reverted (rightly) | regressed: search / "
               "kept | gain: search / confirmed |\n|---|---:|---:|---:|---:|---:|---:|\n";
  Totals all;
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared = bench::ReadForCpu(file);
    absl::StatusOr<cpu::LoweredModule> lowered =
        prepared.ok() ? cpu::Lower(**prepared)
                      : absl::StatusOr<cpu::LoweredModule>(prepared.status());
    if (!lowered.ok()) {
      std::cerr << "skip " << file << ": " << lowered.status().message() << "\n";
      continue;
    }
    for (int s = 0; s < seeds; ++s) {
      const uint64_t seed = static_cast<uint64_t>(s);
      const opt::tiling::CpuTileProblem::MeasureFn kernel_seconds =
          [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
        absl::StatusOr<cpu::Timing> t = cpu::MeasureKernel(*lowered, k, config, {}, measure, seed);
        if (!t.ok()) return t.status();
        return t->median_s;
      };
      opt::tiling::CpuTileProblem problem(*lowered, kernel_seconds);
      absl::StatusOr<std::unique_ptr<opt::Strategy>> search =
          opt::StrategyRegistry::Global().Create(strategy);
      if (!search.ok()) {
        std::cerr << "error: " << search.status().message() << "\n";
        return 1;
      }
      const double default_seconds = problem.Evaluate(problem.DefaultCandidate());
      absl::StatusOr<opt::Result> r = (*search)->Search(problem, opt::Budget(budget, 0), seed);
      if (!r.ok() || !std::isfinite(default_seconds)) {
        std::cerr << "skip " << file << " seed " << seed << ": "
                  << (r.ok() ? problem.last_error() : std::string(r.status().message())) << "\n";
        continue;
      }
      opt::Candidate best = r->best;
      if (!(r->best_score < default_seconds)) best = problem.DefaultCandidate();
      const opt::tiling::ConfirmedWinners confirmed =
          opt::tiling::ConfirmWinners(problem, best, kernel_seconds);
      const std::vector<cpu::KernelConfig> defaults = problem.Decode(problem.DefaultCandidate());
      const std::vector<cpu::KernelConfig> searched = problem.Decode(best);
      const std::vector<cpu::KernelConfig> kept = problem.Decode(confirmed.best);
      Totals t;
      t.runs = 1;
      t.default_seconds = default_seconds;
      t.reverted = static_cast<int64_t>(confirmed.reverted.size());
      // The verifying runs: the same alternating measurement, more rounds, fresh times.
      for (const opt::tiling::KernelConfirmation& v : opt::tiling::ConfirmTunedKernels(
               defaults, searched, kernel_seconds, {.rounds = verify_rounds})) {
        ++t.changed;
        if (!std::isfinite(v.default_seconds) || !std::isfinite(v.tuned_seconds)) continue;
        const double gain = v.default_seconds - v.tuned_seconds;
        const bool regressed = gain < 0;
        const bool keeps =
            kept[static_cast<size_t>(v.kernel)] == searched[static_cast<size_t>(v.kernel)];
        t.gain_search += gain;
        t.regressed_search += regressed;
        if (keeps) {
          t.gain_confirmed += gain;
          t.regressed_kept += regressed;
        } else {
          t.reverted_rightly += regressed;
        }
      }
      std::cout << absl::StrFormat(
                       "| %s | %d | %d | %d | %d (%d) | %d / %d | %+.1f%% / %+.1f%% |\n",
                       (*prepared)->name().substr(0, 40), s, defaults.size(), t.changed, t.reverted,
                       t.reverted_rightly, t.regressed_search, t.regressed_kept,
                       100 * t.gain_search / default_seconds,
                       100 * t.gain_confirmed / default_seconds)
                << std::flush;
      all.runs += t.runs;
      all.changed += t.changed;
      all.reverted += t.reverted;
      all.reverted_rightly += t.reverted_rightly;
      all.regressed_search += t.regressed_search;
      all.regressed_kept += t.regressed_kept;
      all.gain_search += t.gain_search;
      all.gain_confirmed += t.gain_confirmed;
      all.default_seconds += default_seconds;
    }
  }
  std::cout << absl::StrFormat(
      "\n%d runs: %d kernels changed by the search, %d of them slower than their default by the "
      "verifying runs; %d reverted by the check (%d of them rightly), %d slower ones kept. "
      "Verified gain over the default kernels, summed: search %.2f%%, confirmed %.2f%%.\n",
      all.runs, all.changed, all.regressed_search, all.reverted, all.reverted_rightly,
      all.regressed_kept, 100 * all.gain_search / all.default_seconds,
      100 * all.gain_confirmed / all.default_seconds);
  return 0;
}
