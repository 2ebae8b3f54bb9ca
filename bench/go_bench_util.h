// Shared by the GO benchmarks (go_bench, go_fusion_cpu, mcm_bench): training a policy, annealing
// at 1x and 10x a budget, and the geometric mean of baseline / GO ratios.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "optimizers/core/search.h"
#include "optimizers/rl/rl.h"

namespace mltune::bench {

// A corpus split for a held-out evaluation: the environments of every family `held_family` does
// not name train; the entries of the families it names are held out where `evaluated` accepts
// them (the rest of those families is left out of both).
struct CorpusSplit {
  std::vector<opt::rl::GoEnvironment*> train;
  std::vector<const opt::rl::GoCorpus::Entry*> held;
};
inline CorpusSplit SplitCorpus(
    const opt::rl::GoCorpus& corpus, const std::function<bool(const std::string&)>& held_family,
    const std::function<bool(const opt::rl::GoCorpus::Entry&)>& evaluated = nullptr) {
  CorpusSplit split;
  for (const opt::rl::GoCorpus::Entry& e : corpus.entries()) {
    if (!held_family(e.family)) {
      split.train.push_back(e.env);
    } else if (!evaluated || evaluated(e)) {
      split.held.push_back(&e);
    }
  }
  return split;
}

// A GO policy (default configuration, `seed`) trained on `train`: `imitation` iterations of
// imitation, then `iterations` of PPO. Its checkpoint bytes, and the training's seconds.
struct TrainedGo {
  std::string checkpoint;
  double seconds = 0;
};
inline absl::StatusOr<TrainedGo> TrainGo(const std::vector<opt::rl::GoEnvironment*>& train,
                                         int imitation, int iterations, uint64_t seed) {
  opt::rl::GoConfig config;
  config.seed = seed;
  absl::StatusOr<std::unique_ptr<opt::rl::GoPolicy>> policy = opt::rl::GoPolicy::Create(config);
  if (!policy.ok()) return policy.status();
  opt::rl::GoTrainOptions options;
  options.imitation_iterations = imitation;
  options.iterations = iterations;
  options.eval_every = 0;
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = (*policy)->Train(train, options).status(); !s.ok()) return s;
  return TrainedGo{(*policy)->Save(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

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
