// Conv and ConvTranspose as convolutions (the transpose with the input dilated by the stride and
// the kernel reversed).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/nn_util.h"

namespace mltune::ir::onnx {

// kernel_shape is redundant with the weights' spatial dimensions; a model where they differ is
// malformed.
absl::Status CheckKernelShape(NodeContext& n, Instruction* w) {
  if (!n.has_attr("kernel_shape")) return absl::OkStatus();
  MLTUNE_ASSIGN(kernel, n.attr_ints("kernel_shape"));
  if (w->shape().rank() < 2 || kernel != SpatialDims(w)) {
    return n.Error(absl::StrCat("kernel_shape [", absl::StrJoin(kernel, ","),
                                "] differs from the weights ", w->shape().ToString(false)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Instruction*> ConvolveNode(NodeContext& n, Instruction* x, Instruction* w) {
  MLTUNE_ASSIGN(group, n.attr_int("group", 1));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  if (rank < 3 || w->shape().rank() != rank) {
    return n.Error(absl::StrCat("input ", x->shape().ToString(false), " and weights ",
                                w->shape().ToString(false), " must have the same rank >= 3"));
  }
  if (absl::Status s = CheckKernelShape(n, w); !s.ok()) return s;
  MLTUNE_ASSIGN(win, ComputeWindow(n, SpatialDims(x), SpatialDims(w), false));
  ConvolutionDimensionNumbers dn;
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 1;
  dn.kernel_output_feature_dimension = 0;
  dn.kernel_input_feature_dimension = 1;
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 1;
  dn.input_spatial_dimensions = dn.kernel_spatial_dimensions = dn.output_spatial_dimensions =
      Range(2, rank);
  Window window;
  for (int64_t i = 0; i < rank - 2; ++i) {
    WindowDim wd;
    wd.size = win.kernel[i];
    wd.stride = win.strides[i];
    wd.window_dilation = win.dilations[i];
    wd.padding_low = win.pad_lo[i];
    wd.padding_high = win.pad_hi[i];
    window.dims.push_back(wd);
  }
  absl::StatusOr<Instruction*> conv = Convolution(b, x, w, dn, window, group);
  if (!conv.ok()) return n.Error(std::string(conv.status().message()));
  return conv;
}

namespace {

// y plus the node's optional input 2, a bias per output channel (dimension 1).
absl::StatusOr<Instruction*> AddChannelBias(NodeContext& n, Instruction* y) {
  if (!n.has_input(2)) return y;
  Emitter& b = n.b();
  Instruction* bias = n.input(2);
  if (bias->shape().rank() != 1 || bias->shape().dimensions(0) != y->shape().dimensions(1)) {
    return n.Error(absl::StrCat("bias ", bias->shape().ToString(false), " must have ",
                                y->shape().dimensions(1), " elements"));
  }
  return Bin(b, Opcode::kAdd, y, AlongDim(b, b.Convert(bias, y->shape().element_type()), y, 1));
}

Outputs Conv(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(w, n.required_input(1));
  MLTUNE_ASSIGN(y, ConvolveNode(n, x, w));
  return One(AddChannelBias(n, y));
}

Outputs ConvTranspose(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(w, n.required_input(1));
  if (absl::Status s = CheckKernelShape(n, w); !s.ok()) return s;
  MLTUNE_ASSIGN(group, n.attr_int("group", 1));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank(), ns = rank - 2;
  if (rank < 3 || w->shape().rank() != rank) {
    return n.Error(absl::StrCat("input ", x->shape().ToString(false), " and weights ",
                                w->shape().ToString(false), " must have the same rank >= 3"));
  }
  const std::vector<int64_t> in = SpatialDims(x), kernel = SpatialDims(w);
  MLTUNE_ASSIGN(strides, n.attr_ints("strides", std::vector<int64_t>(ns, 1)));
  MLTUNE_ASSIGN(dilations, n.attr_ints("dilations", std::vector<int64_t>(ns, 1)));
  MLTUNE_ASSIGN(pads, n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0)));
  MLTUNE_ASSIGN(out_pad, n.attr_ints("output_padding", std::vector<int64_t>(ns, 0)));
  MLTUNE_ASSIGN(auto_pad, n.attr_string("auto_pad", "NOTSET"));
  std::vector<int64_t> out_shape;
  if (n.has_attr("output_shape")) {
    MLTUNE_ASSIGN(os, n.attr_ints("output_shape"));
    out_shape = os;
    // The full output shape (N, C, spatial...) is accepted too.
    if (static_cast<int64_t>(out_shape.size()) == rank) {
      out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    }
  }
  if (static_cast<int64_t>(strides.size()) != ns || static_cast<int64_t>(dilations.size()) != ns ||
      static_cast<int64_t>(pads.size()) != 2 * ns || static_cast<int64_t>(out_pad.size()) != ns ||
      (!out_shape.empty() && static_cast<int64_t>(out_shape.size()) != ns)) {
    return n.Error(absl::StrCat("strides, dilations, output_padding, output_shape and pads must ",
                                "have ", ns, " (pads ", 2 * ns, ") entries"));
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (same && out_shape.empty()) {
    for (int64_t i = 0; i < ns; ++i) out_shape.push_back(in[i] * strides[i]);
  }
  if (auto_pad == "VALID") std::fill(pads.begin(), pads.end(), 0);
  Window window;
  for (int64_t i = 0; i < ns; ++i) {
    if (strides[i] < 1 || dilations[i] < 1) {
      return n.Error("strides and dilations must be positive");
    }
    const int64_t k = (kernel[i] - 1) * dilations[i] + 1;
    int64_t lo = pads[i], hi = pads[i + ns];
    if (!out_shape.empty()) {
      const int64_t total = strides[i] * (in[i] - 1) + out_pad[i] + k - out_shape[i];
      // Floor division: a negative total (output_shape past the natural extent) pads the end.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (auto_pad == "SAME_UPPER") {
        lo = half;
        hi = total - lo;
      } else {
        hi = half;
        lo = total - hi;
      }
    }
    // A convolution over the input dilated by the stride, with the kernel flipped.
    WindowDim wd;
    wd.size = kernel[i];
    wd.window_dilation = dilations[i];
    wd.base_dilation = strides[i];
    wd.window_reversal = true;
    wd.padding_low = k - 1 - lo;
    wd.padding_high = k - 1 - hi + out_pad[i];
    window.dims.push_back(wd);
  }
  // Weights are (C, M/group, k...); the convolution takes (C/group, M, k...), group-major in M.
  const auto& wd = w->shape().dimensions();
  const int64_t c = wd[0], mg = wd[1];
  if (group < 1 || c % group != 0) {
    return n.Error(absl::StrCat("group ", group, " does not divide the ", c, " input channels"));
  }
  Instruction* kernel_x = w;
  if (group > 1) {
    std::vector<int64_t> split = {group, c / group, mg};
    split.insert(split.end(), kernel.begin(), kernel.end());
    std::vector<int64_t> perm = {1, 0, 2};
    for (int64_t i = 0; i < ns; ++i) perm.push_back(3 + i);
    std::vector<int64_t> merged = {c / group, group * mg};
    merged.insert(merged.end(), kernel.begin(), kernel.end());
    kernel_x = b.Reshape(b.Transpose(b.Reshape(w, split), perm), merged);
  }
  ConvolutionDimensionNumbers dn;
  dn.kernel_input_feature_dimension = 0;
  dn.kernel_output_feature_dimension = 1;
  dn.input_spatial_dimensions = dn.kernel_spatial_dimensions = dn.output_spatial_dimensions =
      Range(2, rank);
  absl::StatusOr<Instruction*> conv = Convolution(b, x, kernel_x, dn, window, group);
  if (!conv.ok()) return n.Error(std::string(conv.status().message()));
  Instruction* y = *conv;
  return One(AddChannelBias(n, y));
}

}  // namespace

void RegisterConvOps(OpRegistry& r) {
  r.Register("Conv", Conv);
  r.Register("ConvTranspose", ConvTranspose);
}

}  // namespace mltune::ir::onnx
