// The retraining gate's choices (optimizers/cost_model_training/gate.h): which kernels it holds out
// of the retrained model's training, and when the retrained model may replace the stored one.
// train_cost_model_test.cc runs the gate end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "optimizers/cost_model_training/gate.h"

namespace mltune::opt::cost_model_training {
namespace {

constexpr int64_t kIncumbentMs = 1000;

// "p3" and the like, built without operator+ on a literal (GCC 12 -Wrestrict misfires on it).
std::string Name(const char* prefix, int i) {
  std::string name = prefix;
  name += std::to_string(i);
  return name;
}

std::set<std::string> HeldOutPrograms(const std::vector<GateKernel>& kernels,
                                      const std::vector<bool>& holdout) {
  std::set<std::string> programs;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (holdout[k]) programs.insert(kernels[k].program);
  }
  return programs;
}

TEST(GateHoldoutTest, HoldsOutWholeProgramsAmongTheKernelsNewerThanTheStoredModel) {
  std::vector<GateKernel> kernels;
  // Old programs the stored model trained on, and a synthetic one that always trains.
  for (int i = 0; i < 4; ++i) kernels.push_back({"old", kIncumbentMs - i, true});
  kernels.push_back({"synthetic", kIncumbentMs + 5, false});
  // Eight new programs of three kernels each.
  for (int p = 0; p < 8; ++p) {
    for (int i = 0; i < 3; ++i) {
      kernels.push_back({Name("new", p), kIncumbentMs + 1 + p, true});
    }
  }
  const std::vector<bool> holdout = GateHoldout(kernels, kIncumbentMs, 0.25, 7);
  ASSERT_EQ(holdout.size(), kernels.size());
  for (size_t k = 0; k < 5; ++k) EXPECT_FALSE(holdout[k]) << kernels[k].program;
  const std::set<std::string> programs = HeldOutPrograms(kernels, holdout);
  EXPECT_EQ(programs.size(), 2u);  // a quarter of eight
  // A program goes whole: none of its kernels trains the candidate.
  for (size_t k = 5; k < kernels.size(); ++k) {
    EXPECT_EQ(holdout[k], programs.contains(kernels[k].program)) << k;
  }
  // The same seed draws the same programs; some other seed draws others.
  EXPECT_EQ(GateHoldout(kernels, kIncumbentMs, 0.25, 7), holdout);
  bool differs = false;
  for (uint64_t seed = 0; seed < 20 && !differs; ++seed) {
    differs = GateHoldout(kernels, kIncumbentMs, 0.25, seed) != holdout;
  }
  EXPECT_TRUE(differs);
}

TEST(GateHoldoutTest, ProgramsAreDrawnUntilTheyHoldTheShareOfTheNewKernels) {
  // Programs of 1, 2, 3, 4 and 5 new kernels: a quarter of 15 is 4 kernels, and no draw may pass
  // 8.
  std::vector<GateKernel> kernels;
  for (int p = 1; p <= 5; ++p) {
    for (int i = 0; i < p; ++i) kernels.push_back({Name("p", p), kIncumbentMs + 1, true});
  }
  std::set<std::set<std::string>> draws;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const std::vector<bool> holdout = GateHoldout(kernels, kIncumbentMs, 0.25, seed);
    const std::set<std::string> programs = HeldOutPrograms(kernels, holdout);
    int held = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      EXPECT_EQ(holdout[k], programs.contains(kernels[k].program)) << "a program held out in part";
      held += holdout[k] ? 1 : 0;
    }
    EXPECT_GE(held, 4) << seed;
    EXPECT_LE(held, 8) << seed;
    draws.insert(programs);
  }
  EXPECT_GT(draws.size(), 3u) << "the draw hardly depends on the seed";
}

