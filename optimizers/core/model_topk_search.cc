// Model-guided search, as Kaufman et al. (MLSys 2021) use their learned TPU cost model: the model
// ranks many settings and only its k best are measured. The problem's parts (Problem::Parts, the
// CPU backend's kernels) are taken one at a time from the best seed: every setting of the part
// when there are at most `pool`, else `pool` distinct random ones plus the current one; the
// problem ranks them (Problem::RankSettings) and the k best ranked that differ from the current
// setting are evaluated, each as the current candidate with that part replaced. A part keeps its
// best measured setting. Measuring k per part instead of searching by measurement is the point:
// the model's inference is cheap next to compiling and timing a kernel.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

class ModelTopKSearch : public Strategy {
 public:
  ModelTopKSearch(int64_t k, int64_t pool) : k_(k), pool_(pool) {}
  std::string_view name() const override { return "model-topk"; }

 protected:
  absl::Status CheckProblem(Problem& problem) override {
    if (!problem.space().fixed_length || problem.NewState() != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("model-topk ranks whole configurations; problem ", problem.name(),
                       " is a sequence problem"));
    }
    // An empty ranking call says whether a model is attached, before any measurement.
    return problem.RankSettings(0, {}).status();
  }

  bool Run(SearchContext& ctx) override {
    const SearchSpace& space = ctx.space();
    Candidate current;
    double current_score;
    if (const SearchContext::Evaluation* seed = internal::BestSeed(ctx); seed != nullptr) {
      current = seed->effective;
      current_score = seed->score;
    } else {
      current.assign(static_cast<size_t>(space.max_length), 0);
      std::optional<SearchContext::Evaluation> e = ctx.Evaluate(current);
      if (!e) return true;
      current_score = e->score;
    }
    const std::vector<std::vector<int64_t>> parts = ctx.problem().Parts();
    for (size_t part = 0; part < parts.size(); ++part) {
      const std::vector<int64_t>& positions = parts[part];
      if (positions.empty()) continue;
      const Candidate now = Setting(current, positions);
      std::vector<Candidate> settings = Settings(space, positions, now, ctx.rng());
      absl::StatusOr<std::vector<double>> ranks =
          ctx.problem().RankSettings(static_cast<int64_t>(part), settings);
      if (!ranks.ok() || ranks->size() != settings.size()) {
        Fail(ranks.ok()
                 ? absl::InternalError(absl::StrCat("the cost model ranked ", ranks->size(), " of ",
                                                    settings.size(), " settings of part ", part))
                 : ranks.status());
        return false;
      }
      std::vector<size_t> order(settings.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return (*ranks)[a] < (*ranks)[b]; });
      int64_t measured = 0;
      Candidate best = current;
      double best_score = current_score;
      for (size_t i : order) {
        // -infinity: the problem asks for it beyond the k best (Problem::RankSettings).
        const bool required = std::isinf((*ranks)[i]) && (*ranks)[i] < 0;
        if (!required && measured >= k_) break;
        if (settings[i] == now) continue;  // already measured: it is the current candidate
        Candidate c = current;
        for (size_t p = 0; p < positions.size(); ++p) {
          c[static_cast<size_t>(positions[p])] = settings[i][p];
        }
        std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
        if (!e) return true;
        if (!required) ++measured;
        if (e->score < best_score) {
          best_score = e->score;
          best = std::move(c);
        }
      }
      current = std::move(best);
      current_score = best_score;
    }
    return false;
  }

 private:
  static Candidate Setting(const Candidate& c, const std::vector<int64_t>& positions) {
    Candidate s;
    for (int64_t p : positions) s.push_back(c[static_cast<size_t>(p)]);
    return s;
  }

  // Every setting of the positions (mixed radix) when they number at most pool_, else the
  // current one and distinct random ones up to pool_.
  std::vector<Candidate> Settings(const SearchSpace& space, const std::vector<int64_t>& positions,
                                  const Candidate& now, std::mt19937_64& rng) const {
    double total = 1;
    for (int64_t p : positions) total *= space.ChoicesAt(p);
    std::vector<Candidate> out;
    if (total <= static_cast<double>(pool_)) {
      Candidate s(positions.size(), 0);
      for (;;) {
        out.push_back(s);
        size_t d = 0;
        while (d < s.size() && ++s[d] == space.ChoicesAt(positions[d])) s[d++] = 0;
        if (d == s.size()) break;
      }
      return out;
    }
    std::set<Candidate> seen = {now};
    out.push_back(now);
    for (int64_t tries = 0; static_cast<int64_t>(out.size()) < pool_ && tries < 20 * pool_;
         ++tries) {
      Candidate s;
      for (int64_t p : positions)
        s.push_back(static_cast<Action>(internal::Uniform(rng, space.ChoicesAt(p))));
      if (seen.insert(s).second) out.push_back(std::move(s));
    }
    return out;
  }

  int64_t k_, pool_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Strategy>> CreateModelTopK(const StrategyParams& params) {
  absl::Status s = internal::CheckParams(params, kModelTopK, {"k", "pool"});
  if (!s.ok()) return s;
  const double k = internal::Param(params, "k", 5);
  const double pool = internal::Param(params, "pool", 256);
  if (!(k >= 1 && k <= 1e6) || !(pool >= 1 && pool <= 1e6)) {
    return absl::InvalidArgumentError("model-topk: k and pool must be between 1 and 1000000");
  }
  return std::make_unique<ModelTopKSearch>(static_cast<int64_t>(k), static_cast<int64_t>(pool));
}

}  // namespace mltune::opt
