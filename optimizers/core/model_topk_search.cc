// Model-guided search, as Kaufman et al. (MLSys 2021) use their learned TPU cost model: the model
// ranks many settings and only its k best are measured. The problem's parts (Problem::Parts, the
// CPU backend's kernels) are taken one at a time from the best seed: every setting of the part
// when there are at most `pool`, else `pool` distinct random ones plus the current one; the
// problem ranks them (Problem::RankSettings) and the k best ranked that differ from the current
// setting are evaluated, each as the current candidate with that part replaced. A part keeps its
// best measured setting. Measuring k per part instead of searching by measurement is the point:
// the model's inference is cheap next to compiling and timing a kernel.
//
// A part with far more settings than `pool` (a whole fusion plan: 4^producers) is explored with
// the model before anything is measured, as the paper's graph-level autotuner does: with
// `generations` > 0 the pool starts as the current setting, mutants of it (three quarters) and
// uniformly random settings (a quarter), and each generation breeds mutants and crossovers of
// the best-ranked quarter, ranks them together with the pool in one call (rankings compare only
// within a call) and keeps the `pool` best ranked. The k best of the last ranking are measured.
// The random quarter lets the model reach regions far from the start: mutants alone change a
// few positions per generation, and on a fusion plan the best region (fusing most producers) is
// where a random plan already lies, 50+ positions from the default plan.
//
// With `rounds` > 1 (0: until the budget runs out) the pass over the parts repeats from the best
// measured candidate, measuring only settings no earlier round measured: the model proposes, the
// measurements move the search, and the next round explores around where it now stands. A round
// with nothing new to measure ends the search.
//
// With `refine` 1 the rounds are followed by steepest-descent hill climbing by measurement from
// the best measured candidate (single-position changes, as greedy climbs) until a local optimum
// or the end of the budget: the model picks the start, measurements finish where it misjudges.
// With `refine` 2 the climb is first-improvement in the model's order: each step ranks every
// single-position change (one call per part, next to the part's current setting), measures them
// from the largest predicted gain down and moves on the first that measures better. Steepest
// descent must measure every neighbour before it moves (a fusion plan of 73 producers has 219),
// so under a budget of tens of plans it rarely moves at all.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

