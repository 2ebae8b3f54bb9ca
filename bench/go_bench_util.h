// Shared by the GO benchmarks (go_bench, go_fusion_cpu): annealing at 1x and 10x a budget, and
// the geometric mean of baseline / GO ratios.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "optimizers/core/search.h"

namespace mltune::bench {

// Annealing at `samples` and 10x `samples` evaluations on `problem`, and the step at which the
// longer run first reached its best.
struct AnnealRuns {
  double one = 0, ten = 0;
  int64_t ten_steps_to_best = 0;
};
inline AnnealRuns Anneal(opt::Problem& problem, int64_t samples, uint64_t seed) {
  auto run = [&](int64_t budget) {
    auto strategy = opt::StrategyRegistry::Global().Create("annealing");
    return *(*strategy)->Search(problem, opt::Budget(budget, 0), seed);
  };
  AnnealRuns runs;
  runs.one = run(samples).best_score;
  const opt::Result ten = run(10 * samples);
  runs.ten = ten.best_score;
  for (const opt::TracePoint& t : ten.trace) {
    if (t.best_score <= runs.ten) {
      runs.ten_steps_to_best = t.step;
      break;
    }
  }
  return runs;
}

// The geometric mean of baseline / GO (> 1: GO better) over the cases where both are finite.
struct Geomean {
  const char* what = "graphs";
  double log_sum = 0;
  int count = 0;
  void Add(double baseline, double go) {
    if (std::isfinite(baseline) && std::isfinite(go) && go > 0) {
      log_sum += std::log(baseline / go);
      ++count;
    }
  }
  std::string Text() const {
    return count == 0 ? std::string("—")
                      : absl::StrFormat("%.3fx (%d %s)", std::exp(log_sum / count), count, what);
  }
};

}  // namespace mltune::bench
