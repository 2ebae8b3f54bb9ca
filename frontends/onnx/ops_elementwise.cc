// Elementwise ops: math, activations, comparisons and logic, casts, with numpy broadcasting.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/tensor.h"

namespace mltune::ir::onnx {
namespace {

OpConverter UnaryOp(Opcode opcode) {
  return [opcode](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    return One(n.b().Unary(opcode, x));
  };
}

OpConverter BinaryOp(Opcode opcode) {
  return [opcode](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(a, n.required_input(0));
    MLTUNE_ASSIGN(b, n.required_input(1));
    return One(n.b().Binary(opcode, a, b));
  };
}

OpConverter CompareOp(ComparisonDirection direction) {
  return [direction](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(a, n.required_input(0));
    MLTUNE_ASSIGN(b, n.required_input(1));
    return One(n.b().Compare(direction, a, b));
  };
}

// Max, Min, Sum, Mean: any number of inputs, broadcast together.
OpConverter VariadicOp(Opcode opcode, bool mean) {
  return [opcode, mean](NodeContext& n) -> Outputs {
    std::vector<Instruction*> xs;
    for (int64_t i = 0; i < n.input_count(); ++i) {
      if (n.has_input(i)) xs.push_back(n.input(i));
    }
    if (xs.empty()) return n.Error("needs at least one input");
    MLTUNE_ASSIGN(all, n.b().BroadcastAll(xs));
    Instruction* acc = all[0];
    for (size_t i = 1; i < all.size(); ++i) {
      MLTUNE_ASSIGN(next, n.b().Add(opcode, {acc, all[i]}));
      acc = next;
    }
    if (mean) {
      MLTUNE_ASSIGN(div, n.b().Binary(Opcode::kDivide, acc,
                                      n.b().Scalar(acc->shape().element_type(),
                                                   static_cast<double>(all.size()))));
      acc = div;
    }
    return One(acc);
  };
}

// f(x) built from x and scalar constants of x's type (`c(v)` makes one).
using UnaryBody = std::function<absl::StatusOr<Instruction*>(
    NodeContext&, Emitter&, Instruction*, const std::function<Instruction*(double)>&)>;

OpConverter Formula(UnaryBody body) {
  return [body](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    Emitter& b = n.b();
    auto c = [&](double v) { return b.Full(x, v); };
    return One(body(n, b, x, c));
  };
}

// Shorthands for the formulas below: all operands have x's shape.
Instruction* Bin(Emitter& b, Opcode op, Instruction* x, Instruction* y) {
  return b.Must(b.Add(op, {x, y}), x);
}
Instruction* Cmp(Emitter& b, ComparisonDirection d, Instruction* x, Instruction* y) {
  return b.Must(b.Compare(d, x, y), x);
}
Instruction* Sel(Emitter& b, Instruction* p, Instruction* x, Instruction* y) {
  return b.Must(b.Add(Opcode::kSelect, {p, x, y}), x);
}

absl::StatusOr<Instruction*> Sqrt1MinusSquare(Emitter& b, Instruction* x,
                                              const std::function<Instruction*(double)>& c) {
  return b.Unary(Opcode::kSqrt, Bin(b, Opcode::kSubtract, c(1), Bin(b, Opcode::kMultiply, x, x)));
}

Outputs Clip(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  Emitter& b = n.b();
  const PrimitiveType t = x->shape().element_type();
  Instruction* lo = nullptr;
  Instruction* hi = nullptr;
  if (n.opset() < 11) {
    MLTUNE_ASSIGN(min, n.attr_float("min", -std::numeric_limits<float>::max()));
    MLTUNE_ASSIGN(max, n.attr_float("max", std::numeric_limits<float>::max()));
    lo = b.Scalar(t, min);
    hi = b.Scalar(t, max);
  } else {
    lo = n.input(1);
    hi = n.input(2);
  }
  Instruction* y = x;
  if (lo != nullptr) {
    MLTUNE_ASSIGN(m, b.Binary(Opcode::kMaximum, y, lo));
    y = m;
  }
  if (hi != nullptr) {
    MLTUNE_ASSIGN(m, b.Binary(Opcode::kMinimum, y, hi));
    y = m;
  }
  return One(y);
}

Outputs Cast(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(to, n.attr_int("to"));
  absl::StatusOr<PrimitiveType> type = ElementTypeFromOnnx(static_cast<int32_t>(to));
  if (!type.ok()) return n.Unsupported(std::string(type.status().message()));
  return One(n.b().Convert(x, *type));
}

Outputs CastLike(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(like, n.required_input(1));
  return One(n.b().Convert(x, like->shape().element_type()));
}

Outputs Identity(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  return One(x);
}

Outputs Where(NodeContext& n) {
  MLTUNE_ASSIGN(p, n.required_input(0));
  MLTUNE_ASSIGN(x, n.required_input(1));
  MLTUNE_ASSIGN(y, n.required_input(2));
  return One(n.b().Select(p, x, y));
}

Outputs Pow(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(y, n.required_input(1));
  // The exponent may have another type (opset 12): computed in the base's type.
  const PrimitiveType t = x->shape().element_type();
  if (IsFloatingPoint(t) || !IsFloatingPoint(y->shape().element_type())) {
    return One(n.b().Binary(Opcode::kPower, x, n.b().Convert(y, t)));
  }
  // Integer base, float exponent: computed in the exponent's type, as numpy does, then cast.
  MLTUNE_ASSIGN(p, n.b().Binary(Opcode::kPower, n.b().Convert(x, y->shape().element_type()), y));
  return One(n.b().Convert(p, t));
}

Outputs Mod(NodeContext& n) {
  MLTUNE_ASSIGN(a, n.required_input(0));
  MLTUNE_ASSIGN(d, n.required_input(1));
  MLTUNE_ASSIGN(fmod, n.attr_int("fmod", 0));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(ad, b.BroadcastAll({a, d}));
  MLTUNE_ASSIGN(r, b.Add(Opcode::kRemainder, ad));
  const PrimitiveType t = r->shape().element_type();
  if (fmod != 0) return One(r);
  if (IsFloatingPoint(t)) return n.Error("fmod must be 1 for floating-point inputs");
  if (IsUnsignedIntegral(t)) return One(r);
  // Python's %: the remainder takes the divisor's sign.
  Instruction* zero = b.Full(r, 0);
  Instruction* nonzero = Cmp(b, ComparisonDirection::kNe, r, zero);
  Instruction* r_neg = Cmp(b, ComparisonDirection::kLt, r, zero);
  Instruction* d_neg = Cmp(b, ComparisonDirection::kLt, ad[1], zero);
  Instruction* differ = Cmp(b, ComparisonDirection::kNe, r_neg, d_neg);
  Instruction* fix = Bin(b, Opcode::kAnd, nonzero, differ);
  return One(Sel(b, fix, Bin(b, Opcode::kAdd, r, ad[1]), r));
}

Outputs BitShift(NodeContext& n) {
  MLTUNE_ASSIGN(a, n.required_input(0));
  MLTUNE_ASSIGN(s, n.required_input(1));
  MLTUNE_ASSIGN(direction, n.attr_string("direction"));
  if (direction == "LEFT") return One(n.b().Binary(Opcode::kShiftLeft, a, s));
  if (direction == "RIGHT") return One(n.b().Binary(Opcode::kShiftRightLogical, a, s));
  return n.Error(absl::StrCat("direction must be LEFT or RIGHT, got '", direction, "'"));
}

Outputs IsInf(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(neg, n.attr_int("detect_negative", 1));
  MLTUNE_ASSIGN(pos, n.attr_int("detect_positive", 1));
  Emitter& b = n.b();
  const double inf = std::numeric_limits<double>::infinity();
  Instruction* is_pos = Cmp(b, ComparisonDirection::kEq, x, b.Full(x, inf));
  Instruction* is_neg = Cmp(b, ComparisonDirection::kEq, x, b.Full(x, -inf));
  if (neg && pos) return One(Bin(b, Opcode::kOr, is_pos, is_neg));
  if (pos) return One(is_pos);
  if (neg) return One(is_neg);
  return One(b.Full(PrimitiveType::kPred, x->shape().dimensions(), 0));
}

Outputs PRelu(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(slope, n.required_input(1));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(xs, b.BroadcastAll({x, slope}));
  Instruction* neg = Cmp(b, ComparisonDirection::kLt, xs[0], b.Full(xs[0], 0));
  return One(Sel(b, neg, Bin(b, Opcode::kMultiply, xs[0], xs[1]), xs[0]));
}

using C = std::function<Instruction*(double)>;

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  r.Register("Abs", UnaryOp(Opcode::kAbs));
  r.Register("Neg", UnaryOp(Opcode::kNegate));
  r.Register("Exp", UnaryOp(Opcode::kExp));
  r.Register("Log", UnaryOp(Opcode::kLog));
  r.Register("Sqrt", UnaryOp(Opcode::kSqrt));
  r.Register("Ceil", UnaryOp(Opcode::kCeil));
  r.Register("Floor", UnaryOp(Opcode::kFloor));
  r.Register("Sin", UnaryOp(Opcode::kSin));
  r.Register("Cos", UnaryOp(Opcode::kCos));
  r.Register("Tan", UnaryOp(Opcode::kTan));
  r.Register("Tanh", UnaryOp(Opcode::kTanh));
  r.Register("Sigmoid", UnaryOp(Opcode::kLogistic));
  r.Register("Erf", UnaryOp(Opcode::kErf));
  r.Register("Sign", UnaryOp(Opcode::kSign));
  r.Register("Round", UnaryOp(Opcode::kRoundNearestEven));
  r.Register("Not", UnaryOp(Opcode::kNot));
  r.Register("Add", BinaryOp(Opcode::kAdd));
  r.Register("Sub", BinaryOp(Opcode::kSubtract));
  r.Register("Mul", BinaryOp(Opcode::kMultiply));
  r.Register("Div", BinaryOp(Opcode::kDivide));
  r.Register("And", BinaryOp(Opcode::kAnd));
  r.Register("Or", BinaryOp(Opcode::kOr));
  r.Register("Xor", BinaryOp(Opcode::kXor));
  r.Register("Equal", CompareOp(ComparisonDirection::kEq));
  r.Register("Greater", CompareOp(ComparisonDirection::kGt));
  r.Register("GreaterOrEqual", CompareOp(ComparisonDirection::kGe));
  r.Register("Less", CompareOp(ComparisonDirection::kLt));
  r.Register("LessOrEqual", CompareOp(ComparisonDirection::kLe));
  r.Register("Max", VariadicOp(Opcode::kMaximum, false));
  r.Register("Min", VariadicOp(Opcode::kMinimum, false));
  r.Register("Sum", VariadicOp(Opcode::kAdd, false));
  r.Register("Mean", VariadicOp(Opcode::kAdd, true));
  r.Register("Pow", Pow);
  r.Register("Mod", Mod);
  r.Register("BitShift", BitShift);
  r.Register("Clip", Clip);
  r.Register("Cast", Cast);
  r.Register("CastLike", CastLike);
  r.Register("Identity", Identity);
  r.Register("Where", Where);
  r.Register("IsInf", IsInf);
  r.Register("PRelu", PRelu);
  r.Register("IsNaN", Formula([](NodeContext&, Emitter& b, Instruction* x, const C&) {
               return b.Compare(ComparisonDirection::kNe, x, x);
             }));
  r.Register("Reciprocal", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               return b.Add(Opcode::kDivide, {c(1), x});
             }));
  r.Register("Relu", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               return b.Add(Opcode::kMaximum, {x, c(0)});
             }));
  r.Register("Atan", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               return b.Add(Opcode::kAtan2, {x, c(1)});
             }));
  r.Register("Asin", Formula([](NodeContext&, Emitter& b, Instruction* x,
                                const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(s, Sqrt1MinusSquare(b, x, c));
               return b.Add(Opcode::kAtan2, {x, s});
             }));
  r.Register("Acos", Formula([](NodeContext&, Emitter& b, Instruction* x,
                                const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(s, Sqrt1MinusSquare(b, x, c));
               return b.Add(Opcode::kAtan2, {s, x});
             }));
  r.Register("Sinh", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* e = b.Unary(Opcode::kExp, x);
               Instruction* en = b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x));
               return b.Add(Opcode::kMultiply, {Bin(b, Opcode::kSubtract, e, en), c(0.5)});
             }));
  r.Register("Cosh", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* e = b.Unary(Opcode::kExp, x);
               Instruction* en = b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x));
               return b.Add(Opcode::kMultiply, {Bin(b, Opcode::kAdd, e, en), c(0.5)});
             }));
  r.Register("Asinh", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* r = b.Unary(
                   Opcode::kSqrt, Bin(b, Opcode::kAdd, Bin(b, Opcode::kMultiply, x, x), c(1)));
               return b.Unary(Opcode::kLog, Bin(b, Opcode::kAdd, x, r));
             }));
  r.Register("Acosh", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* r = b.Unary(
                   Opcode::kSqrt, Bin(b, Opcode::kSubtract, Bin(b, Opcode::kMultiply, x, x), c(1)));
               return b.Unary(Opcode::kLog, Bin(b, Opcode::kAdd, x, r));
             }));
  r.Register("Atanh", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* q = Bin(b, Opcode::kDivide, Bin(b, Opcode::kAdd, c(1), x),
                                    Bin(b, Opcode::kSubtract, c(1), x));
               return b.Add(Opcode::kMultiply, {b.Unary(Opcode::kLog, q), c(0.5)});
             }));
  r.Register("Softplus", Formula([](NodeContext&, Emitter& b, Instruction* x, const C&) {
               return b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, x));
             }));
  r.Register(
      "Softsign", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
        return b.Add(Opcode::kDivide, {x, Bin(b, Opcode::kAdd, c(1), b.Unary(Opcode::kAbs, x))});
      }));
  r.Register("Elu", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                               const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1.0f));
               Instruction* neg = Bin(b, Opcode::kMultiply, c(alpha), b.Unary(Opcode::kExpm1, x));
               return Sel(b, Cmp(b, ComparisonDirection::kLt, x, c(0)), neg, x);
             }));
  r.Register("Celu", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1.0f));
               Instruction* e = Bin(b, Opcode::kMultiply, c(alpha),
                                    b.Unary(Opcode::kExpm1, Bin(b, Opcode::kDivide, x, c(alpha))));
               return b.Add(Opcode::kAdd,
                            {Bin(b, Opcode::kMaximum, x, c(0)), Bin(b, Opcode::kMinimum, e, c(0))});
             }));
  r.Register("Selu", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1.67326319217681884765625f));
               MLTUNE_ASSIGN(gamma, n.attr_float("gamma", 1.05070102214813232421875f));
               Instruction* neg = Bin(b, Opcode::kMultiply, c(alpha), b.Unary(Opcode::kExpm1, x));
               Instruction* y = Sel(b, Cmp(b, ComparisonDirection::kLe, x, c(0)), neg, x);
               return b.Add(Opcode::kMultiply, {y, c(gamma)});
             }));
  r.Register("LeakyRelu", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                     const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 0.01f));
               return Sel(b, Cmp(b, ComparisonDirection::kLt, x, c(0)),
                          Bin(b, Opcode::kMultiply, x, c(alpha)), x);
             }));
  r.Register("ThresholdedRelu", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                           const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1.0f));
               return Sel(b, Cmp(b, ComparisonDirection::kGt, x, c(alpha)), x, c(0));
             }));
  r.Register("HardSigmoid", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                       const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 0.2f));
               MLTUNE_ASSIGN(beta, n.attr_float("beta", 0.5f));
               Instruction* y =
                   Bin(b, Opcode::kAdd, Bin(b, Opcode::kMultiply, x, c(alpha)), c(beta));
               return b.Add(Opcode::kMaximum, {c(0), Bin(b, Opcode::kMinimum, c(1), y)});
             }));
  r.Register("HardSwish", Formula([](NodeContext&, Emitter& b, Instruction* x, const C& c) {
               Instruction* y =
                   Bin(b, Opcode::kAdd, Bin(b, Opcode::kMultiply, x, c(1.0 / 6)), c(0.5));
               Instruction* hs = Bin(b, Opcode::kMaximum, c(0), Bin(b, Opcode::kMinimum, c(1), y));
               return b.Add(Opcode::kMultiply, {x, hs});
             }));
  r.Register("Shrink", Formula([](NodeContext& n, Emitter& b, Instruction* x,
                                  const C& c) -> absl::StatusOr<Instruction*> {
               MLTUNE_ASSIGN(bias, n.attr_float("bias", 0.0f));
               MLTUNE_ASSIGN(lambd, n.attr_float("lambd", 0.5f));
               Instruction* below = Cmp(b, ComparisonDirection::kLt, x, c(-lambd));
               Instruction* above = Cmp(b, ComparisonDirection::kGt, x, c(lambd));
               Instruction* y = Sel(b, above, Bin(b, Opcode::kSubtract, x, c(bias)), c(0));
               return Sel(b, below, Bin(b, Opcode::kAdd, x, c(bias)), y);
             }));
}

}  // namespace mltune::ir::onnx