class ModelTopKSearch : public Strategy {
 public:
  ModelTopKSearch(int64_t k, int64_t pool, int64_t generations, int64_t rounds, int64_t refine,
                  bool rerank, int64_t cycles)
      : k_(k),
        pool_(pool),
        generations_(generations),
        rounds_(rounds),
        refine_(refine),
        rerank_(rerank),
        cycles_(cycles) {}
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
    std::set<Candidate> measured_candidates = {current};
    for (int64_t cycle = 0; cycles_ == 0 || cycle < cycles_; ++cycle) {
      const size_t cycle_start = measured_candidates.size();
      if (cycle > 0) {  // again from the best measured, with what the problem has learned since
        current = ctx.best();
        current_score = ctx.best_score();
      }
      for (int64_t round = 0; rounds_ == 0 || round < rounds_; ++round) {
        const size_t before = measured_candidates.size();
        const std::optional<bool> out_of_budget =
            Round(ctx, parts, current, current_score, measured_candidates);
        if (out_of_budget) return *out_of_budget;
        if (measured_candidates.size() == before) break;  // the model has nothing new to propose
      }
      if (refine_ == 1 && internal::HillClimb(ctx, current, current_score)) return true;
      if (refine_ == 2 &&
          ModelOrderedClimb(ctx, parts, current, current_score, measured_candidates)) {
        return true;
      }
      if (failed()) return false;
      if (measured_candidates.size() == cycle_start) break;  // nothing new this cycle
    }
    return false;
  }

 private:
  // One pass over the parts from `current`, which moves to the best measured candidate. A value
  // ends the search: true when the budget ran out, false on a model error (recorded with Fail).
  std::optional<bool> Round(SearchContext& ctx, const std::vector<std::vector<int64_t>>& parts,
                            Candidate& current, double& current_score,
                            std::set<Candidate>& measured_candidates) {
    for (size_t part = 0; part < parts.size(); ++part) {
      const std::vector<int64_t>& positions = parts[part];
      if (positions.empty()) continue;
      const Candidate now = Setting(current, positions);
      const SearchSpace part_space = PartSpace(ctx.space(), positions);
      const bool explore = generations_ > 0 && !Enumerable(part_space);
      std::vector<Candidate> settings =
          explore ? InitialPool(part_space, now, ctx.rng()) : Settings(part_space, now, ctx.rng());
      absl::StatusOr<std::vector<double>> ranks = Rank(ctx, part, settings);
      if (!ranks.ok()) {
        Fail(ranks.status());
        return false;
      }
      for (int64_t g = 0; explore && g < generations_; ++g) {
        absl::Status s = Breed(ctx, part, part_space, settings, *ranks);
        if (!s.ok()) {
          Fail(s);
          return false;
        }
      }
      int64_t measured = 0;
      Candidate best = current;
      double best_score = current_score;
      std::vector<bool> tried(settings.size(), false);
      for (;;) {
        bool evaluated = false;
        for (size_t i : BestFirst(*ranks)) {
          if (tried[i]) continue;
          // -infinity: the problem asks for it beyond the k best (Problem::RankSettings).
          const bool required = std::isinf((*ranks)[i]) && (*ranks)[i] < 0;
          if (!required && measured >= k_) break;
          tried[i] = true;
          if (settings[i] == now) continue;  // already measured: it is the current candidate
          Candidate c = WithSetting(current, positions, settings[i]);
          if (!measured_candidates.insert(c).second) continue;  // an earlier round measured it
          std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
          if (!e) return true;
          if (!required) ++measured;
          if (e->score < best_score) {
            best_score = e->score;
            best = std::move(c);
          }
          evaluated = true;
          if (rerank_ && !required) break;  // the problem learned from it: rank again
        }
        if (!rerank_ || !evaluated || measured >= k_) break;
        ranks = Rank(ctx, part, settings);
        if (!ranks.ok()) {
          Fail(ranks.status());
          return false;
        }
      }
      current = std::move(best);
      current_score = best_score;
    }
    return std::nullopt;
  }

  // refine 2. True when the budget ran out; false at a local optimum or on a model error.
  bool ModelOrderedClimb(SearchContext& ctx, const std::vector<std::vector<int64_t>>& parts,
                         Candidate current, double score, std::set<Candidate>& measured) {
    for (;;) {
      // (predicted gain, neighbour); a gain compares within a part's call and, for absolute
      // predictions such as a fusion plan's summed kernel times, across parts too.
      std::vector<std::pair<double, Candidate>> neighbours;
      for (size_t part = 0; part < parts.size(); ++part) {
        const std::vector<int64_t>& positions = parts[part];
        if (positions.empty()) continue;
        // The part's current setting first, then its single-position changes.
        std::vector<Candidate> settings = {Setting(current, positions)};
        for (Candidate& n : internal::Neighbours(PartSpace(ctx.space(), positions), settings[0])) {
          settings.push_back(std::move(n));
        }
        absl::StatusOr<std::vector<double>> ranks = Rank(ctx, part, settings);
        if (!ranks.ok()) {
          Fail(ranks.status());
          return false;
        }
        for (size_t s = 1; s < settings.size(); ++s) {
          const double r = (*ranks)[s];
          if (std::isinf(r) && r > 0) continue;  // the same as an earlier setting of the call
          neighbours.emplace_back(r - (*ranks)[0], WithSetting(current, positions, settings[s]));
        }
      }
      std::stable_sort(neighbours.begin(), neighbours.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      bool moved = false;
      for (auto& [gain, c] : neighbours) {
        if (!measured.insert(c).second) continue;
        std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
        if (!e) return true;
        if (e->score < score) {
          current = std::move(c);
          score = e->score;
          moved = true;
          break;
        }
      }
      if (!moved) return false;
    }
  }

  static Candidate Setting(const Candidate& c, const std::vector<int64_t>& positions) {
    Candidate s;
    for (int64_t p : positions) s.push_back(c[static_cast<size_t>(p)]);
    return s;
  }

  // `c` with the part at `positions` set to `setting` (the inverse of Setting).
  static Candidate WithSetting(Candidate c, const std::vector<int64_t>& positions,
                               const Candidate& setting) {
    for (size_t i = 0; i < positions.size(); ++i) c[static_cast<size_t>(positions[i])] = setting[i];
    return c;
  }

  // The search space of one part's settings: a choice per position of the part.
  static SearchSpace PartSpace(const SearchSpace& space, const std::vector<int64_t>& positions) {
    SearchSpace part;
    part.fixed_length = true;
    part.max_length = static_cast<int64_t>(positions.size());
    for (int64_t p : positions) part.choices.push_back(space.ChoicesAt(p));
    return part;
  }

  // Indices of `ranks` from the best (lowest) ranked; ties keep their order.
  static std::vector<size_t> BestFirst(const std::vector<double>& ranks) {
    std::vector<size_t> order(ranks.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ranks[a] < ranks[b]; });
    return order;
  }

  static absl::StatusOr<std::vector<double>> Rank(SearchContext& ctx, size_t part,
                                                  const std::vector<Candidate>& settings) {
    absl::StatusOr<std::vector<double>> ranks =
        ctx.problem().RankSettings(static_cast<int64_t>(part), settings);
    if (ranks.ok() && ranks->size() != settings.size()) {
      return absl::InternalError(absl::StrCat("the cost model ranked ", ranks->size(), " of ",
                                              settings.size(), " settings of part ", part));
    }
    return ranks;
  }

  // Whether the part's settings number at most pool_ (`space` is the part's own).
  bool Enumerable(const SearchSpace& space) const {
    double total = 1;
    for (int64_t p = 0; p < space.max_length; ++p) total *= space.ChoicesAt(p);
    return total <= static_cast<double>(pool_);
  }

  // Every setting of the part (mixed radix) when they number at most pool_, else the current one
  // and distinct random ones up to pool_.
  std::vector<Candidate> Settings(const SearchSpace& space, const Candidate& now,
                                  std::mt19937_64& rng) const {
    std::vector<Candidate> out;
    if (Enumerable(space)) {
      Candidate s(static_cast<size_t>(space.max_length), 0);
      for (;;) {
        out.push_back(s);
        size_t d = 0;
        while (d < s.size() && ++s[d] == space.ChoicesAt(static_cast<int64_t>(d))) s[d++] = 0;
        if (d == s.size()) break;
      }
      return out;
    }
    std::set<Candidate> seen = {now};
    out.push_back(now);
    for (int64_t tries = 0; static_cast<int64_t>(out.size()) < pool_ && tries < 20 * pool_;
         ++tries) {
      Candidate s = internal::RandomCandidate(space, space.max_length, rng);
      if (seen.insert(s).second) out.push_back(std::move(s));
    }
    return out;
  }

  // The exploration's start: the current setting, pool_ / 4 distinct uniformly random settings
  // (regions far from the start), then distinct mutants of the current one, each 1-3 edits away,
  // up to pool_.
  std::vector<Candidate> InitialPool(const SearchSpace& space, const Candidate& now,
                                     std::mt19937_64& rng) const {
    std::set<Candidate> seen = {now};
    std::vector<Candidate> out = {now};
    const int64_t random = pool_ / 4;
    for (int64_t tries = 0; static_cast<int64_t>(out.size()) < pool_ && tries < 20 * pool_;
         ++tries) {
      Candidate s = now;
      if (static_cast<int64_t>(out.size()) <= random) {
        s = internal::RandomCandidate(space, space.max_length, rng);
      } else {
        for (int64_t e = 1 + internal::Uniform(rng, 3); e > 0; --e) {
          s = internal::Mutate(space, s, rng);
        }
      }
      if (seen.insert(s).second) out.push_back(std::move(s));
    }
    return out;
  }

  // One generation: offspring of the best-ranked quarter, ranked with the pool in one call; the
  // pool_ best ranked stay, `ranks` from that call.
  absl::Status Breed(SearchContext& ctx, size_t part, const SearchSpace& space,
                     std::vector<Candidate>& settings, std::vector<double>& ranks) const {
    const std::vector<size_t> order = BestFirst(ranks);
    const size_t parents = std::max<size_t>(2, settings.size() / 4);
    std::set<Candidate> seen(settings.begin(), settings.end());
    std::vector<Candidate> all = settings;
    std::mt19937_64& rng = ctx.rng();
    auto parent = [&] {
      return settings[order[static_cast<size_t>(
          internal::Uniform(rng, static_cast<int64_t>(std::min(parents, order.size()))))]];
    };
    for (int64_t tries = 0;
         static_cast<int64_t>(all.size() - settings.size()) < pool_ && tries < 20 * pool_;
         ++tries) {
      Candidate child = internal::Uniform01(rng) < 0.5
                            ? internal::Crossover(space, parent(), parent(), rng)
                            : parent();
      child = internal::Mutate(space, child, rng);
      if (seen.insert(child).second) all.push_back(std::move(child));
    }
    absl::StatusOr<std::vector<double>> all_ranks = Rank(ctx, part, all);
    if (!all_ranks.ok()) return all_ranks.status();
    std::vector<size_t> keep = BestFirst(*all_ranks);
    keep.resize(std::min(keep.size(), static_cast<size_t>(pool_)));
    settings.clear();
    ranks.clear();
    for (size_t i : keep) {
      settings.push_back(std::move(all[i]));
      ranks.push_back((*all_ranks)[i]);
    }
    return absl::OkStatus();
  }

  int64_t k_, pool_, generations_, rounds_, refine_;
  bool rerank_;
  int64_t cycles_;
};

}  // namespace

