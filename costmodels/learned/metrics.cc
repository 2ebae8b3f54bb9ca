// The paper's evaluation metrics, in plain C++ so benchmarks and the daemon can score any
// predictor (the learned model, the analytical one, a constant) the same way.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "costmodels/learned/learned_model.h"

namespace mltune::costmodels::learned {

double KendallTau(std::span<const double> a, std::span<const double> b) {
  // tau-b: ties in either sequence neither agree nor disagree, and shrink the denominator.
  int64_t concordant = 0, discordant = 0, ties_a = 0, ties_b = 0, pairs = 0;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      ++pairs;
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0) ++ties_a;
      if (db == 0) ++ties_b;
      if (da == 0 || db == 0) continue;
      ((da > 0) == (db > 0) ? concordant : discordant) += 1;
    }
  }
  const double denominator =
      std::sqrt(static_cast<double>(pairs - ties_a) * static_cast<double>(pairs - ties_b));
  return denominator > 0 ? static_cast<double>(concordant - discordant) / denominator : 0.0;
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

}  // namespace

RankMetrics EvaluateRanking(std::span<const int64_t> group, std::span<const double> truth,
                            std::span<const double> predicted, std::span<const int64_t> program) {
  std::map<int64_t, std::vector<size_t>> members;
  const size_t n = std::min({group.size(), truth.size(), predicted.size()});
  const bool per_program = program.size() >= n;
  std::map<int64_t, std::pair<double, double>> lost_and_best;  // per program
  for (size_t i = 0; i < n; ++i) members[group[i]].push_back(i);
  RankMetrics m;
  std::vector<double> apes;
  double tau_sum = 0, top5_sum = 0;
  for (const auto& [id, rows] : members) {
    if (rows.size() < 2) continue;
    std::vector<double> t, p;
    for (size_t r : rows) {
      t.push_back(truth[r]);
      p.push_back(predicted[r]);
    }
    // Ties in the prediction go to the first sample: a model that cannot tell gets no credit for
    // the order the data happens to come in only by chance.
    const size_t picked = std::min_element(p.begin(), p.end()) - p.begin();
    const double best = *std::min_element(t.begin(), t.end());
    apes.push_back(best > 0 ? t[picked] / best - 1 : 0.0);
    if (per_program) {
      auto& [lost, best_sum] = lost_and_best[program[rows[0]]];
      lost += t[picked] - best;
      best_sum += best;
    }
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
    double top5 = t[order[0]];
    for (size_t i = 1; i < order.size() && i < 5; ++i) top5 = std::min(top5, t[order[i]]);
    top5_sum += best > 0 ? top5 / best - 1 : 0.0;
    tau_sum += KendallTau(t, p);
  }
  m.groups = static_cast<int>(apes.size());
  if (apes.empty()) return m;
  double sum = 0;
  for (double a : apes) sum += a;
  m.ape_mean = sum / apes.size();
  m.ape_top5_mean = top5_sum / apes.size();
  m.ape_median = Median(apes);
  m.kendall_tau = tau_sum / apes.size();
  std::vector<double> program_apes;
  for (const auto& [id, lb] : lost_and_best) {
    program_apes.push_back(lb.second > 0 ? lb.first / lb.second : 0.0);
  }
  m.programs = static_cast<int>(program_apes.size());
  if (!program_apes.empty()) {
    m.program_ape_mean =
        std::accumulate(program_apes.begin(), program_apes.end(), 0.0) / program_apes.size();
    m.program_ape_median = Median(program_apes);
  }
  return m;
}

std::vector<double> GuardDefaultPick(std::span<const int64_t> group, std::span<const double> score,
                                     std::span<const double> log_seconds,
                                     const std::vector<bool>& is_default, double margin) {
  std::vector<double> out(score.begin(), score.end());
  const size_t n = std::min({group.size(), score.size(), log_seconds.size(), is_default.size()});
  std::map<int64_t, std::vector<size_t>> members;
  for (size_t i = 0; i < n; ++i) members[group[i]].push_back(i);
  const double needed = std::log1p(std::max(0.0, margin));
  for (const auto& [id, rows] : members) {
    size_t pick = rows[0];
    std::optional<size_t> fallback;
    for (size_t r : rows) {
      if (score[r] < score[pick]) pick = r;  // ties stay with the first, as EvaluateRanking's
      if (is_default[r] && !fallback) fallback = r;
    }
    if (!fallback || *fallback == pick) continue;
    if (log_seconds[*fallback] - log_seconds[pick] >= needed) continue;
    out[*fallback] = score[pick] - 1;
  }
  return out;
}

std::vector<double> ProgramShareWeights(std::span<const int64_t> group,
                                        std::span<const double> seconds,
                                        std::span<const int64_t> program) {
  const size_t n = std::min({group.size(), seconds.size(), program.size()});
  std::map<int64_t, double> best;  // per group
  std::map<int64_t, int64_t> program_of;
  for (size_t i = 0; i < n; ++i) {
    auto [it, fresh] = best.emplace(group[i], seconds[i]);
    if (!fresh) it->second = std::min(it->second, seconds[i]);
    program_of.emplace(group[i], program[i]);
  }
  std::map<int64_t, double> total;  // per program, its groups' best times summed
  std::map<int64_t, int64_t> groups;
  for (const auto& [g, t] : best) {
    total[program_of[g]] += t;
    ++groups[program_of[g]];
  }
  std::vector<double> out(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = program_of[group[i]];
    if (total[p] > 0) out[i] = best[group[i]] / total[p] * static_cast<double>(groups[p]);
  }
  return out;
}

