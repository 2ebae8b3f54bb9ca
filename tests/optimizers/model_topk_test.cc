// "model-topk": a cost model ranks each part's settings and only the k best ranked are measured.
#include "optimizers/core/model_topk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace mltune::opt {
namespace {

// Three independent parts (positions {0,1}, {2}, {3,4}); score = sum of |x_i - target_i|.
// The model predicts each part's cost from `guess` (a perfect model when guess == target).
class PartsProblem : public Problem {
 public:
  explicit PartsProblem(Candidate guess, bool with_model = true)
      : guess_(std::move(guess)), with_model_(with_model) {}
  std::string name() const override { return "parts"; }
  SearchSpace space() const override { return SearchSpace{{4, 5, 6, 3, 7}, 5, true}; }
  std::vector<Candidate> SeedCandidates() override { return {Candidate(5, 0)}; }
  std::vector<std::vector<int64_t>> Parts() const override { return {{0, 1}, {2}, {3, 4}}; }
  double Evaluate(const Candidate& c) override {
    evaluated.insert(c);
    ++evaluations;
    double s = 0;
    for (size_t i = 0; i < c.size(); ++i) s += std::abs(c[i] - kTarget[i]);
    return s;
  }
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t part, const std::vector<Candidate>& settings) override {
    if (!with_model_) return Problem::RankSettings(part, settings);
    ranked += static_cast<int64_t>(settings.size());
    std::vector<double> out;
    for (const Candidate& s : settings) {
      double d = 0;
      const std::vector<int64_t> positions = Parts()[static_cast<size_t>(part)];
      for (size_t i = 0; i < s.size(); ++i) {
        d += std::abs(s[i] - guess_[static_cast<size_t>(positions[i])]);
      }
      out.push_back(d);
    }
    return out;
  }

  static inline const Candidate kTarget = {3, 1, 5, 2, 4};
  std::set<Candidate> evaluated;
  int64_t evaluations = 0;
  int64_t ranked = 0;

 private:
  Candidate guess_;
  bool with_model_;
};

Result MustSearch(Problem& problem, const StrategyParams& params, int64_t steps = 1000) {
  absl::StatusOr<std::unique_ptr<Strategy>> s = CreateModelTopK(params);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Result> r = (*s)->Search(problem, Budget{steps, 0}, 1);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Result{};
}

TEST(ModelTopKTest, APerfectModelFindsTheOptimumMeasuringOnePerPart) {
  PartsProblem problem(PartsProblem::kTarget);
  const Result r = MustSearch(problem, {{"k", 1}});
  EXPECT_EQ(r.best, PartsProblem::kTarget);
  EXPECT_EQ(r.best_score, 0);
  // The seed, then one setting per part; every setting of each part was ranked (20 + 6 + 21).
  EXPECT_EQ(problem.evaluations, 1 + 3);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(problem.ranked, 20 + 6 + 21);
  EXPECT_FALSE(r.budget_exhausted);
}

TEST(ModelTopKTest, MeasuresKPerPartAndKeepsTheBestMeasured) {
  // A model that is off by one in part {3, 4}: the best setting is still among its top 5.
  PartsProblem problem({3, 1, 5, 2, 5});
  const Result r = MustSearch(problem, {{"k", 5}});
  EXPECT_EQ(r.best, PartsProblem::kTarget);
  EXPECT_EQ(problem.evaluations, 1 + 5 + 5 + 5);
  // With k = 1 the same model settles for its own (wrong) guess in that part.
  PartsProblem once({3, 1, 5, 2, 5});
  const Result r1 = MustSearch(once, {{"k", 1}});
  EXPECT_EQ(r1.best_score, 1);
}