StrategyParams FusionModelTopKParams() {
  return {{"k", 10}, {"pool", 256}, {"generations", 8}, {"rounds", 2}, {"refine", 2}};
}

absl::StatusOr<std::unique_ptr<Strategy>> CreateModelTopK(const StrategyParams& params) {
  absl::Status s = internal::CheckParams(
      params, kModelTopK, {"k", "pool", "generations", "rounds", "refine", "rerank", "cycles"});
  if (!s.ok()) return s;
  const double k = internal::Param(params, "k", 5);
  const double pool = internal::Param(params, "pool", 256);
  const double generations = internal::Param(params, "generations", 0);
  const double rounds = internal::Param(params, "rounds", 1);
  const double refine = internal::Param(params, "refine", 0);
  const double rerank = internal::Param(params, "rerank", 0);
  const double cycles = internal::Param(params, "cycles", 1);
  if (!(k >= 1 && k <= 1e6) || !(pool >= 1 && pool <= 1e6)) {
    return absl::InvalidArgumentError("model-topk: k and pool must be between 1 and 1000000");
  }
  if (!(generations >= 0 && generations <= 1e4)) {
    return absl::InvalidArgumentError("model-topk: generations must be between 0 and 10000");
  }
  if (!(rounds >= 0 && rounds <= 1e6)) {
    return absl::InvalidArgumentError(
        "model-topk: rounds must be between 0 (until the budget runs out) and 1000000");
  }
  if (refine != 0 && refine != 1 && refine != 2) {
    return absl::InvalidArgumentError(
        "model-topk: refine is 0 (none), 1 (steepest descent) or 2 (first improvement in the "
        "model's order)");
  }
  if (rerank != 0 && rerank != 1) {
    return absl::InvalidArgumentError(
        "model-topk: rerank is 0 (the k best of one ranking) or 1 (ranked again after each "
        "measurement)");
  }
  if (!(cycles >= 0 && cycles <= 1e6)) {
    return absl::InvalidArgumentError(
        "model-topk: cycles must be between 0 (until the budget runs out) and 1000000");
  }
  return std::make_unique<ModelTopKSearch>(
      static_cast<int64_t>(k), static_cast<int64_t>(pool), static_cast<int64_t>(generations),
      static_cast<int64_t>(rounds), static_cast<int64_t>(refine), rerank == 1,
      static_cast<int64_t>(cycles));
}

}  // namespace mltune::opt
