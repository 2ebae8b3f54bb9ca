#include "bench/matrix_kinds.h"

#include <gtest/gtest.h>

#include <vector>

namespace mltune::bench {
namespace {

MatrixDims Dot(int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatrixDims d;
  d.batch = batch;
  d.m = m;
  d.n = n;
  d.k = k;
  d.bytes = 4 * batch * (m * k + k * n + m * n);
  return d;
}

MatrixDims Conv(int64_t groups, int64_t input_features, bool pointwise) {
  MatrixDims d = Dot(groups, 49, 8, 9);
  d.convolution = true;
  d.feature_groups = groups;
  d.input_features = input_features;
  d.pointwise = pointwise;
  return d;
}

TEST(MatrixKindsTest, ClassifiesDots) {
  EXPECT_EQ(ClassifyMatrix(Dot(1, 128, 768, 768)), MatrixKind::kGemm);
  EXPECT_EQ(ClassifyMatrix(Dot(1, 1, 512, 256)), MatrixKind::kGemv);
  EXPECT_EQ(ClassifyMatrix(Dot(1, 1024, 1, 512)), MatrixKind::kGemv);
  // Attention's products: a batch, whatever m and n are.
  EXPECT_EQ(ClassifyMatrix(Dot(12, 128, 128, 64)), MatrixKind::kBatchedDot);
  EXPECT_EQ(ClassifyMatrix(Dot(12, 1, 128, 64)), MatrixKind::kBatchedDot);
}

TEST(MatrixKindsTest, ClassifiesConvolutions) {
  EXPECT_EQ(ClassifyMatrix(Conv(1, 64, false)), MatrixKind::kDenseConv);
  EXPECT_EQ(ClassifyMatrix(Conv(1, 64, true)), MatrixKind::kPointwiseConv);
  EXPECT_EQ(ClassifyMatrix(Conv(8, 64, false)), MatrixKind::kGroupedConv);
  EXPECT_EQ(ClassifyMatrix(Conv(64, 64, false)), MatrixKind::kDepthwiseConv);
  // A grouped 1x1 convolution is grouped: the groups decide its kernel, not the window.
  EXPECT_EQ(ClassifyMatrix(Conv(8, 64, true)), MatrixKind::kGroupedConv);
}

TEST(MatrixKindsTest, CountsFlopsAndIntensity) {
  const MatrixDims d = Dot(2, 4, 8, 16);
  EXPECT_DOUBLE_EQ(MatrixFlops(d), 2.0 * 2 * 4 * 8 * 16);
  EXPECT_DOUBLE_EQ(ArithmeticIntensity(d), 2048.0 / (4 * 2 * (64 + 128 + 32)));
  EXPECT_DOUBLE_EQ(ArithmeticIntensity(MatrixDims{}), 0.0);
}

TEST(MatrixKindsTest, SummarizesPerKind) {
  // Peak 100 GFLOP/s, ridge 2 FLOP/byte, 85%: one compute-bound GEMM at 90 GFLOP/s, one at 50,
  // and a memory-bound GEMV that counts in the totals only.
  const std::vector<KindSample> samples = {
      {MatrixKind::kGemm, 9e9, 10, 0.1},
      {MatrixKind::kGemm, 5e9, 10, 0.1},
      {MatrixKind::kGemv, 1e9, 0.5, 0.1},
  };
  const std::vector<KindSummary> s = SummarizeKinds(samples, 100, 2, 0.85);
  ASSERT_EQ(s.size(), static_cast<size_t>(kMatrixKinds));
  const KindSummary& gemm = s[static_cast<size_t>(MatrixKind::kGemm)];
  EXPECT_EQ(gemm.kernels, 2);
  EXPECT_DOUBLE_EQ(gemm.gflops(), 14e9 * 1e-9 / 0.2);
  EXPECT_EQ(gemm.compute_bound, 2);
  EXPECT_EQ(gemm.compute_bound_at, 1);
  const KindSummary& gemv = s[static_cast<size_t>(MatrixKind::kGemv)];
  EXPECT_EQ(gemv.kernels, 1);
  EXPECT_EQ(gemv.compute_bound, 0);
  EXPECT_EQ(s[static_cast<size_t>(MatrixKind::kDepthwiseConv)].kernels, 0);
}

}  // namespace
}  // namespace mltune::bench
