// CompareLiterals: exact integers, tolerant floats, NaN/inf rules, tuples and shape changes.
#include "ir/evaluator/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mltune::ir {
namespace {

Literal F32(std::vector<double> values) {
  Literal l = *Literal::Create(Shape(PrimitiveType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) l.SetFromDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

TEST(CompareLiteralsTest, FloatsWithinToleranceMatchAndReportTheLargestDifference) {
  LiteralDifference d = CompareLiterals(F32({1.0, 2.0, 100.0}), F32({1.0, 2.000001, 100.0005}));
  EXPECT_EQ(d.violations, 0);
  EXPECT_EQ(d.elements, 3);
  EXPECT_NEAR(d.max_abs, 0.0005, 1e-5);  // 100.0005 rounds in f32
  EXPECT_NEAR(d.max_rel, 5e-6, 1e-7);
}

TEST(CompareLiteralsTest, FloatsOutsideToleranceAreNamed) {
  LiteralDifference d = CompareLiterals(F32({1.0, 2.0}), F32({1.0, 2.5}));
  EXPECT_EQ(d.violations, 1);
  EXPECT_EQ(d.first_violation, "output {} element 1 of f32[2]: 2 became 2.5");
}

TEST(CompareLiteralsTest, NanMatchesOnlyNanAndInfOnlyItself) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(CompareLiterals(F32({nan, inf}), F32({nan, inf})).violations, 0);
  EXPECT_EQ(CompareLiterals(F32({nan, inf}), F32({0, -inf})).violations, 2);
}

TEST(CompareLiteralsTest, IntegersMustBeExact) {
  Literal a = *Literal::Create(Shape(PrimitiveType::kS32, {2}));
  Literal b = *Literal::Create(Shape(PrimitiveType::kS32, {2}));
  a.SetFromInt64(0, 1000000);
  b.SetFromInt64(0, 1000001);
  EXPECT_EQ(CompareLiterals(a, b).violations, 1);
}

TEST(CompareLiteralsTest, TuplesAndShapeChanges) {
  Literal t1 = Literal::MakeTuple({F32({1}), F32({2, 3})});
  Literal t2 = Literal::MakeTuple({F32({1}), F32({2, 4})});
  LiteralDifference d = CompareLiterals(t1, t2);
  EXPECT_EQ(d.violations, 1);
  EXPECT_EQ(d.first_violation, "output {1} element 1 of f32[2]: 3 became 4");
  LiteralDifference s = CompareLiterals(F32({1, 2}), F32({1, 2, 3}));
  EXPECT_FALSE(s.shapes_match);
  EXPECT_EQ(s.violations, 1);
}

}  // namespace
}  // namespace mltune::ir
