// Every strategy of the registry on synthetic problems with a known optimum: a sequence problem
// (with states, a no-op action and keys) and a configuration problem (whole evaluations only).
// Also budgets (steps and seconds), monotone traces, seeded determinism, prefix reuse and the
// registry's errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "optimizers/core/search.h"

namespace mltune::opt {
namespace {

// Actions 0..3 build a sequence; action 4 never changes anything. The score of a sequence is its
// distance to kTarget: one per wrong position, per missing position and per extra position, so
// the optimum is exactly kTarget with score 0, and each right action lowers the score by one.
const Candidate kTarget = {2, 0, 3, 1};
constexpr int32_t kNoOp = 4;

double Distance(const Candidate& seq) {
  double d = 0;
  for (size_t i = 0; i < std::max(seq.size(), kTarget.size()); ++i) {
    if (i >= seq.size() || i >= kTarget.size() || seq[i] != kTarget[i]) ++d;
  }
  return d;
}

class TargetState : public State {
 public:
  TargetState(Candidate seq, int64_t delay_us)
      : State(Distance(seq)), seq_(std::move(seq)), delay_us_(delay_us) {}
  std::string Key() const override {
    std::string k;
    for (Action a : seq_) k += static_cast<char>('0' + a);
    return "s" + k;
  }

 protected:
  std::unique_ptr<State> DoFork() const override {
    auto copy = std::make_unique<TargetState>(seq_, delay_us_);
    copy->steps_applied = steps_applied;
    return copy;
  }
  bool DoStep(Action a, double* score) override {
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    ++*steps_applied;
    if (a == kNoOp) return false;
    seq_.push_back(a);
    *score = Distance(seq_);
    return true;
  }

 public:
  int64_t* steps_applied = nullptr;

 private:
  Candidate seq_;
  int64_t delay_us_;
};

class TargetProblem : public Problem {
 public:
  explicit TargetProblem(int64_t delay_us = 0) : delay_us_(delay_us) {}
  std::string name() const override { return "target"; }
  SearchSpace space() const override { return SearchSpace{{5}, 6, false}; }
  std::unique_ptr<State> NewState() override {
    auto s = std::make_unique<TargetState>(Candidate{}, delay_us_);
    s->steps_applied = &applied;
    return s;
  }
  int64_t applied = 0;

 private:
  int64_t delay_us_;
};

// TargetProblem with seed candidates.
class SeededTargetProblem : public TargetProblem {
 public:
  explicit SeededTargetProblem(std::vector<Candidate> seeds) : seeds_(std::move(seeds)) {}
  std::vector<Candidate> SeedCandidates() override { return seeds_; }

