// The evaluation metrics of the learned cost model on hand-computed cases.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "costmodels/learned/learned_model.h"
#include "gtest/gtest.h"

namespace mltune::costmodels::learned {
namespace {

TEST(LearnedKendallTau, PerfectReversedAndConstant) {
  EXPECT_DOUBLE_EQ(KendallTau(std::vector<double>{1, 2, 3, 4}, std::vector<double>{10, 20, 30, 40}),
                   1.0);
  EXPECT_DOUBLE_EQ(KendallTau(std::vector<double>{1, 2, 3, 4}, std::vector<double>{4, 3, 2, 1}),
                   -1.0);
  EXPECT_DOUBLE_EQ(KendallTau(std::vector<double>{1, 2, 3}, std::vector<double>{5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(KendallTau(std::vector<double>{}, std::vector<double>{}), 0.0);
}

TEST(LearnedKendallTau, TauBWithTies) {
  // a = {1, 2, 2}, b = {1, 2, 3}: pairs (0,1) and (0,2) concordant, (1,2) tied in a.
  // tau-b = (2 - 0) / sqrt((3 - 1) * (3 - 0)).
  EXPECT_NEAR(KendallTau(std::vector<double>{1, 2, 2}, std::vector<double>{1, 2, 3}),
              2.0 / std::sqrt(6.0), 1e-12);
  // One concordant, one discordant, one tie in b: (1 - 1) / ... = 0.
  EXPECT_DOUBLE_EQ(KendallTau(std::vector<double>{1, 2, 3}, std::vector<double>{1, 3, 1}), 0.0);
}

TEST(LearnedEvaluateRanking, ApePerGroupMeanMedianAndSingletonsSkipped) {
  // Group 7: truth {1, 2, 4}, the prediction picks the 2 s sample: APE 1.
  // Group 8: the prediction picks the fastest: APE 0, order perfect.
  // Group 9: one sample, not counted.
  const std::vector<int64_t> group = {7, 7, 7, 8, 8, 9};
  const std::vector<double> truth = {1, 2, 4, 3, 5, 1};
  const std::vector<double> predicted = {0.5, 0.1, 0.9, -2, 1, 100};
  RankMetrics m = EvaluateRanking(group, truth, predicted);
  EXPECT_EQ(m.groups, 2);
  EXPECT_DOUBLE_EQ(m.ape_mean, 0.5);
  EXPECT_DOUBLE_EQ(m.ape_median, 0.5);
  // Group 7: pairs (0,1) discordant, (0,2) concordant, (1,2) concordant: tau 1/3; group 8: 1.
  EXPECT_NEAR(m.kendall_tau, (1.0 / 3 + 1.0) / 2, 1e-12);
}

TEST(LearnedEvaluateRanking, MedianOfThreeAndTiesGoToTheFirstSample) {
  // A constant prediction picks each group's first sample.
  const std::vector<int64_t> group = {1, 1, 2, 2, 3, 3};
  const std::vector<double> truth = {2, 1, 1, 2, 5, 1};
  const std::vector<double> predicted(6, 0.0);
  RankMetrics m = EvaluateRanking(group, truth, predicted);
  EXPECT_EQ(m.groups, 3);
  EXPECT_DOUBLE_EQ(m.ape_mean, (1.0 + 0.0 + 4.0) / 3);
  EXPECT_DOUBLE_EQ(m.ape_median, 1.0);
  EXPECT_DOUBLE_EQ(m.kendall_tau, 0.0);
}

TEST(LearnedEvaluateRanking, TopFiveApeTakesTheBestOfTheFiveBestRanked) {
  // Seven configurations, truth 1..7 s; the model ranks the true best sixth: its top-1 pick is
  // the 3 s one (APE 2), the best of its top 5 the 2 s one (APE 1). A second group whose best is
  // ranked first: 0 either way.
  const std::vector<int64_t> group = {1, 1, 1, 1, 1, 1, 1, 2, 2};
  const std::vector<double> truth = {1, 2, 3, 4, 5, 6, 7, 1, 2};
  const std::vector<double> predicted = {6, 5, 0, 1, 2, 3, 7, 0, 1};
  RankMetrics m = EvaluateRanking(group, truth, predicted);
  EXPECT_DOUBLE_EQ(m.ape_mean, (2.0 + 0.0) / 2);
  EXPECT_DOUBLE_EQ(m.ape_top5_mean, (1.0 + 0.0) / 2);
}

TEST(LearnedEvaluateRanking, ProgramApeWeighsEachPickByWhatItCostsTheProgram) {
  // Program 0: kernel 1 (best 10 s, picked 12 s) and kernel 2 (best 1000 s, picked): it loses
  // 2 s of 1010, 0.198%, though kernel 1's own APE is 20%. Program 1: kernel 3 (best 1 s, picked
  // 3 s) loses 200%. Kernel 4, one sample, is not counted. Without `program` nothing per program.
  const std::vector<int64_t> group = {1, 1, 2, 2, 3, 3, 4};
  const std::vector<double> truth = {12, 10, 1000, 1500, 3, 1, 5};
  const std::vector<double> predicted = {0, 1, 0, 1, 0, 1, 0};
  const std::vector<int64_t> program = {0, 0, 0, 0, 1, 1, 1};
  RankMetrics m = EvaluateRanking(group, truth, predicted, program);
  EXPECT_EQ(m.groups, 3);
  EXPECT_NEAR(m.ape_mean, (0.2 + 0 + 2) / 3, 1e-12);
  EXPECT_EQ(m.programs, 2);
  EXPECT_NEAR(m.program_ape_mean, (2.0 / 1010 + 2.0) / 2, 1e-12);
  EXPECT_NEAR(m.program_ape_median, (2.0 / 1010 + 2.0) / 2, 1e-12);
  RankMetrics without = EvaluateRanking(group, truth, predicted);
  EXPECT_EQ(without.programs, 0);
  EXPECT_DOUBLE_EQ(without.program_ape_mean, 0.0);
}

TEST(LearnedGuardDefaultPick, LeavesTheDefaultOnlyForAClearPredictedGain) {
  // Three kernels of three configurations, the default second in each. The relative head ranks
  // the third first everywhere; the absolute head predicts it 50% faster than the default in
  // group 1, 5% faster in group 2 and slower in group 3.
  const std::vector<int64_t> group = {1, 1, 1, 2, 2, 2, 3, 3, 3};
  const std::vector<double> score = {0.5, 0.2, -1, 0.5, 0.2, -1, 0.5, 0.2, -1};
  const double l = std::log(1e-6);
  const std::vector<double> log_s = {l, l + std::log(1.5), l, l, l + std::log(1.05), l,
                                     l, l - 0.1,           l};
  const std::vector<bool> is_default = {false, true, false, false, true, false, false, true, false};
  const std::vector<double> g = GuardDefaultPick(group, score, log_s, is_default, 0.1);
  ASSERT_EQ(g.size(), score.size());
  EXPECT_EQ(g[2], -1);  // 1.5x >= 1.1x: the pick stands, nothing moves
  EXPECT_EQ(g[1], 0.2);
  EXPECT_LT(g[4], g[5]);  // 1.05x < 1.1x: the default goes first
  EXPECT_LT(g[7], g[8]);  // predicted slower: likewise
  EXPECT_EQ(g[3], 0.5);   // the others keep their scores
  EXPECT_EQ(g[5], -1);
  // Measured: the default is the slowest in group 1, the fastest in groups 2 and 3.
  const std::vector<double> truth = {1, 3, 1, 2, 1, 4, 2, 1, 4};
  EXPECT_DOUBLE_EQ(EvaluateRanking(group, truth, g).ape_mean, 0.0);
  EXPECT_DOUBLE_EQ(EvaluateRanking(group, truth, score).ape_mean, (0 + 3 + 3) / 3.0);
  // Margin 0 trusts any predicted gain; without a default a group is left alone.
  const std::vector<double> g0 = GuardDefaultPick(group, score, log_s, is_default, 0);
  EXPECT_EQ(g0[4], 0.2);
  EXPECT_LT(g0[7], g0[8]);
  const std::vector<double> none =
      GuardDefaultPick(group, score, log_s, std::vector<bool>(9, false), 0.1);
  EXPECT_EQ(none, score);
}

TEST(LearnedProgramShareWeights, EachKernelByItsBestTimesShareOfItsProgram) {
  // Program 0: kernel 10 (best 1 ms of two configurations) and kernel 11 (3 ms): shares 1/4 and
  // 3/4, times two kernels. Program 1: one kernel, weight 1 whatever its time.
  const std::vector<int64_t> group = {10, 10, 11, 11, 12};
  const std::vector<double> seconds = {2e-3, 1e-3, 3e-3, 5e-3, 2e-9};
  const std::vector<int64_t> program = {0, 0, 0, 0, 1};
  const std::vector<double> w = ProgramShareWeights(group, seconds, program);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_DOUBLE_EQ(w[0], 0.5);
  EXPECT_DOUBLE_EQ(w[1], 0.5);
  EXPECT_DOUBLE_EQ(w[2], 1.5);
  EXPECT_DOUBLE_EQ(w[3], 1.5);
  EXPECT_DOUBLE_EQ(w[4], 1.0);
  // A 2 ns kernel beside a 20 ms one hardly counts.
  const std::vector<double> tiny = ProgramShareWeights(
      std::vector<int64_t>{1, 2}, std::vector<double>{2e-9, 2e-2}, std::vector<int64_t>{7, 7});
  EXPECT_LT(tiny[0], 1e-6);
  EXPECT_NEAR(tiny[1], 2.0, 1e-6);
}

TEST(LearnedMape, FractionOfTheTruth) {
  EXPECT_DOUBLE_EQ(Mape(std::vector<double>{1, 2, 4}, std::vector<double>{1.5, 1, 4}),
                   (0.5 + 0.5 + 0) / 3);
  EXPECT_DOUBLE_EQ(Mape(std::vector<double>{}, std::vector<double>{}), 0.0);
}

TEST(LearnedMedianApe, MiddleRelativeErrorIgnoringOneWildKernel) {
  // Relative errors 0.5, 0.5, 0 and 99 (the wild one): the median of 0, 0.5, 0.5, 99 is 0.5.
  EXPECT_DOUBLE_EQ(MedianApe(std::vector<double>{1, 2, 4, 1}, std::vector<double>{1.5, 1, 4, 100}),
                   0.5);
  // An odd count takes the middle one; rows without a positive truth are left out.
  EXPECT_DOUBLE_EQ(MedianApe(std::vector<double>{1, 2, 4, 0}, std::vector<double>{1.5, 2.2, 5, 3}),
                   0.25);
  EXPECT_DOUBLE_EQ(MedianApe(std::vector<double>{}, std::vector<double>{}), 0.0);
}

TEST(LearnedTimeWeightedApe, ErrorOfTheSummedTimes) {
  // |1.5 - 1| + |1 - 2| + |4 - 4| + |100 - 1000| over 1 + 2 + 4 + 1000: the slow kernel decides,
  // and a tiny kernel 10x off (0.001 -> 0.01) barely moves it.
  EXPECT_DOUBLE_EQ(
      TimeWeightedApe(std::vector<double>{1, 2, 4, 1000}, std::vector<double>{1.5, 1, 4, 100}),
      (0.5 + 1 + 0 + 900) / 1007);
  EXPECT_NEAR(TimeWeightedApe(std::vector<double>{1000, 0.001}, std::vector<double>{1000, 0.01}),
              0.009 / 1000.001, 1e-12);
  // Rows without a positive measured time are left out; nothing at all is 0.
  EXPECT_DOUBLE_EQ(TimeWeightedApe(std::vector<double>{2, 0}, std::vector<double>{3, 5}), 0.5);
  EXPECT_DOUBLE_EQ(TimeWeightedApe(std::vector<double>{}, std::vector<double>{}), 0.0);
}

TEST(LearnedMapeByRuntime, BandsByMeasuredTimeWithTheirShareOfTheError) {
  // Bands [0, 1e-8), [1e-8, 1e-6), [1e-6, inf): a 2 ns kernel 100% off, a 5 ns one exact, a
  // 1e-8 one (an edge opens the band above) 50% off, a 1 ms one 10% off; a 0 s row is left out.
  const std::vector<double> edges = {1e-8, 1e-6};
  const std::vector<RuntimeBand> bands =
      MapeByRuntime(std::vector<double>{2e-9, 5e-9, 1e-8, 1e-3, 0},
                    std::vector<double>{4e-9, 5e-9, 1.5e-8, 0.9e-3, 7}, edges);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].lower_seconds, 0);
  EXPECT_EQ(bands[0].upper_seconds, 1e-8);
  EXPECT_EQ(bands[0].rows, 2);
  EXPECT_NEAR(bands[0].mape, 0.5, 1e-12);
  EXPECT_EQ(bands[1].rows, 1);  // 1e-8 itself, not the 0 s row (left out)
  EXPECT_NEAR(bands[1].mape, 0.5, 1e-12);
  EXPECT_EQ(bands[2].upper_seconds, 0);  // no upper end
  EXPECT_EQ(bands[2].rows, 1);
  EXPECT_NEAR(bands[2].mape, 0.1, 1e-12);
  EXPECT_NEAR(bands[0].error_share, 1.0 / 1.6, 1e-12);
  EXPECT_NEAR(bands[1].error_share, 0.5 / 1.6, 1e-12);
  EXPECT_NEAR(bands[2].error_share, 0.1 / 1.6, 1e-12);
  // An empty band reads 0, not NaN.
  const std::vector<RuntimeBand> none =
      MapeByRuntime(std::vector<double>{1e-3}, std::vector<double>{1e-3}, edges);
  EXPECT_EQ(none[0].rows, 0);
  EXPECT_EQ(none[0].mape, 0);
  EXPECT_EQ(none[0].error_share, 0);
}

// Kernels whose true log runtime is normal around the prediction with variance 0.05 + 2 * spread^2:
// the MAPE-optimal point of a log-normal is exp(mean - variance), so the fit finds about that
// floor and scale, and its point beats the median on relative error.
TEST(LearnedFitRuntimeSpread, RecoversTheVarianceModelAndLowersMape) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(0, 0.5);
  std::vector<double> truth, mean, spread;
  for (int i = 0; i < 20000; ++i) {
    const double s = uniform(rng);
    const double m = -10 + 4 * uniform(rng);
    mean.push_back(m);
    spread.push_back(s);
    truth.push_back(std::exp(m + std::sqrt(0.05 + 2 * s * s) * normal(rng)));
  }
  const RuntimeSpread fit = FitRuntimeSpread(truth, mean, spread);
  EXPECT_NEAR(fit.floor, 0.05, 0.03);
  EXPECT_NEAR(fit.scale, 2.0, 0.4);
  std::vector<double> median;
  for (double m : mean) median.push_back(std::exp(m));
  const std::vector<double> point = RelativeErrorSeconds(mean, spread, fit);
  EXPECT_LT(Mape(truth, point), Mape(truth, median) - 0.03);
  for (size_t i = 0; i < point.size(); ++i) {
    ASSERT_NEAR(point[i], std::exp(mean[i] - fit.floor - fit.scale * spread[i] * spread[i]),
                1e-12 * point[i]);
  }
}

// Exact predictions need no shift, and rows without a positive truth or a finite prediction are
// left out rather than poisoning the fit.
TEST(LearnedFitRuntimeSpread, ExactPredictionsAndBadRows) {
  const std::vector<double> truth = {1e-6, 2e-6, 0, 4e-6};
  const std::vector<double> mean = {std::log(1e-6), std::log(2e-6), 1.0, std::log(4e-6)};
  const std::vector<double> spread = {0.1, 0.3, 0.2, std::nan("")};
  const RuntimeSpread fit = FitRuntimeSpread(truth, mean, spread);
  EXPECT_EQ(fit.floor, 0.0);
  EXPECT_EQ(fit.scale, 0.0);
  const RuntimeSpread none = FitRuntimeSpread({}, {}, {});
  EXPECT_EQ(none.floor, 0.0);
  EXPECT_EQ(none.scale, 0.0);
}

TEST(LearnedLoss, NamesRoundTrip) {
  for (Loss loss : {Loss::kMseLog, Loss::kRankHinge, Loss::kRankLogistic, Loss::kBoth}) {
    absl::StatusOr<Loss> parsed = ParseLoss(LossName(loss));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, loss);
  }
  EXPECT_FALSE(ParseLoss("l2").ok());
}

TEST(LearnedValidateOptions, RejectsBadSizes) {
  ModelOptions o;
  EXPECT_FALSE(ValidateOptions(o).ok());  // the vocabulary size has no default
  o.vocabulary_size = 10;
  EXPECT_TRUE(ValidateOptions(o).ok());
  ModelOptions bad = o;
  bad.hidden_dim = 0;
  EXPECT_FALSE(ValidateOptions(bad).ok());
  bad = o;
  bad.hidden_dim = 1 << 30;
  EXPECT_FALSE(ValidateOptions(bad).ok());
  bad = o;
  bad.dropout = 1.0;
  EXPECT_FALSE(ValidateOptions(bad).ok());
  bad = o;
  bad.batch_size = 0;
  EXPECT_FALSE(ValidateOptions(bad).ok());
}

TEST(LearnedValidateGraph, NamesWhatIsWrong) {
  ModelOptions o;
  o.vocabulary_size = 4;
  o.node_features = 2;
  o.kernel_features = 1;
  features::KernelGraph g;
  g.opcodes = {1, 2};
  g.node_features = {0, 1, 2, 3};
  g.edge_src = {0};
  g.edge_dst = {1};
  g.kernel_features = {0.5f};
  EXPECT_TRUE(ValidateGraph(g, o).ok());

  features::KernelGraph empty = g;
  empty.opcodes.clear();
  empty.node_features.clear();
  empty.edge_src.clear();
  empty.edge_dst.clear();
  EXPECT_FALSE(ValidateGraph(empty, o).ok());

  features::KernelGraph bad = g;
  bad.opcodes[1] = 4;
  EXPECT_NE(ValidateGraph(bad, o).message().find("opcode id 4"), std::string::npos);
  bad = g;
  bad.node_features.pop_back();  // 3 values for 2 nodes: no whole rows
  EXPECT_FALSE(ValidateGraph(bad, o).ok());
  bad = g;
  bad.node_features.resize(2);  // 1 per node: fewer than the model reads
  EXPECT_NE(ValidateGraph(bad, o).message().find("the model reads 2 per node"), std::string::npos);
  bad = g;
  bad.kernel_features.clear();
  EXPECT_FALSE(ValidateGraph(bad, o).ok());
  // Wider rows are a newer, append-only feature set: the model reads their leading columns.
  features::KernelGraph wider = g;
  wider.node_features = {0, 1, 9, 2, 3, 9};
  wider.kernel_features.push_back(1);
  EXPECT_TRUE(ValidateGraph(wider, o).ok());
  bad = g;
  bad.edge_dst[0] = 2;
  EXPECT_NE(ValidateGraph(bad, o).message().find("edge 0"), std::string::npos);
  bad = g;
  bad.edge_src.push_back(0);
  EXPECT_FALSE(ValidateGraph(bad, o).ok());
  bad = g;
  bad.node_features[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(ValidateGraph(bad, o).ok());
}

}  // namespace
}  // namespace mltune::costmodels::learned
