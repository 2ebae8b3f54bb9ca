// A convolution as oneDNN's convolution primitive sees it, and whether oneDNN has a real kernel
// for it on the buffers' own layouts. The generated code (impl 2 and 3) and the tuning space
// (which impls a convolution offers) read the same description.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/instruction.h"

namespace mltune::backends::cpu {

// oneDNN's logical dimensions over the HLO buffers' row-major strides (elements): source
// {N, C, spatial...}, weights {[G,] O, I, spatial...} (G when groups > 1), destination
// {N, O, spatial...}; per spatial dimension the window stride, oneDNN's dilation (0 is none)
// and the padding.
struct OneDnnConvShape {
  int spatial = 0;
  int64_t groups = 1;
  std::vector<int64_t> src_dims, src_strides, weight_dims, weight_strides, dst_dims, dst_strides;
  std::vector<int64_t> window_strides, dilations, pad_low, pad_high;
};

// `conv` must be a convolution that OneDnnConvolutionFits (lowering.cc) accepts.
OneDnnConvShape OneDnnConvShapeOf(const ir::Instruction& conv);

// Whether oneDNN dispatches an optimised kernel (not its reference loops) for `shape` on plain
// strided descriptors, i.e. without reorders. oneDNN 2.7 has them for NHWC source with HWIO
// weights and NCHW with OIHW; other orders (a weight gradient's f01b_i01o->01bf, OI-swapped
// weights) fall back to `ref:any`, measured 100-300x slower than the GEMM-based kernel on the
// same convolution. Answers are cached per shape; false when the build has no oneDNN.
bool OneDnnRunsPlainLayoutsNatively(const OneDnnConvShape& shape);

}  // namespace mltune::backends::cpu
