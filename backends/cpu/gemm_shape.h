// The matrix products behind a dot or convolution kernel, and the GEMM parameters that can change
// the code generated for them. The code generator (codegen.cc) and the parameter lists
// (lowering.cc) both read this, so a choice offered to the tuner always changes the program.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "backends/cpu/lowering.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

// `batch` independent products of an [m, k] by a [k, n] row-major matrix. A dot: batch = its
// batch dimensions, m / n = the lhs / rhs free dimensions, k = the contracted ones. A
// convolution through im2col: batch = feature groups, m = images x output positions, k = input
// channels per group x window positions, n = output channels per group.
struct GemmShape {
  int64_t batch = 1;
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  // One row or one column per product: the generated GEMM takes its matrix-vector path, which
  // has no register tile and no cache blocks.
  bool matrix_vector() const { return m == 1 || n == 1; }
};
GemmShape GemmShapeOf(const ir::Instruction& dot_or_convolution);

// Whether a dot, or a convolution that oneDNN's primitive does not take, defaults to dnnl_sgemm
// (impl 1) rather than the generated GEMM where the build has oneDNN: products with more than
// one column and at least 64K multiply-adds each, as bench/gemm_defaults measured on the zoo.
bool PreferOneDnnGemm(const GemmShape& shape);

// The convolution kernels' `impl` choice of the generated depthwise kernel (mt_dw_row).
inline constexpr int64_t kDepthwiseImpl = 4;
// The dot kernels' `impl` choice of oneDNN's matmul primitive over all the products of a batch
// at once (brgemm kernels), offered for batched products of more than one row and column.
inline constexpr int64_t kMatmulPrimitiveImpl = 5;
// The convolution kernels' `impl` choice of the generated grouped kernel (mt_gc_row).
inline constexpr int64_t kGroupedImpl = 6;
// Whether `conv` is a grouped convolution the generated grouped kernel computes: f32, more than
// one feature group, each group's output channels a multiple of 4 (a vector), no batch groups, 1
// or 2 spatial dimensions, and a window PlainConvolutionWindow accepts.
bool GroupedConvolutionFits(const ir::Instruction& conv);
// Whether a convolution GroupedConvolutionFits defaults to the grouped kernel rather than
// oneDNN's primitive: groups of 8 or 16 output channels. Narrower groups take 4-lane vectors (half
// the multiply-add rate); wider ones are GEMMs oneDNN's blocking serves as well or better
// (bench/results_gemm_defaults_grouped.md).
bool PreferGroupedKernel(const ir::Instruction& conv);
// Whether `conv` is a depthwise convolution the generated depthwise kernel computes: f32, one
// input and one output channel per feature group, no batch groups, 1 or 2 spatial dimensions,
// no base (lhs) dilation, window reversal or negative padding.
bool DepthwiseConvolutionFits(const ir::Instruction& conv);
// Whether convolution `conv`'s window has no base (lhs) dilation, no reversal and no negative
// padding, which the direct kernels (oneDNN's, the depthwise one) do not compute.
bool PlainConvolutionWindow(const ir::Instruction& conv);

// The generated GEMM's parameters with every choice, the default first: `micro` the register
// tile (MicroKernel), `mc` / `kc` / `nc` the cache blocks of the lhs rows, the contraction and
// the rhs columns.
std::vector<KernelParam> GemmParams();
// The default of GemmParams' parameter `name` (what the generator uses where a kernel has no
// such parameter because no choice of it changes the code); 0 for another name.
int64_t GemmParamDefault(std::string_view name);
// Whether `name` is one of GemmParams' parameters.
bool IsGemmParam(std::string_view name);
// GemmParams less what cannot change the code for `shape`: all four on a matrix-vector product;
// otherwise a cache block at least as large as its dimension covers it in one block, as any
// larger one does, so of those choices only the first listed stays; a parameter left with one
// choice goes (that choice is then its default).
std::vector<KernelParam> GemmParamsFor(const GemmShape& shape);

}  // namespace mltune::backends::cpu
