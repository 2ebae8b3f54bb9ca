#include "frontends/onnx/nn_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace mltune::ir::onnx {

// Shorthands for operands of one shape (cannot fail).
Instruction* Bin(Emitter& b, Opcode op, Instruction* x, Instruction* y) {
  return b.Must(b.Add(op, {x, y}), x);
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

// The smallest value of `type`: the identity of a max reduction.
double Lowest(PrimitiveType type) {
  if (IsFloatingPoint(type)) return -std::numeric_limits<double>::infinity();
  if (IsUnsignedIntegral(type) || type == PrimitiveType::kPred) return 0;
  return -std::ldexp(1.0, BitWidth(type) - 1);
}

// `v` (of rank 1, extent x.dims[dim]) broadcast along dimension `dim` of x's shape.
Instruction* AlongDim(Emitter& b, Instruction* v, Instruction* x, int64_t dim) {
  return b.Broadcast(v, x->shape().dimensions(), {dim});
}

// x reduced over `dims` and broadcast back to x's shape.
Instruction* ReduceKeep(Emitter& b, Instruction* x, const std::vector<int64_t>& dims,
                        Opcode combiner, double init) {
  Instruction* r = b.Reduce(x, dims, combiner, init);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < x->shape().rank(); ++i) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(i);
  }
  return b.Broadcast(r, x->shape().dimensions(), kept);
}

int64_t Count(Instruction* x, const std::vector<int64_t>& dims) {
  int64_t c = 1;
  for (int64_t d : dims) c *= x->shape().dimensions(d);
  return c;
}

// Mean over `dims`, broadcast back to x's shape.
Instruction* MeanKeep(Emitter& b, Instruction* x, const std::vector<int64_t>& dims) {
  Instruction* s = ReduceKeep(b, x, dims, Opcode::kAdd, 0);
  return Bin(b, Opcode::kDivide, s, b.Full(s, static_cast<double>(Count(x, dims))));
}

absl::StatusOr<Instruction*> Convolution(Emitter& b, Instruction* lhs, Instruction* rhs,
                                         const ConvolutionDimensionNumbers& dn,
                                         const Window& window, int64_t groups) {
  return b.Add(Opcode::kConvolution, {lhs, rhs}, [&](Instruction& i) {
    i.conv_dnums = dn;
    i.window = window;
    i.feature_group_count = groups;
  });
}

absl::StatusOr<SpatialWindow> ComputeWindow(NodeContext& n, const std::vector<int64_t>& in,
                                            const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t ns = in.size();
  SpatialWindow w;
  w.kernel = kernel;
  MLTUNE_ASSIGN(strides, n.attr_ints("strides", std::vector<int64_t>(ns, 1)));
  MLTUNE_ASSIGN(dilations, n.attr_ints("dilations", std::vector<int64_t>(ns, 1)));
  MLTUNE_ASSIGN(pads, n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0)));
  MLTUNE_ASSIGN(auto_pad, n.attr_string("auto_pad", "NOTSET"));
  if (strides.size() != ns || dilations.size() != ns || pads.size() != 2 * ns ||
      kernel.size() != ns) {
    return n.Error(absl::StrCat("strides, dilations, kernel_shape and pads must have ", ns,
                                " (pads ", 2 * ns, ") entries for ", ns, " spatial dimensions"));
  }
  for (size_t i = 0; i < ns; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1) {
      return n.Error("strides, dilations and kernel_shape must be positive");
    }
  }
  w.strides = strides;
  w.dilations = dilations;
  for (size_t i = 0; i < ns; ++i) {
    const int64_t k = (kernel[i] - 1) * dilations[i] + 1;
    int64_t lo = pads[i], hi = pads[i + ns], out;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + k - in[i]);
      lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    } else {
      if (auto_pad == "VALID") {
        lo = hi = 0;
      } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
        return n.Error(absl::StrCat("auto_pad '", auto_pad,
                                    "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
      }
      const int64_t span = in[i] + lo + hi - k;
      if (span < 0) {
        return n.Error(absl::StrCat("kernel extent ", k, " exceeds the padded input extent ",
                                    in[i] + lo + hi, " in spatial dimension ", i));
      }
      out = (ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
      // A window must start inside the input or its leading padding.
      if (ceil_mode && (out - 1) * strides[i] >= in[i] + lo) --out;
    }
    w.pad_lo.push_back(lo);
    w.pad_hi.push_back(hi);
    w.out.push_back(out);
  }
  return w;
}

std::vector<int64_t> SpatialDims(Instruction* x) {
  const auto& d = x->shape().dimensions();
  return std::vector<int64_t>(d.begin() + 2, d.end());
}

}  // namespace mltune::ir::onnx
