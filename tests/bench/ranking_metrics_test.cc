#include "bench/ranking_metrics.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace mltune::bench {
namespace {

TEST(RankingMetricsTest, TheMeasuredOrderAndItsReverse) {
  const std::vector<double> measured = {3, 1, 4, 2, 5};
  RankingMetrics same = Ranking({30, 10, 40, 20, 50}, measured, 2);
  EXPECT_EQ(same.candidates, 5u);
  EXPECT_DOUBLE_EQ(same.kendall_tau, 1);
  EXPECT_DOUBLE_EQ(same.top1_ratio, 1);
  EXPECT_DOUBLE_EQ(same.topk_ratio, 1);

  RankingMetrics reversed = Ranking({-3, -1, -4, -2, -5}, measured, 2);
  EXPECT_DOUBLE_EQ(reversed.kendall_tau, -1);
  EXPECT_DOUBLE_EQ(reversed.top1_ratio, 5) << "it picks the slowest, 5 against 1";
  EXPECT_DOUBLE_EQ(reversed.topk_ratio, 4) << "its two first are 5 and 4";
}

TEST(RankingMetricsTest, OneSwappedPairAndTies) {
  // Pairs: the first two discordant, four concordant, one tied in predictions (tau-b: 3 over
  // sqrt(5 x 6)).
  RankingMetrics m = Ranking({2, 1, 3, 3}, {1, 2, 3, 4}, 1);
  EXPECT_EQ(m.candidates, 4u);
  EXPECT_DOUBLE_EQ(m.kendall_tau, 3.0 / std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(m.top1_ratio, 2);
}

TEST(RankingMetricsTest, NonFiniteTimesAreLeftOut) {
  const double inf = std::numeric_limits<double>::infinity();
  RankingMetrics m = Ranking({inf, 1, 2}, {0.5, 1, 2}, 1);
  EXPECT_EQ(m.candidates, 2u) << "a plan that did not lower ranks +inf";
  EXPECT_DOUBLE_EQ(m.kendall_tau, 1);
  EXPECT_DOUBLE_EQ(m.top1_ratio, 1);
  EXPECT_EQ(Ranking({}, {}, 10).candidates, 0u);
}

}  // namespace
}  // namespace mltune::bench