 private:
  std::vector<Candidate> seeds_;
};

// Five positions with 3..7 choices; score = sum of |x_i - target_i|, optimum 0 at kConfig.
const Candidate kConfig = {1, 3, 0, 4, 6};

class ConfigProblem : public Problem {
 public:
  std::string name() const override { return "config"; }
  SearchSpace space() const override { return SearchSpace{{3, 4, 5, 6, 7}, 5, true}; }
  double Evaluate(const Candidate& c) override {
    ++evaluations;
    double s = 0;
    for (size_t i = 0; i < c.size(); ++i) s += std::abs(c[i] - kConfig[i]);
    return s;
  }
  int64_t evaluations = 0;
};

std::vector<std::string> AllStrategies() { return StrategyRegistry::Global().Names(); }

Result MustSearch(const std::string& strategy, Problem& problem, Budget budget, uint64_t seed,
                  const StrategyParams& params = {}) {
  absl::StatusOr<std::unique_ptr<Strategy>> s = StrategyRegistry::Global().Create(strategy, params);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Result> r = (*s)->Search(problem, budget, seed);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Result{};
}

void ExpectValidTrace(const Result& r, const Budget& budget) {
  if (budget.max_steps > 0) {
    EXPECT_LE(r.steps, budget.max_steps) << r.strategy;
  }
  ASSERT_EQ(static_cast<int64_t>(r.trace.size()), r.steps) << r.strategy;
  for (size_t i = 0; i < r.trace.size(); ++i) {
    EXPECT_EQ(r.trace[i].step, static_cast<int64_t>(i + 1)) << r.strategy;
    if (i > 0) {
      EXPECT_LE(r.trace[i].best_score, r.trace[i - 1].best_score) << r.strategy << " at " << i;
      EXPECT_GE(r.trace[i].seconds, r.trace[i - 1].seconds) << r.strategy;
    }
  }
  if (!r.trace.empty()) {
    EXPECT_EQ(r.trace.back().best_score, r.best_score) << r.strategy;
  }
}

TEST(StrategyRegistryTest, ListsTheFiveStrategies) {
  EXPECT_EQ(AllStrategies(),
            (std::vector<std::string>{"annealing", "beam", "evolutionary", "greedy", "random"}));
  for (const std::string& name : AllStrategies()) {
    EXPECT_FALSE(StrategyRegistry::Global().Description(name).empty()) << name;
  }
}

TEST(StrategyRegistryTest, RejectsUnknownNamesAndParameters) {
  EXPECT_EQ(StrategyRegistry::Global().Create("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StrategyRegistry::Global().Create("beam", {{"widht", 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StrategyRegistry::Global().Create("beam", {{"width", -1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StrategyRegistry::Global().Create("beam", {{"width", 8}}).ok());
  EXPECT_TRUE(StrategyRegistry::Global().Create("evolutionary", {{"population", 4}}).ok());
}

TEST(StrategyTest, RejectsABudgetWithoutLimits) {
  TargetProblem problem;
  auto s = *StrategyRegistry::Global().Create("random");
  EXPECT_EQ(s->Search(problem, Budget{0, 0}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(StrategyTest, EveryStrategyFindsTheTargetSequence) {
  for (const std::string& name : AllStrategies()) {
    for (uint64_t seed : {1, 2, 3}) {
      TargetProblem problem;
      const Budget budget{20000, 0};
      const Result r = MustSearch(name, problem, budget, seed);
      EXPECT_EQ(r.initial_score, 4) << name;
      EXPECT_EQ(r.best_score, 0) << name << " seed " << seed;
      EXPECT_EQ(r.best, kTarget) << name << " seed " << seed;
      ExpectValidTrace(r, budget);
      // Steps charged are steps applied: prefix reuse forks, it never steps for free.
      EXPECT_EQ(problem.applied, r.steps) << name;
    }
  }
}

TEST(StrategyTest, GreedyAndBeamFollowTheGradientCheaply) {
  for (const std::string name : {"greedy", "beam"}) {
    TargetProblem problem;
    const Result r = MustSearch(name, problem, Budget{1000, 0}, 7);
    EXPECT_EQ(r.best, kTarget) << name;
    // Greedy: 5 actions per level for 4 levels to reach the target, then it stops when nothing
    // is better; so well under the budget.
    EXPECT_LT(r.steps, 1000) << name;
    EXPECT_FALSE(r.budget_exhausted) << name;
  }
}

TEST(StrategyTest, EveryStrategyFindsTheBestConfiguration) {
  for (const std::string& name : AllStrategies()) {
    for (uint64_t seed : {1, 2}) {
      ConfigProblem problem;
      const Budget budget{30000, 0};
      const Result r = MustSearch(name, problem, budget, seed);
      EXPECT_EQ(r.best_score, 0) << name << " seed " << seed;
      EXPECT_EQ(r.best, kConfig) << name << " seed " << seed;
      EXPECT_TRUE(std::isinf(r.initial_score)) << name;
      ExpectValidTrace(r, budget);
      EXPECT_EQ(problem.evaluations, r.steps) << name;
    }
  }
}

TEST(StrategyTest, NonDefaultParametersWork) {
  const std::vector<std::pair<std::string, StrategyParams>> cases = {
      {"beam", {{"width", 1}}},
      {"beam", {{"width", 16}}},
      {"annealing", {{"init_length", 0}}},
      {"annealing", {{"t_start", 0.5}, {"t_end", 0.5}}},
      {"evolutionary", {{"population", 2}, {"tournament", 1}}},
      {"evolutionary", {{"crossover_rate", 0}, {"init_length", 1}}},
  };
  for (const auto& [name, params] : cases) {
    TargetProblem problem;
    const Budget budget{20000, 0};
    const Result r = MustSearch(name, problem, budget, 4, params);
    EXPECT_EQ(r.best, kTarget) << name << " " << ::testing::PrintToString(params);
    ExpectValidTrace(r, budget);
  }
}

TEST(StrategyTest, StepBudgetsAreRespected) {
  for (const std::string& name : AllStrategies()) {
    for (int64_t steps : {1, 7, 37, 100}) {
      TargetProblem sequence;
      const Result a = MustSearch(name, sequence, Budget{steps, 0}, 3);
      ExpectValidTrace(a, Budget{steps, 0});
      ConfigProblem config;
      const Result b = MustSearch(name, config, Budget{steps, 0}, 3);
      ExpectValidTrace(b, Budget{steps, 0});
      EXPECT_LE(config.evaluations, steps) << name;
    }
  }
}

TEST(StrategyTest, TimeBudgetsAreRespected) {
  for (const std::string& name : AllStrategies()) {
    TargetProblem problem(/*delay_us=*/2000);  // 2 ms per step
    const Budget budget{0, 0.05};
    const Result r = MustSearch(name, problem, budget, 5);
    ExpectValidTrace(r, budget);
    // Checked before each step: at most one step over, plus scheduling slack.
    EXPECT_LT(r.seconds, 0.05 + 0.05) << name;
    EXPECT_GT(r.steps, 0) << name;
  }
}

TEST(StrategyTest, SameSeedSameSearch) {
  for (const std::string& name : AllStrategies()) {
    TargetProblem p1, p2;
    const Result a = MustSearch(name, p1, Budget{300, 0}, 42);
    const Result b = MustSearch(name, p2, Budget{300, 0}, 42);
    EXPECT_EQ(a.best, b.best) << name;
    EXPECT_EQ(a.best_score, b.best_score) << name;
    EXPECT_EQ(a.steps, b.steps) << name;
    ASSERT_EQ(a.trace.size(), b.trace.size()) << name;
    for (size_t i = 0; i < a.trace.size(); ++i) {
      EXPECT_EQ(a.trace[i].best_score, b.trace[i].best_score) << name;
    }
    ConfigProblem c1, c2;
    EXPECT_EQ(MustSearch(name, c1, Budget{300, 0}, 9).best,
              MustSearch(name, c2, Budget{300, 0}, 9).best)
        << name;
  }
}

// A strategy that only evaluates given candidates, to observe the context's accounting.
class Scripted : public Strategy {
 public:
  explicit Scripted(std::vector<Candidate> script) : script_(std::move(script)) {}
  std::string_view name() const override { return "scripted"; }
  std::vector<SearchContext::Evaluation> evaluations;

 protected:
  bool Run(SearchContext& ctx) override {
    for (const Candidate& c : script_) {
      std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
      if (!e) return true;
      evaluations.push_back(*e);
    }
    return false;
  }

 private:
  std::vector<Candidate> script_;
};

TEST(StrategyTest, SeedsAreEvaluatedFirstAndBoundTheResult) {
  for (const std::string& name : AllStrategies()) {
    SCOPED_TRACE(name);
    // {2, 0, 3} is one action short of the target; with 4 steps, the seed's 3 are charged first.
    SeededTargetProblem problem({{2, 0, 3}, {1, 1}});
    const Result r = MustSearch(name, problem, Budget{4, 0}, 7);
    ASSERT_GE(r.trace.size(), 3u);
    EXPECT_EQ(r.trace[2].best_score, 1);  // after the first seed
    EXPECT_LE(r.best_score, 1);
  }
}

TEST(StrategyTest, ABudgetSmallerThanTheSeedsEndsTheSearch) {
  SeededTargetProblem problem({{2, 0, 3}});
  const Result r = MustSearch("random", problem, Budget{2, 0}, 1);
  // An evaluation the budget cannot cover is refused before any step is charged.
  EXPECT_EQ(r.steps, 0);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.best_score, r.initial_score);
}

TEST(StrategyTest, AnnealingAndEvolutionaryStartFromTheSeed) {
  for (const char* name : {"annealing", "evolutionary"}) {
    SCOPED_TRACE(name);
    SeededTargetProblem problem({{2, 0, 3}});
    const Result r = MustSearch(name, problem, Budget{300, 0}, 3);
    EXPECT_EQ(r.best_score, 0);
    EXPECT_EQ(r.best, kTarget);
  }
}

TEST(SearchContextTest, EvaluationsResumeFromCachedPrefixes) {
  TargetProblem problem;
  Scripted s({{2, 0, 1}, {2, 0, 3}, {2, 4, 0, 3}, {2, 0, 3, 1}, {2, 0, 3, 1}, {1}});
  absl::StatusOr<Result> r = s.Search(problem, Budget{100, 0}, 1);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(s.evaluations.size(), 6u);
  EXPECT_EQ(s.evaluations[0].steps, 3);  // fresh
  EXPECT_EQ(s.evaluations[1].steps, 1);  // resumes after {2, 0}
  EXPECT_EQ(s.evaluations[2].steps, 3);  // {2, 4} is new (a no-op step, charged)...
  EXPECT_EQ(s.evaluations[2].effective, (Candidate{2, 0, 3}));  // ...and dropped
  EXPECT_EQ(s.evaluations[3].steps, 1);                         // resumes after {2, 0, 3}
  EXPECT_EQ(s.evaluations[4].steps, 0);                         // fully cached
  EXPECT_EQ(s.evaluations[5].steps, 1);
  EXPECT_EQ(s.evaluations[3].score, 0);
  EXPECT_EQ(s.evaluations[0].best_prefix_score, 2);  // {2, 0}
  EXPECT_EQ(s.evaluations[0].best_prefix_length, 2);
  EXPECT_EQ(r->steps, 9);
  EXPECT_EQ(problem.applied, 9);
  EXPECT_EQ(r->best, kTarget);
  EXPECT_EQ(r->evaluations, 6);
}

TEST(SearchContextTest, EvaluationsBeyondTheBudgetAreRefused) {
  TargetProblem problem;
  Scripted s({{2, 0}, {2, 0, 3, 1, 0}});
  absl::StatusOr<Result> r = s.Search(problem, Budget{4, 0}, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(s.evaluations.size(), 1u);
  EXPECT_EQ(r->steps, 2);  // the refused evaluation charged nothing
  EXPECT_TRUE(r->budget_exhausted);
}

}  // namespace
}  // namespace mltune::opt