TEST(ModelTopKTest, RoundsRepeatThePassMeasuringOnlyWhatNoRoundMeasured) {
  // The model is off by one in part {3, 4}: with k = 1 one round settles for its guess (2, 5).
  // A second round measures the next best ranked setting of every part: in part {3, 4} the
  // target (2, 4), the first of the guess's three neighbours.
  PartsProblem two({3, 1, 5, 2, 5});
  const Result r2 = MustSearch(two, {{"k", 1}, {"rounds", 2}});
  EXPECT_EQ(r2.best, PartsProblem::kTarget);
  EXPECT_EQ(two.evaluations, 1 + 3 + 3);
  // rounds 0: until the model has nothing new. Then every setting of every part has been
  // measured next to the final best's other parts, and no candidate twice.
  PartsProblem all({3, 1, 5, 2, 5});
  const Result r0 = MustSearch(all, {{"k", 1}, {"rounds", 0}});
  EXPECT_EQ(r0.best, PartsProblem::kTarget);
  EXPECT_EQ(static_cast<int64_t>(all.evaluated.size()), all.evaluations) << "measured twice";
  EXPECT_FALSE(r0.budget_exhausted);
  const SearchSpace space = all.space();
  for (const std::vector<int64_t>& part : all.Parts()) {
    const int64_t n =
        part.size() == 1 ? space.choices[part[0]] : space.choices[part[0]] * space.choices[part[1]];
    for (int64_t v = 0; v < n; ++v) {
      Candidate c = PartsProblem::kTarget;
      c[part[0]] = part.size() == 1 ? v : v % space.choices[part[0]];
      if (part.size() == 2) c[part[1]] = v / space.choices[part[0]];
      EXPECT_TRUE(all.evaluated.count(c)) << "never measured next to the best: " << v;
    }
  }
  // ... and within a budget, until it runs out.
  PartsProblem budgeted({3, 1, 5, 2, 5});
  const Result rb = MustSearch(budgeted, {{"k", 1}, {"rounds", 0}}, 12);
  EXPECT_EQ(budgeted.evaluations, 12);
  EXPECT_TRUE(rb.budget_exhausted);
}

TEST(ModelTopKTest, RefineClimbsByMeasurementFromTheModelsBest) {
  // The model's guess (2, 5) in part {3, 4} is one step from the target: one round settles for
  // it, and hill climbing from there measures the neighbours and finds (2, 4).
  PartsProblem refined({3, 1, 5, 2, 5});
  const Result r = MustSearch(refined, {{"k", 1}, {"refine", 1}});
  EXPECT_EQ(r.best, PartsProblem::kTarget);
  EXPECT_EQ(r.best_score, 0);
  EXPECT_FALSE(r.budget_exhausted);  // it stops at the local optimum
  EXPECT_GT(refined.evaluations, 1 + 3);
  EXPECT_EQ(CreateModelTopK({{"refine", 3}}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelTopKTest, ModelOrderedRefineMovesOnTheFirstImprovementTheModelPredicts) {
  // The model's guess is a step or two off in every part, so one round with k 1 stops there.
  // Steepest descent then measures every neighbour of each point it stands on. refine 2 measures
  // neighbours in the model's order (predicted least worse first) and moves on the first measured
  // gain: it reaches the target with fewer measurements, and measures no candidate twice.
  PartsProblem steepest({2, 1, 4, 1, 3});
  const Result rs = MustSearch(steepest, {{"k", 1}, {"refine", 1}});
  PartsProblem ordered({2, 1, 4, 1, 3});
  const Result ro = MustSearch(ordered, {{"k", 1}, {"refine", 2}});
  EXPECT_EQ(rs.best, PartsProblem::kTarget);
  EXPECT_EQ(ro.best, PartsProblem::kTarget);
  EXPECT_FALSE(ro.budget_exhausted);
  EXPECT_LT(ordered.evaluations, steepest.evaluations)
      << ordered.evaluations << " vs " << steepest.evaluations;
  EXPECT_EQ(static_cast<int64_t>(ordered.evaluated.size()), ordered.evaluations);
}

// Settings ranked -infinity are the problem's must-tries: measured besides the k best.
class MustTryProblem : public PartsProblem {
 public:
  using PartsProblem::PartsProblem;
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t part, const std::vector<Candidate>& settings) override {
    absl::StatusOr<std::vector<double>> r = PartsProblem::RankSettings(part, settings);
    if (!r.ok()) return r;
    // In part {3, 4}, the settings 5 or more away from the guess (2, 4) are must-tries: (0, 0),
    // (0, 1) and (1, 0).
    if (part == 2) {
      for (double& v : *r) {
        if (v >= 5) v = -std::numeric_limits<double>::infinity();
      }
    }
    return r;
  }
};

TEST(ModelTopKTest, SettingsRankedMinusInfinityAreMeasuredBesidesTheKBest) {
  MustTryProblem problem(PartsProblem::kTarget);
  const Result r = MustSearch(problem, {{"k", 2}});
  EXPECT_EQ(r.best, PartsProblem::kTarget);
  // The seed, 2 per part, and the must-tries (0, 1) and (1, 0): (0, 0) is the part's current
  // setting when it is ranked, measured already.
  EXPECT_EQ(problem.evaluations, 1 + 2 + 2 + 2 + 2);
  EXPECT_TRUE(problem.evaluated.count(Candidate{3, 1, 5, 0, 1}));
  EXPECT_TRUE(problem.evaluated.count(Candidate{3, 1, 5, 1, 0}));
  // Without the must-tries: the seed and 2 per part.
  PartsProblem plain(PartsProblem::kTarget);
  (void)MustSearch(plain, {{"k", 2}});
  EXPECT_EQ(plain.evaluations, 1 + 2 + 2 + 2);
}

TEST(ModelTopKTest, APoolSmallerThanThePartRanksARandomSubsetWithTheCurrentSetting) {
  PartsProblem problem(PartsProblem::kTarget);
  const Result r = MustSearch(problem, {{"k", 2}, {"pool", 4}});
  // Parts {0,1} (20 settings) and {3,4} (21) rank 4 each, part {2} (6) ranks 4 as well.
  EXPECT_EQ(problem.ranked, 4 + 4 + 4);
  EXPECT_LE(r.best_score, 10);  // never worse than the seed (score 10)
  EXPECT_EQ(problem.evaluations, 1 + 2 * 3);
}

TEST(ModelTopKTest, StepBudgetsAreRespected) {
  PartsProblem problem(PartsProblem::kTarget);
  const Result r = MustSearch(problem, {{"k", 5}}, 3);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(problem.evaluations, 3);
  EXPECT_TRUE(r.budget_exhausted);
}

TEST(ModelTopKTest, WithoutAModelItFailsBeforeMeasuringAnything) {
  PartsProblem problem(PartsProblem::kTarget, /*with_model=*/false);
  absl::StatusOr<Result> r = (*CreateModelTopK())->Search(problem, Budget{100, 0}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("no cost model"), std::string::npos) << r.status();
  EXPECT_EQ(problem.evaluations, 0);
}

// A model that learns from measurements (as the CPU fusion ranker does from measured kernel
// times): it ranks every setting with x0 = 3 best until one of them is measured, then knows they
// are all bad. Score: |x0 - 1| + |x1 - 2|, and 10 when x0 = 3.
class LearningProblem : public Problem {
 public:
  std::string name() const override { return "learning"; }
  SearchSpace space() const override { return SearchSpace{{4, 4}, 2, true}; }
  std::vector<Candidate> SeedCandidates() override { return {Candidate(2, 0)}; }
  double Evaluate(const Candidate& c) override {
    ++evaluations;
    if (c[0] == 3) learned = true;
    return Score(c);
  }
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t, const std::vector<Candidate>& settings) override {
    std::vector<double> out;
    for (const Candidate& c : settings) {
      out.push_back(c[0] == 3 && !learned ? -1 + 0.1 * static_cast<double>(std::abs(c[1] - 2))
                                          : Score(c));
    }
    return out;
  }
  static double Score(const Candidate& c) {
    return c[0] == 3 ? 10 : static_cast<double>(std::abs(c[0] - 1) + std::abs(c[1] - 2));
  }
  bool learned = false;
  int64_t evaluations = 0;
};

