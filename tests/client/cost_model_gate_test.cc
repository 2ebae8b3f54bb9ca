// The retraining gate's choices (client/cost_model_gate.h): which kernels it holds out of the
// retrained model's training, and when the retrained model may replace the stored one.
// train_cost_model_test.cc runs the gate end to end.
#include "client/cost_model_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mltune::client {
namespace {

constexpr int64_t kIncumbentMs = 1000;

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
      kernels.push_back({"new" + std::to_string(p), kIncumbentMs + 1 + p, true});
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
  // One program of 10 new kernels and five of one each: a quarter of 15 is 4 kernels.
  std::vector<GateKernel> kernels;
  for (int i = 0; i < 10; ++i) kernels.push_back({"big", kIncumbentMs + 1, true});
  for (int p = 0; p < 5; ++p)
    kernels.push_back({"small" + std::to_string(p), kIncumbentMs + 1, true});
  std::set<std::string> drawn_first;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const std::vector<bool> holdout = GateHoldout(kernels, kIncumbentMs, 0.25, seed);
    const std::set<std::string> programs = HeldOutPrograms(kernels, holdout);
    std::map<std::string, int> size;
    int held = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (!programs.contains(kernels[k].program)) continue;
      EXPECT_TRUE(holdout[k]) << "program " << kernels[k].program << " held out in part";
      ++size[kernels[k].program];
      ++held;
    }
    EXPECT_GE(held, 4) << seed;
    // Drawing stopped at the program that reached the share: without some one of them, short.
    bool last_needed = false;
    for (const auto& [program, n] : size) last_needed = last_needed || held - n < 4;
    EXPECT_TRUE(last_needed) << seed << ": " << held << " kernels held out";
    drawn_first.insert(programs.contains("big") ? "big" : "small");
  }
  EXPECT_EQ(drawn_first.size(), 2u) << "the big program was always or never drawn";
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
}  // namespace mltune::client
