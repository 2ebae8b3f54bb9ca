// The kinds of matrix kernels (dots and convolutions) the CPU benchmarks report separately
// (bench/cpu_kinds, bench/gemm_defaults): each kind has its own limit and its own library choice,
// so one figure over all of them hides where a kernel falls short. The classification, FLOP count
// and arithmetic intensity are inline and take plain numbers (tests/bench/matrix_kinds_test.cc);
// MatrixDimsOf reads them off an instruction (matrix_kinds.cc).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mltune::ir {
class Instruction;
}

namespace mltune::bench {

enum class MatrixKind {
  kGemm,           // a dot, one product, m > 1 and n > 1
  kGemv,           // a dot, one product, m == 1 or n == 1
  kBatchedDot,     // a dot with batch dimensions (attention's products)
  kDenseConv,      // a convolution, one group, a window larger than 1x1
  kPointwiseConv,  // a convolution, one group, a 1x1 window
  kGroupedConv,    // a convolution with 1 < feature groups < input features
  kDepthwiseConv,  // a convolution with one feature group per input feature
};
inline constexpr int kMatrixKinds = 7;

inline std::string_view MatrixKindName(MatrixKind kind) {
  switch (kind) {
    case MatrixKind::kGemm:
      return "GEMM";
    case MatrixKind::kGemv:
      return "GEMV";
    case MatrixKind::kBatchedDot:
      return "batched dot";
    case MatrixKind::kDenseConv:
      return "dense conv";
    case MatrixKind::kPointwiseConv:
      return "pointwise conv";
    case MatrixKind::kGroupedConv:
      return "grouped conv";
    case MatrixKind::kDepthwiseConv:
      return "depthwise conv";
  }
  return "?";
}

// A dot or convolution as the products behind it (backends/cpu/gemm_shape.h's GemmShape: for a
// convolution batch = feature groups, m = images x output positions, k = input channels per group
// x window positions, n = output channels per group) and what tells the convolutions apart.
struct MatrixDims {
  bool convolution = false;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool pointwise = false;      // convolution: every window dimension of size 1
  int64_t feature_groups = 1;  // convolution: feature_group_count
  int64_t input_features = 1;  // convolution: the input's feature dimension
  int64_t bytes = 0;           // compulsory traffic: both operands read once, the result written
};

inline MatrixKind ClassifyMatrix(const MatrixDims& d) {
  if (!d.convolution) {
    if (d.batch > 1) return MatrixKind::kBatchedDot;
    return d.m == 1 || d.n == 1 ? MatrixKind::kGemv : MatrixKind::kGemm;
  }
  if (d.feature_groups > 1) {
    return d.feature_groups == d.input_features ? MatrixKind::kDepthwiseConv
                                                : MatrixKind::kGroupedConv;
  }
  return d.pointwise ? MatrixKind::kPointwiseConv : MatrixKind::kDenseConv;
}

// Multiply-adds counted as two FLOPs; a convolution's padding counted as work (as im2col does).
inline double MatrixFlops(const MatrixDims& d) {
  return 2.0 * static_cast<double>(d.batch) * static_cast<double>(d.m) * static_cast<double>(d.n) *
         static_cast<double>(d.k);
}

// FLOPs per compulsory byte; 0 without bytes.
inline double ArithmeticIntensity(const MatrixDims& d) {
  return d.bytes > 0 ? MatrixFlops(d) / static_cast<double>(d.bytes) : 0.0;
}

// One kernel's time inside a module's run.
struct KindSample {
  MatrixKind kind = MatrixKind::kGemm;
  double flops = 0, intensity = 0, seconds = 0;
};

struct KindSummary {
  int64_t kernels = 0;
  double flops = 0, seconds = 0;
  int64_t compute_bound = 0;     // intensity at or above the ridge point
  int64_t compute_bound_at = 0;  // of those, the kernels at or above `fraction` of the peak
  double gflops() const { return seconds > 0 ? flops * 1e-9 / seconds : 0.0; }
};

// Per kind (indexed by MatrixKind): totals, and how many kernels at or above `ridge` FLOPs per
// byte (peak over bandwidth: bandwidth cannot be their limit) run at `fraction` x `peak_gflops`.
inline std::vector<KindSummary> SummarizeKinds(const std::vector<KindSample>& samples,
                                               double peak_gflops, double ridge, double fraction) {
  std::vector<KindSummary> out(kMatrixKinds);
  for (const KindSample& s : samples) {
    KindSummary& k = out[static_cast<size_t>(s.kind)];
    ++k.kernels;
    k.flops += s.flops;
    k.seconds += s.seconds;
    if (s.intensity < ridge) continue;
    ++k.compute_bound;
    if (s.seconds > 0 && s.flops * 1e-9 / s.seconds >= fraction * peak_gflops) ++k.compute_bound_at;
  }
  return out;
}

// Reads a dot's or convolution's MatrixDims (matrix_kinds.cc; links mltune_cpu_backend).
MatrixDims MatrixDimsOf(const ir::Instruction& dot_or_convolution);

}  // namespace mltune::bench
