#include "backends/cpu/gemm_shape.h"

#include <algorithm>
#include <utility>

namespace mltune::backends::cpu {

using ir::Instruction;
using ir::Opcode;

GemmShape GemmShapeOf(const Instruction& mm) {
  const std::vector<int64_t>& ld = mm.operand(0)->shape().dimensions();
  const std::vector<int64_t>& rd = mm.operand(1)->shape().dimensions();
  GemmShape s;
  if (mm.opcode() == Opcode::kDot) {
    const ir::DotDimensionNumbers& dn = *mm.dot_dnums;
    std::vector<bool> lused(ld.size(), false), rused(rd.size(), false);
    for (int64_t d : dn.lhs_batch_dimensions) {
      lused[static_cast<size_t>(d)] = true;
      s.batch *= ld[static_cast<size_t>(d)];
    }
    for (int64_t d : dn.lhs_contracting_dimensions) {
      lused[static_cast<size_t>(d)] = true;
      s.k *= ld[static_cast<size_t>(d)];
    }
    for (size_t d = 0; d < ld.size(); ++d) {
      if (!lused[d]) s.m *= ld[d];
    }
    for (int64_t d : dn.rhs_batch_dimensions) rused[static_cast<size_t>(d)] = true;
    for (int64_t d : dn.rhs_contracting_dimensions) rused[static_cast<size_t>(d)] = true;
    for (size_t d = 0; d < rd.size(); ++d) {
      if (!rused[d]) s.n *= rd[d];
    }
    return s;
  }
  const ir::ConvolutionDimensionNumbers& dn = *mm.conv_dnums;
  const std::vector<int64_t>& od = mm.shape().dimensions();
  const int64_t fgroups = std::max<int64_t>(1, mm.feature_group_count);
  const int64_t bgroups = std::max<int64_t>(1, mm.batch_group_count);
  const int64_t groups = fgroups * bgroups;
  s.batch = groups;
  s.m = ld[static_cast<size_t>(dn.input_batch_dimension)] / bgroups;
  for (int64_t d : dn.output_spatial_dimensions) s.m *= od[static_cast<size_t>(d)];
  s.k = ld[static_cast<size_t>(dn.input_feature_dimension)] / fgroups;
  for (int64_t d : dn.kernel_spatial_dimensions) s.k *= rd[static_cast<size_t>(d)];
  s.n = od[static_cast<size_t>(dn.output_feature_dimension)] / groups;
  return s;
}

bool PreferOneDnnGemm(const GemmShape& shape) {
  // Measured on the zoo's 117 distinct GEMM kernels (bench/results_gemm_defaults.md): dnnl_sgemm
  // ran 1.03-2.8x faster on all but a few. The generated GEMM kept matrix-times-vector products
  // (n = 1: 0.86-0.98x) and products under 64K multiply-adds (a 27x27x64 batch: 0.86-0.91x).
  // A vector times a matrix (m = 1, a batch-1 dense layer) reads the matrix once, as the generated
  // GEMV does at the same speed or faster (bench/cpu_roofline: 1.0-1.1x dnnl_sgemm's).
  return !shape.matrix_vector() && shape.m * shape.n * shape.k >= 64 * 1024;
}

namespace {

// What the row kernels (depthwise and grouped) share: an f32 convolution with elements, 1 or 2
// spatial dimensions, more than one feature group, no batch groups, and a plain window.
bool RowKernelConvolution(const ir::Instruction& conv) {
  if (conv.opcode() != ir::Opcode::kConvolution || !conv.conv_dnums.has_value()) return false;
  const size_t ns = conv.conv_dnums->input_spatial_dimensions.size();
  if (ns < 1 || ns > 2 || conv.batch_group_count > 1 || conv.feature_group_count < 2) {
    return false;
  }
  for (const ir::Instruction* x : {&conv, static_cast<const ir::Instruction*>(conv.operand(0)),
                                   static_cast<const ir::Instruction*>(conv.operand(1))}) {
    if (x->shape().element_type() != ir::PrimitiveType::kF32 || x->shape().ElementCount() == 0) {
      return false;
    }
  }
  return PlainConvolutionWindow(conv);
}

int64_t OutputChannels(const ir::Instruction& conv) {
  return conv.shape().dimensions()[static_cast<size_t>(conv.conv_dnums->output_feature_dimension)];
}

}  // namespace

bool DepthwiseConvolutionFits(const ir::Instruction& conv) {
  if (!RowKernelConvolution(conv)) return false;
  const int64_t channels = conv.operand(0)->shape().dimensions()[static_cast<size_t>(
      conv.conv_dnums->input_feature_dimension)];
  return conv.feature_group_count == channels && OutputChannels(conv) == channels;
}

bool GroupedConvolutionFits(const ir::Instruction& conv) {
  if (!RowKernelConvolution(conv)) return false;
  const int64_t out_channels = OutputChannels(conv), groups = conv.feature_group_count;
  return out_channels % groups == 0 && (out_channels / groups) % 4 == 0;
}

bool PreferGroupedKernel(const ir::Instruction& conv) {
  if (!GroupedConvolutionFits(conv)) return false;
  const int64_t group = OutputChannels(conv) / conv.feature_group_count;
  return group == 8 || group == 16;
}

bool PlainConvolutionWindow(const ir::Instruction& conv) {
  if (!conv.window.has_value()) return true;
  for (const ir::WindowDim& w : conv.window->dims) {
    if (w.base_dilation != 1 || w.window_reversal || w.padding_low < 0 || w.padding_high < 0 ||
        w.stride < 1 || w.window_dilation < 1) {
      return false;
    }
  }
  return true;
}

std::vector<KernelParam> GemmParams() {
  return {{"micro", {0, 1, 2, 3}},
          {"mc", {96, 48, 192, 384}},
          {"kc", {256, 128, 384, 512}},
          {"nc", {1024, 256, 512, 2048, 4096}}};
}

int64_t GemmParamDefault(std::string_view name) {
  for (const KernelParam& p : GemmParams()) {
    if (p.name == name) return p.choices.front();
  }
  return 0;
}

bool IsGemmParam(std::string_view name) {
  for (const KernelParam& p : GemmParams()) {
    if (p.name == name) return true;
  }
  return false;
}

std::vector<KernelParam> GemmParamsFor(const GemmShape& shape) {
  if (shape.matrix_vector()) return {};
  std::vector<KernelParam> params;
  for (KernelParam& p : GemmParams()) {
    const int64_t extent = p.name == "mc"   ? shape.m
                           : p.name == "kc" ? shape.k
                           : p.name == "nc" ? shape.n
                                            : 0;
    if (extent > 0) {
      // Blocks of `extent` or more all make one block; keep the first such choice.
      bool covered = false;
      std::erase_if(p.choices, [&](int64_t c) {
        if (c < extent) return false;
        return std::exchange(covered, true);
      });
    }
    if (p.choices.size() > 1) params.push_back(std::move(p));
  }
  return params;
}

}  // namespace mltune::backends::cpu
