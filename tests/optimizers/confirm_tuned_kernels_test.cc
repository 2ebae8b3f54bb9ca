// The tile search's winners measured again against the defaults: scripted measurements, so each
// rule (alternating order, fastest run, strictly faster, failures) is checked exactly.
#include "optimizers/tiling/confirm_tuned_kernels.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::opt::tiling {
namespace {

using backends::cpu::KernelConfig;

// Plays back, per (kernel, configuration), the listed times in order (a negative one fails), and
// records every call as "kernel:config".
class Script {
 public:
  void Set(int32_t kernel, const KernelConfig& config, std::vector<double> times) {
    times_[{kernel, config}] = std::move(times);
  }
  CpuTileProblem::MeasureFn Fn() {
    return [this](int32_t kernel, const KernelConfig& config) -> absl::StatusOr<double> {
      calls.push_back(absl::StrCat(kernel, ":", config.empty() ? -1 : config[0]));
      std::vector<double>& left = times_[{kernel, config}];
      if (left.empty()) return absl::InternalError("no scripted time left");
      const double t = left.front();
      left.erase(left.begin());
      if (t < 0) return absl::AbortedError("candidate crashed");
      return t;
    };
  }
  std::vector<std::string> calls;

 private:
  std::map<std::pair<int32_t, KernelConfig>, std::vector<double>> times_;
};

TEST(ConfirmTunedKernelsTest, OnlyChangedKernelsAreMeasuredInAlternatingOrder) {
  Script script;
  script.Set(1, {0}, {2.0, 2.0, 2.0});
  script.Set(1, {1}, {1.0, 1.0, 1.0});
  const std::vector<KernelConfirmation> c =
      ConfirmTunedKernels({{0}, {0}, {0}}, {{0}, {1}, {0}}, script.Fn(), {.rounds = 3});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kernel, 1);
  EXPECT_TRUE(c[0].kept);
  // Default first, then the tuned one twice, the default twice, ...: drift weighs on both alike.
  EXPECT_EQ(script.calls, (std::vector<std::string>{"1:0", "1:1", "1:1", "1:0", "1:0", "1:1"}));
}

TEST(ConfirmTunedKernelsTest, AWinnerThatReadLowOnceGoesBackToTheDefault) {
  Script script;
  // The search saw kernel 0's tuned configuration at a lucky low; measured again it is slower.
  script.Set(0, {0}, {1.00, 1.02});
  script.Set(0, {3}, {1.10, 1.05});
  // Kernel 1's winner is faster on every run.
  script.Set(1, {0}, {2.0, 2.1});
  script.Set(1, {2}, {1.5, 1.4});
  const std::vector<KernelConfirmation> c =
      ConfirmTunedKernels({{0}, {0}}, {{3}, {2}}, script.Fn());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_FALSE(c[0].kept);
  EXPECT_DOUBLE_EQ(c[0].default_seconds, 1.00);
  EXPECT_DOUBLE_EQ(c[0].tuned_seconds, 1.05);
  EXPECT_TRUE(c[1].kept);
  EXPECT_DOUBLE_EQ(c[1].default_seconds, 2.0);
  EXPECT_DOUBLE_EQ(c[1].tuned_seconds, 1.4);
}

TEST(ConfirmTunedKernelsTest, TheFastestRunOfEachDecidesAndATieKeepsTheDefault) {
  Script script;
  // A co-runner slowed the tuned configuration's first run: its fastest still wins.
  script.Set(0, {0}, {1.0, 1.0});
  script.Set(0, {1}, {3.0, 0.9});
  // Equal fastest runs: nothing is gained by leaving the default.
  script.Set(1, {0}, {1.0, 1.2});
  script.Set(1, {1}, {1.1, 1.0});
  const std::vector<KernelConfirmation> c =
      ConfirmTunedKernels({{0}, {0}}, {{1}, {1}}, script.Fn());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c[0].kept);
  EXPECT_DOUBLE_EQ(c[0].tuned_seconds, 0.9);
  EXPECT_FALSE(c[1].kept);
}

