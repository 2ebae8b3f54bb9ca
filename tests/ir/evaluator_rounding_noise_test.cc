// EvalOptions::rounding_noise_ulps: Monte Carlo arithmetic on the ops that round, bounded by
// their ulps (sums by sqrt(terms) of their terms' magnitude), antithetic under noise_negated, and
// nothing on integers, comparisons, data movement or rng streams.
#include <cmath>
#include <vector>

#include "ir/evaluator/evaluator.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::EvalText;
using eval_test::MakeLiteral;
using eval_test::ModuleText;
using eval_test::Values;

constexpr double kF32Eps = 0x1p-23;

EvalOptions Noise(double ulps, uint64_t seed, bool negated = false) {
  EvalOptions o;
  o.rounding_noise_ulps = ulps;
  o.noise_seed = seed;
  o.noise_negated = negated;
  return o;
}

// n values in [0.5, 1.5), deterministic.
std::vector<double> Ramp(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(0.5 + (i * 37 % n) / static_cast<double>(n));
  return v;
}

// The two operands of kMultiply: the same ramp.
std::vector<Literal> RampArgs() {
  std::vector<Literal> a;
  a.push_back(MakeLiteral("f32[1000]", Ramp(1000)));
  a.push_back(MakeLiteral("f32[1000]", Ramp(1000)));
  return a;
}

const std::string kMultiply = ModuleText(R"(
  a = f32[1000] parameter(0)
  b = f32[1000] parameter(1)
  ROOT m = f32[1000] multiply(a, b))");

TEST(RoundingNoiseTest, ElementwiseResultsMoveByAtMostTheirUlps) {
  absl::StatusOr<Literal> exact = EvalText(kMultiply, RampArgs());
  absl::StatusOr<Literal> noisy = EvalText(kMultiply, RampArgs(), Noise(2, 1));
  ASSERT_TRUE(exact.ok() && noisy.ok());
  const std::vector<double> e = Values(*exact), n = Values(*noisy);
  int moved = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    // 2 ulps of noise, then half an ulp storing the result back as f32.
    EXPECT_LE(std::fabs(n[i] - e[i]), 2.5 * kF32Eps * std::fabs(e[i])) << i;
    moved += n[i] != e[i];
  }
  EXPECT_GT(moved, 500);
}

TEST(RoundingNoiseTest, NegatedRunsMoveTheOtherWay) {
  absl::StatusOr<Literal> exact = EvalText(kMultiply, RampArgs());
  absl::StatusOr<Literal> up = EvalText(kMultiply, RampArgs(), Noise(64, 3));
  absl::StatusOr<Literal> down = EvalText(kMultiply, RampArgs(), Noise(64, 3, true));
  ASSERT_TRUE(exact.ok() && up.ok() && down.ok());
  const std::vector<double> e = Values(*exact), u = Values(*up), d = Values(*down);
  for (size_t i = 0; i < e.size(); ++i) {
    // Opposite errors, equal up to the f32 rounding of each.
    EXPECT_NEAR(u[i] - e[i], e[i] - d[i], 2 * kF32Eps * std::fabs(e[i])) << i;
  }
}

// A dot product whose terms cancel exactly: the noise follows the terms' magnitudes (4096), not
// the result's (0), and grows with sqrt(terms).
TEST(RoundingNoiseTest, SumsMoveBySqrtTermsTimesTheirTermsMagnitude) {
  const std::string text = ModuleText(R"(
  a = f32[4096] parameter(0)
  b = f32[4096] parameter(1)
  ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})");
  std::vector<double> ones(4096, 1.0), signs;
  for (int i = 0; i < 4096; ++i) signs.push_back(i % 2 == 0 ? 1.0 : -1.0);
  double largest = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::vector<Literal> args;
    args.push_back(MakeLiteral("f32[4096]", ones));
    args.push_back(MakeLiteral("f32[4096]", signs));
    absl::StatusOr<Literal> noisy = EvalText(text, std::move(args), Noise(2, seed));
    ASSERT_TRUE(noisy.ok()) << noisy.status();
    largest = std::max(largest, std::fabs(noisy->GetAsDouble(0)));
  }
  const double bound = 2 * kF32Eps * std::sqrt(4096.0) * 4096;
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.25 * bound);
}

TEST(RoundingNoiseTest, IntegersComparisonsDataMovementAndRngStayExact) {
  const std::string text = ModuleText(R"(
  a = f32[4,8] parameter(0)
  i = s32[4,8] parameter(1)
  t = f32[8,4] transpose(a), dimensions={1,0}
  ii = s32[4,8] multiply(i, i)
  z = f32[] constant(0)
  zs = f32[4,8] broadcast(z), dimensions={}
  c = pred[4,8] compare(a, zs), direction=GT
  mx = f32[4,8] maximum(a, zs)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[4,8] rng(lo, hi), distribution=rng_uniform
  ROOT out = (f32[8,4], s32[4,8], pred[4,8], f32[4,8], f32[4,8]) tuple(t, ii, c, mx, r))");
  std::vector<double> a, i;
  for (int k = 0; k < 32; ++k) {
    a.push_back(std::sin(k) * 3);
    i.push_back(k - 16);
  }
  auto args = [&] {
    std::vector<Literal> v;
    v.push_back(MakeLiteral("f32[4,8]", a));
    v.push_back(MakeLiteral("s32[4,8]", i));
    return v;
  };
  absl::StatusOr<Literal> exact = EvalText(text, args());
  absl::StatusOr<Literal> noisy = EvalText(text, args(), Noise(1000, 5));
  ASSERT_TRUE(exact.ok() && noisy.ok());
  EXPECT_TRUE(exact->BitwiseEqual(*noisy)) << exact->ToString() << "\n" << noisy->ToString();
}

TEST(RoundingNoiseTest, ZeroUlpsIsTheExactEvaluation) {
  absl::StatusOr<Literal> exact = EvalText(kMultiply, RampArgs());
  absl::StatusOr<Literal> zero = EvalText(kMultiply, RampArgs(), Noise(0, 9));
  ASSERT_TRUE(exact.ok() && zero.ok());
  EXPECT_TRUE(exact->BitwiseEqual(*zero));
}

}  // namespace
}  // namespace mltune::ir