namespace {

// |predicted - truth| / truth: one row's relative error, for a positive truth (callers skip the
// rest), so the banded MAPE and the overall one agree by construction.
double RelativeError(double truth_seconds, double predicted_seconds) {
  return std::abs(predicted_seconds - truth_seconds) / truth_seconds;
}

// RelativeError per row with a positive truth: what Mape and MedianApe summarise.
std::vector<double> RelativeErrors(std::span<const double> truth_seconds,
                                   std::span<const double> predicted_seconds) {
  std::vector<double> errors;
  for (size_t i = 0; i < truth_seconds.size() && i < predicted_seconds.size(); ++i) {
    if (truth_seconds[i] > 0) {
      errors.push_back(RelativeError(truth_seconds[i], predicted_seconds[i]));
    }
  }
  return errors;
}

}  // namespace

double Mape(std::span<const double> truth_seconds, std::span<const double> predicted_seconds) {
  const std::vector<double> errors = RelativeErrors(truth_seconds, predicted_seconds);
  return errors.empty() ? 0.0 : std::accumulate(errors.begin(), errors.end(), 0.0) / errors.size();
}

double MedianApe(std::span<const double> truth_seconds, std::span<const double> predicted_seconds) {
  return Median(RelativeErrors(truth_seconds, predicted_seconds));
}

std::vector<RuntimeBand> MapeByRuntime(std::span<const double> truth_seconds,
                                       std::span<const double> predicted_seconds,
                                       std::span<const double> edges) {
  std::vector<RuntimeBand> bands(edges.size() + 1);
  for (size_t b = 0; b < bands.size(); ++b) {
    bands[b].lower_seconds = b == 0 ? 0.0 : edges[b - 1];
    bands[b].upper_seconds = b < edges.size() ? edges[b] : 0.0;
  }
  double total = 0;
  for (size_t i = 0; i < truth_seconds.size() && i < predicted_seconds.size(); ++i) {
    if (!(truth_seconds[i] > 0)) continue;
    const size_t b = static_cast<size_t>(
        std::upper_bound(edges.begin(), edges.end(), truth_seconds[i]) - edges.begin());
    const double error = RelativeError(truth_seconds[i], predicted_seconds[i]);
    ++bands[b].rows;
    bands[b].mape += error;
    total += error;
  }
  for (RuntimeBand& band : bands) {
    band.error_share = total > 0 ? band.mape / total : 0.0;
    band.mape = band.rows > 0 ? band.mape / static_cast<double>(band.rows) : 0.0;
  }
  return bands;
}

double TimeWeightedApe(std::span<const double> truth_seconds,
                       std::span<const double> predicted_seconds) {
  double error = 0, total = 0;
  for (size_t i = 0; i < truth_seconds.size() && i < predicted_seconds.size(); ++i) {
    if (!(truth_seconds[i] > 0)) continue;
    error += std::abs(predicted_seconds[i] - truth_seconds[i]);
    total += truth_seconds[i];
  }
  return total > 0 ? error / total : 0.0;
}

std::vector<double> RelativeErrorSeconds(std::span<const double> log_mean,
                                         std::span<const double> spread, RuntimeSpread fit) {
  std::vector<double> out;
  out.reserve(log_mean.size());
  for (size_t i = 0; i < log_mean.size(); ++i) {
    const double s = i < spread.size() ? spread[i] : 0.0;
    out.push_back(std::exp(log_mean[i] - fit.floor - fit.scale * s * s));
  }
  return out;
}

RuntimeSpread FitRuntimeSpread(std::span<const double> truth_seconds,
                               std::span<const double> log_mean, std::span<const double> spread) {
  const size_t n = std::min({truth_seconds.size(), log_mean.size(), spread.size()});
  // Per entry: log(predicted median / truth) and the spread squared; the loss of a pair is then
  // a sum of |exp(q - floor - scale * s2) - 1|.
  std::vector<double> q, s2;
  for (size_t i = 0; i < n; ++i) {
    if (!(truth_seconds[i] > 0) || !std::isfinite(log_mean[i]) || !std::isfinite(spread[i])) {
      continue;
    }
    q.push_back(log_mean[i] - std::log(truth_seconds[i]));
    s2.push_back(spread[i] * spread[i]);
  }
  RuntimeSpread best;
  if (q.empty()) return best;
  auto loss = [&](double floor, double scale) {
    double sum = 0;
    for (size_t i = 0; i < q.size(); ++i)
      sum += std::abs(std::exp(q[i] - floor - scale * s2[i]) - 1);
    return sum;
  };
  double best_loss = loss(0, 0);
  // A coarse grid, then a finer one around its best: the loss is smooth in both.
  auto search = [&](double floor_lo, double floor_step, double scale_lo, double scale_step) {
    for (int a = 0; a <= 40; ++a) {
      for (int b = 0; b <= 40; ++b) {
        const double floor = std::max(0.0, floor_lo + a * floor_step);
        const double scale = std::max(0.0, scale_lo + b * scale_step);
        if (const double l = loss(floor, scale); l < best_loss) {
          best_loss = l;
          best = {floor, scale};
        }
      }
    }
  };
  search(0, 0.05, 0, 0.5);
  search(best.floor - 0.05, 0.0025, best.scale - 0.5, 0.025);
  return best;
}

}  // namespace mltune::costmodels::learned
