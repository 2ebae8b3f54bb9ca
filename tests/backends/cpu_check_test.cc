// Checking generated code against the evaluator where outputs are ill-conditioned: a square
// root of the difference of two nearly equal dot products (the pattern of neural-tangents' NNGP
// kernel). The backend sums the batched and the plain dot in different orders, so the diagonal
// differs from the evaluator's by far more than a fixed tolerance, and only there.
#include <cmath>
#include <cstdlib>

#include "backends/cpu/check.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/runner.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

constexpr char kGramDistance[] = R"(
HloModule gram_distance
ENTRY e {
  x = f32[16,3072] parameter(0)
  d = f32[16] dot(x, x), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  g = f32[16,16] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  di = f32[16,16] broadcast(d), dimensions={0}
  dj = f32[16,16] broadcast(d), dimensions={1}
  p = f32[16,16] multiply(di, dj)
  gg = f32[16,16] multiply(g, g)
  s = f32[16,16] subtract(p, gg)
  z = f32[] constant(0)
  zs = f32[16,16] broadcast(z), dimensions={}
  m = f32[16,16] maximum(s, zs)
  ROOT r = f32[16,16] sqrt(m)
})";

// The same without the clamp: where rounding makes the diagonal's difference negative, its
// square root is NaN, and whether it does is rounding's choice.
constexpr char kGramDistanceUnclamped[] = R"(
HloModule gram_distance_unclamped
ENTRY e {
  x = f32[16,3072] parameter(0)
  d = f32[16] dot(x, x), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  g = f32[16,16] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  di = f32[16,16] broadcast(d), dimensions={0}
  dj = f32[16,16] broadcast(d), dimensions={1}
  p = f32[16,16] multiply(di, dj)
  gg = f32[16,16] multiply(g, g)
  s = f32[16,16] subtract(p, gg)
  ROOT r = f32[16,16] sqrt(s)
})";

class CpuCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST(CompareLeavesTest, RoundingSpreadWidensOnlyItsOwnElements) {
  ir::Literal expected = *ir::Literal::Create(ir::Shape(ir::PrimitiveType::kF32, {2}));
  expected.SetFromDouble(0, 2.0);
  expected.SetFromDouble(1, 3.0);
  ir::Literal actual = expected;
  actual.SetFromDouble(0, 2.5);
  const std::vector<ir::Literal> e{expected}, a{actual};
  const Tolerance tolerance;  // spread factor 8
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(e, a, tolerance)));
  const RoundingSpreads wide{{0.1, 0.0}}, narrow{{0.01, 0.0}}, elsewhere{{0.0, 1.0}};
  EXPECT_TRUE(CompareLeaves(e, a, tolerance, &wide).ok());
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(e, a, tolerance, &narrow)));
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(e, a, tolerance, &elsewhere)));
}

TEST_F(CpuCheckTest, IllConditionedElementsPassWithinTheirRoundingSpreadAndOnlyThose) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kGramDistance);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_TRUE(CheckAgainstEvaluator(**module, *compiled, 3).ok());

  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(**module, 3);
  ASSERT_TRUE(args.ok());
  absl::StatusOr<ir::Literal> exact = ir::Evaluate(**module, *args);
  ASSERT_TRUE(exact.ok());
  const std::vector<ir::Literal> leaves = FlattenLeaves(*exact);
  absl::StatusOr<RoundingSpreads> spreads = RoundingSpread(**module, *args, leaves);
  ASSERT_TRUE(spreads.ok()) << spreads.status();
  ASSERT_EQ(spreads->size(), 1u);
  const std::vector<double>& spread = (*spreads)[0];
  for (int i = 0; i < 16; ++i) {
    // The row's scale, about sqrt(d_i d_j) off the diagonal; the diagonal itself is exactly 0.
    const double scale = leaves[0].GetAsDouble(i * 16 + (i + 1) % 16);
    for (int j = 0; j < 16; ++j) {
      const double value = leaves[0].GetAsDouble(i * 16 + j);
      if (i == j) {
        EXPECT_EQ(value, 0.0);
        EXPECT_GT(spread[i * 16 + j], 1e-3 * scale) << i;  // ill-conditioned
      } else {
        EXPECT_LT(spread[i * 16 + j], 1e-4 * value) << i << "," << j;  // well-conditioned
      }
    }
  }

  absl::StatusOr<std::vector<ir::Literal>> actual =
      Execute(compiled->object, compiled->program, *args, MeasureOptions{});
  ASSERT_TRUE(actual.ok()) << actual.status();
  EXPECT_TRUE(CompareLeaves(leaves, *actual, Tolerance{}, &*spreads).ok());
  // A wrong value is still caught, off the diagonal and on it.
  std::vector<ir::Literal> off = *actual;
  off[0].SetFromDouble(1, off[0].GetAsDouble(1) * 1.01);
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(leaves, off, Tolerance{}, &*spreads)));
  std::vector<ir::Literal> on = *actual;
  on[0].SetFromDouble(17, leaves[0].GetAsDouble(17) + 100 * spread[17]);
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(leaves, on, Tolerance{}, &*spreads)));
}

TEST(CompareLeavesTest, NanAgainstFiniteOnlyWhereRoundingNoiseMakesTheReferenceNan) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kGramDistanceUnclamped);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(**module, 3);
  ASSERT_TRUE(args.ok());
  absl::StatusOr<ir::Literal> exact = ir::Evaluate(**module, *args);
  ASSERT_TRUE(exact.ok());
  const std::vector<ir::Literal> leaves = FlattenLeaves(*exact);
  absl::StatusOr<RoundingSpreads> spreads = RoundingSpread(**module, *args, leaves);
  ASSERT_TRUE(spreads.ok()) << spreads.status();
  const std::vector<double>& spread = (*spreads)[0];
  // Noise flips some diagonal elements between NaN and a number; none off the diagonal.
  int flipped = -1;
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      const bool infinite = std::isinf(spread[i * 16 + j]);
      if (i != j) {
        EXPECT_FALSE(infinite) << i << "," << j;
      }
      if (i == j && infinite && flipped < 0) flipped = i * 16 + j;
    }
  }
  ASSERT_GE(flipped, 0) << "no diagonal element changed between NaN and a number under noise";

  // A result with that element's other outcome passes only with the spreads.
  std::vector<ir::Literal> other = FlattenLeaves(*exact);
  const bool was_nan = std::isnan(leaves[0].GetAsDouble(flipped));
  other[0].SetFromDouble(flipped, was_nan ? 0.0 : std::nan(""));
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(leaves, other, Tolerance{})));
  int64_t within = 0;
  EXPECT_TRUE(CompareLeaves(leaves, other, Tolerance{}, &*spreads, &within).ok());
  EXPECT_EQ(within, 1);
  // A NaN where noise never makes one is still a mismatch.
  std::vector<ir::Literal> wrong = FlattenLeaves(*exact);
  wrong[0].SetFromDouble(1, std::nan(""));
  EXPECT_TRUE(absl::IsDataLoss(CompareLeaves(leaves, wrong, Tolerance{}, &*spreads)));
}

}  // namespace
}  // namespace mltune::backends::cpu
