// The cpu tile baseline's assumptions, on hand-made kernel features: a GEMM runs at 90% of peak
// through oneDNN and 50% generated, `parallel` buys the measurement's threads and nothing more,
// and a memory-bound kernel's configurations tie.
#include <cmath>

#include "gtest/gtest.h"
#include "optimizers/cost_model_training/baselines.h"

namespace mltune::opt::cost_model_training {
namespace {

using costmodels::features::Configuration;
using costmodels::features::KernelGraph;

// Kernel feature slots (costmodels/features/kernel_features.cc), stored as log2(1 + x).
KernelGraph Kernel(double flops, double bytes, bool matmul) {
  KernelGraph g;
  g.kernel_features.assign(costmodels::features::kKernelFeatures, 0.f);
  g.kernel_features[0] = static_cast<float>(std::log2(1 + flops));
  g.kernel_features[2] = static_cast<float>(std::log2(1 + bytes / 2));
  g.kernel_features[3] = static_cast<float>(std::log2(1 + bytes / 2));
  g.kernel_features[9] = matmul ? 1.f : 0.f;
  return g;
}

TEST(CpuTileSecondsTest, ParallelBuysTheMeasuredThreadsOnly) {
  // 2 GFLOP over 12 MB: compute-bound at this machine's peak and bandwidth.
  const KernelGraph gemm = Kernel(2e9, 12e6, true);
  const Configuration onednn = {{"impl", 1}, {"parallel", 0}};
  const Configuration generated = {{"impl", 0}, {"parallel", 0}};
  const Configuration generated_parallel = {{"impl", 0}, {"parallel", 1}};
  EXPECT_NEAR(CpuTileSeconds(gemm, onednn, 1), 2e9 / (kCpuPeakFlops * 0.9), 1e-4);
  EXPECT_NEAR(CpuTileSeconds(gemm, generated, 1), 2e9 / (kCpuPeakFlops * 0.5), 1e-4);
  // One thread: `parallel` changes nothing, so oneDNN ranks first.
  EXPECT_DOUBLE_EQ(CpuTileSeconds(gemm, generated_parallel, 1), CpuTileSeconds(gemm, generated, 1));
  EXPECT_LT(CpuTileSeconds(gemm, onednn, 1), CpuTileSeconds(gemm, generated_parallel, 1));
  // Two threads: the generated GEMM on both cores beats oneDNN on one.
  EXPECT_NEAR(CpuTileSeconds(gemm, generated_parallel, 2), 2e9 / kCpuPeakFlops, 1e-4);
  EXPECT_LT(CpuTileSeconds(gemm, generated_parallel, 2), CpuTileSeconds(gemm, onednn, 2));
}

TEST(CpuTileSecondsTest, MemoryBoundKernelsTieAcrossConfigurations) {
  // 1 MFLOP over 400 MB: the bandwidth decides.
  const KernelGraph stream = Kernel(1e6, 400e6, false);
  const double base = CpuTileSeconds(stream, {}, 1);
  EXPECT_NEAR(base, 400e6 / kCpuBandwidth, 1e-6);
  EXPECT_DOUBLE_EQ(CpuTileSeconds(stream, {{"simd", 0}, {"unroll", 1}, {"parallel", 1}}, 2), base);
  // Compute-bound, the same switches count: simd off costs 8x.
  const KernelGraph compute = Kernel(1e10, 1e3, false);
  EXPECT_NEAR(CpuTileSeconds(compute, {{"simd", 0}}, 1) / CpuTileSeconds(compute, {}, 1), 8, 1e-6);
}

}  // namespace
}  // namespace mltune::opt::cost_model_training
