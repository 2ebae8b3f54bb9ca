// Linear quantization: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, per tensor or
// per axis, with ONNX's round-half-to-even and saturation.
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/nn_util.h"

namespace mltune::ir::onnx {
namespace {

// A per-axis scale or zero point ([C]) shaped to broadcast against x along `axis`; a scalar or
// one-element tensor as a scalar.
absl::StatusOr<Instruction*> AlongAxis(NodeContext& n, Instruction* v, Instruction* x) {
  Emitter& b = n.b();
  if (v->shape().ElementCount() == 1) return b.Reshape(v, {});
  if (v->shape().rank() != 1) return n.Unsupported("blocked quantization (scale of rank > 1)");
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 1));
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, x->shape().rank()));
  if (x->shape().dimensions(axis) != v->shape().dimensions(0)) {
    return n.Error(absl::StrCat("the scale has ", v->shape().dimensions(0), " values for axis ",
                                axis, " of extent ", x->shape().dimensions(axis)));
  }
  return b.Broadcast(v, x->shape().dimensions(), {axis});
}

// round-half-even(x) clamped to `type`'s range and converted to it.
absl::StatusOr<Instruction*> Saturate(Emitter& b, Instruction* x, PrimitiveType type) {
  double lo = 0, hi = 255;
  if (type == PrimitiveType::kS8) {
    lo = -128;
    hi = 127;
  } else if (type == PrimitiveType::kS32) {
    lo = std::numeric_limits<int32_t>::min();
    hi = std::numeric_limits<int32_t>::max();
  } else if (type == PrimitiveType::kU16) {
    hi = 65535;
  } else if (type == PrimitiveType::kS16) {
    lo = -32768;
    hi = 32767;
  }
  Instruction* r = b.Unary(Opcode::kRoundNearestEven, x);
  MLTUNE_ASSIGN(c, b.Add(Opcode::kClamp, {b.Full(r, lo), r, b.Full(r, hi)}));
  return b.Convert(c, type);
}

Outputs QuantizeLinear(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(scale, n.required_input(1));
  Emitter& b = n.b();
  const PrimitiveType out =
      n.has_input(2) ? n.input(2)->shape().element_type() : PrimitiveType::kU8;
  // Computed in f32 (f64 inputs stay f64), as the reference computes x / scale.
  const PrimitiveType ft =
      x->shape().element_type() == PrimitiveType::kF64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
  MLTUNE_ASSIGN(s, AlongAxis(n, b.Convert(scale, ft), x));
  MLTUNE_ASSIGN(q, b.Binary(Opcode::kDivide, b.Convert(x, ft), s));
  Instruction* y = b.Unary(Opcode::kRoundNearestEven, q);
  if (n.has_input(2)) {
    MLTUNE_ASSIGN(zp, AlongAxis(n, b.Convert(n.input(2), ft), x));
    MLTUNE_ASSIGN(shifted, b.Binary(Opcode::kAdd, y, zp));
    y = shifted;
  }
  return One(Saturate(b, y, out));
}

Outputs DequantizeLinear(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(scale, n.required_input(1));
  Emitter& b = n.b();
  const PrimitiveType ft = scale->shape().element_type();
  Instruction* y = b.Convert(x, ft);
  if (n.has_input(2)) {
    MLTUNE_ASSIGN(zp, AlongAxis(n, b.Convert(n.input(2), ft), x));
    MLTUNE_ASSIGN(d, b.Binary(Opcode::kSubtract, y, zp));
    y = d;
  }
  MLTUNE_ASSIGN(s, AlongAxis(n, scale, x));
  return One(b.Binary(Opcode::kMultiply, y, s));
}

Outputs DynamicQuantizeLinear(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  Emitter& b = n.b();
  std::vector<int64_t> all(x->shape().rank());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  // The range always includes 0, so that 0 is exactly representable.
  Instruction* hi = b.Reduce(x, all, Opcode::kMaximum, 0);
  Instruction* lo = b.Reduce(x, all, Opcode::kMinimum, 0);
  const PrimitiveType t = x->shape().element_type();
  MLTUNE_ASSIGN(range, b.Binary(Opcode::kSubtract, hi, lo));
  MLTUNE_ASSIGN(scale, b.Binary(Opcode::kDivide, range, b.Scalar(t, 255)));
  MLTUNE_ASSIGN(neg_lo_over, b.Binary(Opcode::kDivide, b.Unary(Opcode::kNegate, lo), scale));
  MLTUNE_ASSIGN(zp, Saturate(b, neg_lo_over, PrimitiveType::kU8));
  MLTUNE_ASSIGN(q, b.Binary(Opcode::kDivide, x, scale));
  MLTUNE_ASSIGN(shifted,
                b.Binary(Opcode::kAdd, b.Unary(Opcode::kRoundNearestEven, q), b.Convert(zp, t)));
  MLTUNE_ASSIGN(y, Saturate(b, shifted, PrimitiveType::kU8));
  return std::vector<Instruction*>{y, scale, zp};
}

// x - zero_point in s32, the zero point a scalar or, when it has x's extent on `dim`, a vector
// along it (per row of a MatMul's A, per column of B, per output channel of a Conv's weights).
absl::StatusOr<Instruction*> Centered(NodeContext& n, Instruction* x, int64_t zp_input,
                                      int64_t dim) {
  Emitter& b = n.b();
  Instruction* xi = b.Convert(x, PrimitiveType::kS32);
  if (!n.has_input(zp_input)) return xi;
  Instruction* zp = b.Convert(n.input(zp_input), PrimitiveType::kS32);
  if (zp->shape().ElementCount() == 1) {
    zp = b.Broadcast(b.Reshape(zp, {}), xi->shape().dimensions(), {});
  } else if (zp->shape().rank() == 1 && dim >= 0 &&
             zp->shape().dimensions(0) == xi->shape().dimensions(dim)) {
    zp = b.Broadcast(zp, xi->shape().dimensions(), {dim});
  } else {
    return n.Error(absl::StrCat("zero point ", zp->shape().ToString(false), " does not match ",
                                x->shape().ToString(false)));
  }
  return b.Binary(Opcode::kSubtract, xi, zp);
}