TEST(ConfirmTunedKernelsTest, FailuresDropTheTunedConfigurationNotTheOneThatRan) {
  Script script;
  // The tuned configuration crashes when run again: back to the default.
  script.Set(0, {0}, {1.0, 1.0});
  script.Set(0, {1}, {-1, -1});
  // The default fails but the tuned one runs: the tuned one stays.
  script.Set(1, {0}, {-1, -1});
  script.Set(1, {1}, {5.0, 5.0});
  const std::vector<KernelConfirmation> c =
      ConfirmTunedKernels({{0}, {0}}, {{1}, {1}}, script.Fn());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_FALSE(c[0].kept);
  EXPECT_TRUE(std::isinf(c[0].tuned_seconds));
  EXPECT_TRUE(c[1].kept);
  EXPECT_TRUE(std::isinf(c[1].default_seconds));
  EXPECT_DOUBLE_EQ(c[1].tuned_seconds, 5.0);
}

TEST(ConfirmTunedKernelsTest, ZeroRoundsMeasuresNothingAndKeepsTheWinners) {
  Script script;
  const std::vector<KernelConfirmation> c =
      ConfirmTunedKernels({{0}, {0}}, {{1}, {0}}, script.Fn(), {.rounds = 0});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].kept);
  EXPECT_TRUE(script.calls.empty());
}

// Three kernels: a row reduction, a transpose and a GEMM, each with tunable parameters.
constexpr char kThreeKernels[] = R"(HloModule three
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p0 = f32[64,96] parameter(0)
  p1 = f32[96,64] parameter(1)
  z = f32[] constant(0)
  r = f32[64] reduce(p0, z), dimensions={1}, to_apply=add
  t = f32[64,96] transpose(p1), dimensions={1,0}
  d = f32[64,64] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT o = (f32[64], f32[64,96], f32[64,64]) tuple(r, t, d)
})";

// On a real lowering with scripted times: the search's winner for kernel 0 reads low once, kernel
// 1's is slower than its default in the search's own measurements (it rode along in a candidate
// that won on the sum), kernel 2's is faster every time.
TEST(ConfirmWinnersTest, KeepsOnlyWinnersFasterInTheSearchAndWhenMeasuredAgain) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kThreeKernels);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<backends::cpu::LoweredModule> lowered = backends::cpu::Lower(**m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->kernels.size(), 3u);
  Script search, fresh;
  CpuTileProblem problem(*lowered, search.Fn());
  const Candidate defaults = problem.DefaultCandidate();
  // A candidate whose first position in each kernel moves to that parameter's second choice.
  Candidate best = defaults;
  std::vector<KernelConfig> configs = problem.Decode(defaults);
  std::vector<bool> moved(3, false);
  for (int64_t i = 0; i < static_cast<int64_t>(best.size()); ++i) {
    Candidate c = defaults;
    c[static_cast<size_t>(i)] = 1;
    const std::vector<KernelConfig> d = problem.Decode(c);
    for (size_t k = 0; k < 3; ++k) {
      if (d[k] != configs[k] && !moved[k]) {
        best[static_cast<size_t>(i)] = 1;
        moved[k] = true;
      }
    }
  }
  ASSERT_EQ(moved, std::vector<bool>(3, true));
  const std::vector<KernelConfig> tuned = problem.Decode(best);
  search.Set(0, configs[0], {1.0});
  search.Set(0, tuned[0], {0.5});
  search.Set(1, configs[1], {1.0});
  search.Set(1, tuned[1], {1.1});
  search.Set(2, configs[2], {3.0});
  search.Set(2, tuned[2], {2.0});
  ASSERT_LT(problem.Evaluate(best), problem.Evaluate(defaults));
  fresh.Set(0, configs[0], {1.0, 1.0});
  fresh.Set(0, tuned[0], {1.2, 1.1});
  fresh.Set(2, configs[2], {3.0, 3.1});
  fresh.Set(2, tuned[2], {2.1, 2.0});

  const ConfirmedWinners w = ConfirmWinners(problem, best, fresh.Fn());
  EXPECT_EQ(w.reverted, (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(w.checks.size(), 2u);  // kernel 1 needed no second look
  EXPECT_EQ(w.checks[0].kernel, 0);
  EXPECT_FALSE(w.checks[0].kept);
  EXPECT_EQ(w.checks[1].kernel, 2);
  EXPECT_TRUE(w.checks[1].kept);
  for (const std::string& call : fresh.calls) EXPECT_NE(call.substr(0, 2), "1:") << call;
  const std::vector<KernelConfig> kept = problem.Decode(w.best);
  EXPECT_EQ(kept[0], configs[0]);
  EXPECT_EQ(kept[1], configs[1]);
  EXPECT_EQ(kept[2], tuned[2]);
  EXPECT_DOUBLE_EQ(problem.Evaluate(w.best), 1.0 + 1.0 + 2.0);
}

}  // namespace
}  // namespace mltune::opt::tiling