TEST(GateHoldoutTest, ALargeNewProgramIsPassedOverForSmallerOnes) {
  // One program of 20 new kernels and four of 2: a quarter of 28 is 7; the large one would take
  // the held-out set to 20 or more, so the small ones go, whatever the draw.
  std::vector<GateKernel> kernels;
  for (int i = 0; i < 20; ++i) kernels.push_back({"large", kIncumbentMs + 1, true});
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 2; ++i) kernels.push_back({Name("small", p), kIncumbentMs + 1, true});
  }
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::set<std::string> programs =
        HeldOutPrograms(kernels, GateHoldout(kernels, kIncumbentMs, 0.25, seed));
    EXPECT_FALSE(programs.contains("large")) << seed;
    EXPECT_EQ(programs.size(), 4u) << seed;  // 2 + 2 + 2 < 7, so all four
  }
  // When every program is that large, the smallest goes alone.
  const std::vector<GateKernel> large = {{"a", kIncumbentMs + 1, true},
                                         {"a", kIncumbentMs + 1, true},
                                         {"a", kIncumbentMs + 1, true},
                                         {"b", kIncumbentMs + 1, true},
                                         {"b", kIncumbentMs + 1, true}};
  for (uint64_t seed = 0; seed < 10; ++seed) {
    EXPECT_EQ(HeldOutPrograms(large, GateHoldout(large, kIncumbentMs, 0.1, seed)),
              std::set<std::string>{"b"})
        << seed;
  }
}

TEST(GateHoldoutTest, ASingleNewProgramGivesUpAShareOfItsKernels) {
  std::vector<GateKernel> kernels = {{"old", kIncumbentMs, true}};
  for (int i = 0; i < 8; ++i) kernels.push_back({"new", kIncumbentMs + 1, true});
  const std::vector<bool> holdout = GateHoldout(kernels, kIncumbentMs, 0.25, 1);
  EXPECT_FALSE(holdout[0]);
  EXPECT_EQ(std::count(holdout.begin(), holdout.end(), true), 2);
  // At least one kernel, however small the share.
  const std::vector<bool> one = GateHoldout(kernels, kIncumbentMs, 0.01, 1);
  EXPECT_EQ(std::count(one.begin(), one.end(), true), 1);
  // At least one program too.
  kernels.push_back({"other", kIncumbentMs + 2, true});
  EXPECT_EQ(HeldOutPrograms(kernels, GateHoldout(kernels, kIncumbentMs, 0.01, 1)).size(), 1u);
}

TEST(GateHoldoutTest, NothingNewerThanTheStoredModelHoldsNothingOut) {
  const std::vector<GateKernel> kernels = {
      {"a", kIncumbentMs, true}, {"b", kIncumbentMs - 1, true}, {"s", kIncumbentMs + 1, false}};
  const std::vector<bool> holdout = GateHoldout(kernels, kIncumbentMs, 1.0, 0);
  EXPECT_EQ(std::count(holdout.begin(), holdout.end(), true), 0);
  EXPECT_TRUE(GateHoldout({}, kIncumbentMs, 0.5, 0).empty());
}

TEST(GatePassesTest, TheCandidateMayLoseByTheMarginPlusTheNoiseFloor) {
  // 10% worse plus one point: 0.20 * 1.1 + 0.01 = 0.23.
  EXPECT_TRUE(GatePasses(0.10, 0.20, 0.1));
  EXPECT_TRUE(GatePasses(0.229, 0.20, 0.1));
  EXPECT_FALSE(GatePasses(0.231, 0.20, 0.1));
  // Near zero, the noise floor decides: 0.5% against a perfect stored model passes, 2% does not.
  EXPECT_TRUE(GatePasses(0.005, 0.0, 0.1));
  EXPECT_FALSE(GatePasses(0.02, 0.0, 0.1));
  // A negative margin demands an improvement: 20% must come down to 0.20 * 0.5 + 0.01 = 11%.
  EXPECT_FALSE(GatePasses(0.15, 0.20, -0.5));
  EXPECT_TRUE(GatePasses(0.10, 0.20, -0.5));
  EXPECT_DOUBLE_EQ(GateBound(0.20, -0.5), 0.11);
}

}  // namespace
}  // namespace mltune::opt::cost_model_training