// round(acc * scale + zero_point) saturated to the zero point's type (u8 when absent).
absl::StatusOr<Instruction*> Requantize(NodeContext& n, Instruction* acc, Instruction* scale,
                                        int64_t zp_input) {
  Emitter& b = n.b();
  MLTUNE_ASSIGN(y, b.Binary(Opcode::kMultiply, b.Convert(acc, PrimitiveType::kF32), scale));
  PrimitiveType out = PrimitiveType::kU8;
  if (n.has_input(zp_input)) {
    out = n.input(zp_input)->shape().element_type();
    MLTUNE_ASSIGN(shifted,
                  b.Binary(Opcode::kAdd, y,
                           b.Reshape(b.Convert(n.input(zp_input), PrimitiveType::kF32), {})));
    y = shifted;
  }
  return Saturate(b, y, out);
}

Instruction* ScalarF32(Emitter& b, Instruction* x) {
  return b.Reshape(b.Convert(x, PrimitiveType::kF32), {});
}

Outputs MatMulInteger(NodeContext& n) {
  MLTUNE_ASSIGN(a, n.required_input(0));
  MLTUNE_ASSIGN(c, n.required_input(1));
  MLTUNE_ASSIGN(ai, Centered(n, a, 2, a->shape().rank() - 2));
  MLTUNE_ASSIGN(ci, Centered(n, c, 3, c->shape().rank() - 1));
  return One(NumpyMatMul(n, ai, ci));
}

Outputs QLinearMatMul(NodeContext& n) {
  for (int64_t i = 0; i < 8; ++i) {
    if (!n.has_input(i)) return n.Error(absl::StrCat("input ", i, " is required"));
  }
  Emitter& b = n.b();
  Instruction* a = n.input(0);
  Instruction* c = n.input(3);
  MLTUNE_ASSIGN(ai, Centered(n, a, 2, a->shape().rank() - 2));
  MLTUNE_ASSIGN(ci, Centered(n, c, 5, c->shape().rank() - 1));
  MLTUNE_ASSIGN(acc, NumpyMatMul(n, ai, ci));
  if (n.input(1)->shape().ElementCount() != 1 || n.input(4)->shape().ElementCount() != 1) {
    return n.Unsupported("per-axis scales in QLinearMatMul");
  }
  MLTUNE_ASSIGN(ab,
                b.Binary(Opcode::kMultiply, ScalarF32(b, n.input(1)), ScalarF32(b, n.input(4))));
  MLTUNE_ASSIGN(scale, b.Binary(Opcode::kDivide, ab, ScalarF32(b, n.input(6))));
  return One(Requantize(n, acc, scale, 7));
}

Outputs ConvInteger(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(w, n.required_input(1));
  MLTUNE_ASSIGN(xi, Centered(n, x, 2, -1));
  MLTUNE_ASSIGN(wi, Centered(n, w, 3, 0));
  return One(ConvolveNode(n, xi, wi));
}

Outputs QLinearConv(NodeContext& n) {
  for (int64_t i = 0; i < 8; ++i) {
    if (!n.has_input(i)) return n.Error(absl::StrCat("input ", i, " is required"));
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(xi, Centered(n, n.input(0), 2, -1));
  MLTUNE_ASSIGN(wi, Centered(n, n.input(3), 5, 0));
  MLTUNE_ASSIGN(acc, ConvolveNode(n, xi, wi));
  if (n.has_input(8)) {
    Instruction* bias = b.Convert(n.input(8), PrimitiveType::kS32);
    MLTUNE_ASSIGN(with_bias,
                  b.Binary(Opcode::kAdd, acc, b.Broadcast(bias, acc->shape().dimensions(), {1})));
    acc = with_bias;
  }
  // x_scale * w_scale / y_scale, w_scale per output channel or one value.
  Instruction* w_scale = b.Convert(n.input(4), PrimitiveType::kF32);
  if (w_scale->shape().ElementCount() == 1) {
    w_scale = b.Broadcast(b.Reshape(w_scale, {}), acc->shape().dimensions(), {});
  } else {
    w_scale = b.Broadcast(b.Reshape(w_scale, {w_scale->shape().ElementCount()}),
                          acc->shape().dimensions(), {1});
  }
  MLTUNE_ASSIGN(xs, b.Binary(Opcode::kDivide, ScalarF32(b, n.input(1)), ScalarF32(b, n.input(6))));
  MLTUNE_ASSIGN(scale, b.Binary(Opcode::kMultiply, w_scale, xs));
  return One(Requantize(n, acc, scale, 7));
}

}  // namespace

void RegisterQuantOps(OpRegistry& r) {
  r.Register("QuantizeLinear", QuantizeLinear);
  r.Register("DequantizeLinear", DequantizeLinear);
  r.Register("DynamicQuantizeLinear", DynamicQuantizeLinear);
  r.Register("MatMulInteger", MatMulInteger);
  r.Register("QLinearMatMul", QLinearMatMul);
  r.Register("ConvInteger", ConvInteger);
  r.Register("QLinearConv", QLinearConv);
}

}  // namespace mltune::ir::onnx