TEST(ModelTopKTest, RerankRanksAgainAfterEachMeasurement) {
  // The k best of one ranking: three settings with x0 = 3, all bad; the seed stays best.
  LearningProblem once;
  const Result r = MustSearch(once, {{"k", 3}});
  EXPECT_EQ(once.evaluations, 1 + 3);
  EXPECT_EQ(r.best_score, 3);
  // Ranked again after each: the first measurement teaches the model, the second is the target.
  LearningProblem again;
  const Result r2 = MustSearch(again, {{"k", 3}, {"rerank", 1}});
  EXPECT_EQ(again.evaluations, 1 + 3);
  EXPECT_EQ(r2.best, (Candidate{1, 2}));
  EXPECT_EQ(r2.best_score, 0);
}

TEST(ModelTopKTest, CyclesStartAgainFromTheBestWithWhatTheModelLearned) {
  // One cycle: the model's first pick (x0 = 3) is bad; nothing else is measured.
  LearningProblem one;
  const Result r1 = MustSearch(one, {{"k", 1}, {"cycles", 1}});
  EXPECT_EQ(one.evaluations, 1 + 1);
  EXPECT_EQ(r1.best_score, 3);
  // A second cycle ranks again with what that measurement taught: the target.
  LearningProblem two;
  const Result r2 = MustSearch(two, {{"k", 1}, {"cycles", 2}});
  EXPECT_EQ(two.evaluations, 1 + 2);
  EXPECT_EQ(r2.best, (Candidate{1, 2}));
  // cycles 0: until a cycle measures nothing new (here: every one of the 16 settings, once).
  LearningProblem all;
  const Result r0 = MustSearch(all, {{"k", 1}, {"cycles", 0}});
  EXPECT_EQ(r0.best_score, 0);
  EXPECT_EQ(all.evaluations, 16);
  EXPECT_FALSE(r0.budget_exhausted);
}

