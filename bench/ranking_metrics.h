// How well predicted times order measured ones, over one set of candidates (the fusion plans a
// benchmark measured): what a model-guided search relies on, which per-kernel error does not show.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "costmodels/learned/learned_model.h"

namespace mltune::bench {

struct RankingMetrics {
  size_t candidates = 0;
  // Kendall's tau-b between predicted and measured times (costmodels::learned::KendallTau): 1 is
  // the measured order, 0 no better than chance.
  double kendall_tau = 0;
  // Measured time of the candidate predicted fastest over the fastest measured (1 is perfect),
  // and of the best measured among the `top_k` predicted fastest (the paper's top-k use).
  double top1_ratio = 0;
  double topk_ratio = 0;
};

// `predicted` and `measured` hold one time per candidate; candidates with a non-finite time in
// either are left out.
inline RankingMetrics Ranking(const std::vector<double>& predicted,
                              const std::vector<double>& measured, size_t top_k) {
  std::vector<size_t> kept;
  std::vector<double> kept_predicted, kept_measured;
  for (size_t i = 0; i < predicted.size() && i < measured.size(); ++i) {
    if (!std::isfinite(predicted[i]) || !std::isfinite(measured[i])) continue;
    kept.push_back(i);
    kept_predicted.push_back(predicted[i]);
    kept_measured.push_back(measured[i]);
  }
  RankingMetrics m;
  m.candidates = kept.size();
  if (kept.empty()) return m;
  m.kendall_tau = costmodels::learned::KendallTau(kept_predicted, kept_measured);
  std::vector<size_t> order = kept;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  double best = std::numeric_limits<double>::infinity();
  for (size_t i : kept) best = std::min(best, measured[i]);
  double best_in_top = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < order.size() && r < std::max<size_t>(top_k, 1); ++r) {
    best_in_top = std::min(best_in_top, measured[order[r]]);
  }
  m.top1_ratio = measured[order[0]] / best;
  m.topk_ratio = best_in_top / best;
  return m;
}

}  // namespace mltune::bench