TEST(ModelTopKTest, RejectsBadParameters) {
  EXPECT_EQ(CreateModelTopK({{"k", 0}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateModelTopK({{"topk", 3}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateModelTopK({{"k", 10}, {"pool", 1000}}).ok());
  EXPECT_EQ(CreateModelTopK({{"rounds", -1}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateModelTopK({{"rounds", 0}}).ok());
  EXPECT_EQ(CreateModelTopK({{"generations", -1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateModelTopK({{"rerank", 2}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateModelTopK({{"cycles", -1}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateModelTopK(FusionModelTopKParams()).ok());
}

// One part of 40 positions with 4 choices each (4^40 settings, like a fusion plan's
// priorities): score = positions differing from a hidden target, which the model knows. Every
// ranking call must hold only distinct, valid settings of the whole part.
class OnePartProblem : public Problem {
 public:
  std::string name() const override { return "one-part"; }
  SearchSpace space() const override { return SearchSpace{{4}, 40, true}; }
  std::vector<Candidate> SeedCandidates() override { return {Candidate(40, 0)}; }
  double Evaluate(const Candidate& c) override {
    ++evaluations;
    return Distance(c);
  }
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t part, const std::vector<Candidate>& settings) override {
    EXPECT_EQ(part, 0);
    EXPECT_EQ(std::set<Candidate>(settings.begin(), settings.end()).size(), settings.size());
    ++calls;
    std::vector<double> out;
    for (const Candidate& c : settings) {
      EXPECT_EQ(c.size(), 40u);
      out.push_back(Distance(c));
    }
    return out;
  }
  static double Distance(const Candidate& c) {
    double d = 0;
    for (size_t i = 0; i < c.size(); ++i) d += c[i] != static_cast<Action>((i * 7) % 4);
    return d;
  }
  int64_t evaluations = 0;
  int64_t calls = 0;
};

TEST(ModelTopKTest, GenerationsExploreAPartTooLargeToEnumerateWithTheModel) {
  // The seed is 30 positions off. Random settings are about as far (each position matches with
  // probability 1/4); mutants of the seed are 1-3 positions better. Exploring with the model for
  // a few generations gets far closer, measuring no more than k.
  OnePartProblem random_pool;
  const Result plain = MustSearch(random_pool, {{"k", 3}, {"pool", 64}});
  OnePartProblem explored;
  const Result evolved = MustSearch(explored, {{"k", 3}, {"pool", 64}, {"generations", 12}});
  EXPECT_EQ(OnePartProblem::Distance(Candidate(40, 0)), 30);
  EXPECT_GE(plain.best_score, 20);
  EXPECT_LE(evolved.best_score, 12);
  EXPECT_EQ(explored.evaluations, 1 + 3);  // the seed, then the 3 best ranked
  EXPECT_EQ(explored.calls, 1 + 1 + 12);   // the model check, the first pool, each generation
}

// Like a fusion plan's priorities: any nonzero setting is good (priority 0 keeps a producer
// apart), so the optimum is 40 positions from the all-zero seed, where random settings lie.
class FarOptimumProblem : public OnePartProblem {
 public:
  double Evaluate(const Candidate& c) override {
    ++evaluations;
    return Zeros(c);
  }
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t, const std::vector<Candidate>& settings) override {
    std::vector<double> out;
    for (const Candidate& c : settings) out.push_back(Zeros(c));
    return out;
  }
  static double Zeros(const Candidate& c) {
    return static_cast<double>(std::count(c.begin(), c.end(), 0));
  }
};

TEST(ModelTopKTest, GenerationsReachAnOptimumFarFromTheSeed) {
  // Mutants change 1-3 positions and each generation a few more: from 40 zeros they would stop
  // near 20. The pool's random quarter starts near 10 and the generations finish the job.
  FarOptimumProblem far;
  const Result r = MustSearch(far, {{"k", 3}, {"pool", 64}, {"generations", 8}});
  EXPECT_LE(r.best_score, 3);
  EXPECT_EQ(far.evaluations, 1 + 3);
}

// A model that fails mid-search (a malformed graph, say) is an error, not a silent stop.
class FailingModelProblem : public PartsProblem {
 public:
  FailingModelProblem() : PartsProblem(PartsProblem::kTarget) {}
  absl::StatusOr<std::vector<double>> RankSettings(
      int64_t part, const std::vector<Candidate>& settings) override {
    if (!settings.empty() && part == 1) return absl::InvalidArgumentError("bad graph");
    return PartsProblem::RankSettings(part, settings);
  }
};

TEST(ModelTopKTest, AModelErrorMidSearchIsReturned) {
  FailingModelProblem problem;
  absl::StatusOr<Result> r = (*CreateModelTopK())->Search(problem, Budget{100, 0}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bad graph");
}

}  // namespace
}  // namespace mltune::opt
