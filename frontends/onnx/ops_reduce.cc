// Reductions and what is built on them: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
// CumSum, TopK.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {
namespace {

int64_t Product(const std::vector<int64_t>& v, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p = CheckedMul(p, v[i]).value_or(INT64_MAX);
  return p;
}

// The smallest (or largest) value of `type`: the identity of max (or min) reductions.
Instruction* Extreme(Emitter& b, PrimitiveType type, bool lowest) {
  Literal l = *Literal::Create(Shape::Scalar(type));
  if (IsFloatingPoint(type)) {
    l.SetFromDouble(0, lowest ? -std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::infinity());
  } else if (IsUnsignedIntegral(type)) {
    const int bits = BitWidth(type);
    l.SetFromUint64(0, lowest ? 0 : (~uint64_t{0} >> (64 - bits)));
  } else if (IsSignedIntegral(type)) {
    const int bits = BitWidth(type);
    const int64_t max = static_cast<int64_t>(~uint64_t{0} >> (65 - bits));
    l.SetFromInt64(0, lowest ? -max - 1 : max);
  } else {
    l.SetFromInt64(0, lowest ? 0 : 1);  // pred
  }
  return b.Constant(std::move(l));
}

// reduce(x) over `dims` with `combiner` from the scalar `init`.
absl::StatusOr<Instruction*> ReduceWith(Emitter& b, Instruction* x,
                                        const std::vector<int64_t>& dims, Opcode combiner,
                                        Instruction* init) {
  Computation* f = b.ScalarComputation(combiner, x->shape().element_type());
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  return b.Add(Opcode::kReduce, {x, init}, [&](Instruction& i) {
    i.dimensions = sorted;
    i.mutable_called_computations().push_back(f);
  });
}

// `reduced` (x reduced over `dims`) with x's rank back: the reduced dimensions have extent 1.
Instruction* KeepDims(Emitter& b, Instruction* reduced, Instruction* x,
                      const std::vector<int64_t>& dims) {
  std::vector<int64_t> out = x->shape().dimensions();
  for (int64_t d : dims) out[d] = 1;
  return b.Reshape(reduced, out);
}

// max over `dims` of x, with x's dimensions (broadcast back).
absl::StatusOr<Instruction*> MaxBroadcast(Emitter& b, Instruction* x,
                                          const std::vector<int64_t>& dims) {
  const PrimitiveType t = x->shape().element_type();
  MLTUNE_ASSIGN(m, ReduceWith(b, x, dims, Opcode::kMaximum, Extreme(b, t, true)));
  return b.BroadcastTo(KeepDims(b, m, x, dims), x->shape().dimensions());
}

absl::StatusOr<Instruction*> SumBroadcast(Emitter& b, Instruction* x,
                                          const std::vector<int64_t>& dims) {
  Instruction* s = b.Reduce(x, dims, Opcode::kAdd, 0);
  return b.BroadcastTo(KeepDims(b, s, x, dims), x->shape().dimensions());
}

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// The reduced axes: the attribute before `input_from_opset`, input 1 from it. nullopt when the
// node reduces nothing (empty axes with noop_with_empty_axes).
absl::StatusOr<std::optional<std::vector<int64_t>>> ReducedAxes(NodeContext& n, int64_t rank,
                                                                int64_t input_from_opset) {
  std::vector<int64_t> axes;
  if (n.opset() < input_from_opset) {
    if (n.has_attr("axes")) {
      MLTUNE_ASSIGN(a, n.attr_ints("axes"));
      axes = a;
    }
  } else if (n.has_input(1)) {
    MLTUNE_ASSIGN(a, n.constant_ints(1));
    axes = a;
  }
  if (axes.empty()) {
    MLTUNE_ASSIGN(noop, n.attr_int("noop_with_empty_axes", 0));
    if (noop != 0 && n.opset() >= input_from_opset) return std::optional<std::vector<int64_t>>();
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
    return std::optional<std::vector<int64_t>>(axes);
  }
  MLTUNE_ASSIGN(sorted, n.NormalizeAxes(axes, rank));
  std::sort(sorted.begin(), sorted.end());
  return std::optional<std::vector<int64_t>>(sorted);
}

OpConverter ReduceOp(ReduceKind kind, int64_t axes_input_from_opset) {
  return [kind, axes_input_from_opset](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    MLTUNE_ASSIGN(keepdims, n.attr_int("keepdims", 1));
    MLTUNE_ASSIGN(axes_opt, ReducedAxes(n, x->shape().rank(), axes_input_from_opset));
    Emitter& b = n.b();
    const PrimitiveType t = x->shape().element_type();
    auto unary = [&](Opcode op, Instruction* v) { return b.Unary(op, v); };
    auto mul = [&](Instruction* u, Instruction* v) {
      return b.Must(b.Add(Opcode::kMultiply, {u, v}), u);
    };
    if (!axes_opt.has_value()) {
      // Reducing no axis applies the per-element part of the reduction only.
      switch (kind) {
        case ReduceKind::kL1:
        case ReduceKind::kL2:
          return One(unary(Opcode::kAbs, x));
        case ReduceKind::kLogSum:
          return One(unary(Opcode::kLog, x));
        case ReduceKind::kSumSquare:
          return One(mul(x, x));
        default:
          return One(x);
      }
    }
    const std::vector<int64_t>& axes = *axes_opt;
    Instruction* y = nullptr;
    switch (kind) {
      case ReduceKind::kSum:
        y = b.Reduce(x, axes, Opcode::kAdd, 0);
        break;
      case ReduceKind::kMean: {
        int64_t count = 1;
        for (int64_t a : axes) count *= x->shape().dimensions(a);
        Instruction* s = b.Reduce(x, axes, Opcode::kAdd, 0);
        MLTUNE_ASSIGN(m, b.Binary(Opcode::kDivide, s, b.Scalar(t, static_cast<double>(count))));
        y = m;
        break;
      }
      case ReduceKind::kMax:
      case ReduceKind::kMin: {
        const bool max = kind == ReduceKind::kMax;
        MLTUNE_ASSIGN(r, ReduceWith(b, x, axes, max ? Opcode::kMaximum : Opcode::kMinimum,
                                    Extreme(b, t, max)));
        y = r;
        break;
      }
      case ReduceKind::kProd:
        y = b.Reduce(x, axes, Opcode::kMultiply, 1);
        break;
      case ReduceKind::kL1:
        y = b.Reduce(unary(Opcode::kAbs, x), axes, Opcode::kAdd, 0);
        break;
      case ReduceKind::kL2: {
        // Integers: the square root in f64, truncated back as the reference does.
        Instruction* v = IsFloatingPoint(t) ? x : b.Convert(x, PrimitiveType::kF64);
        y = b.Convert(unary(Opcode::kSqrt, b.Reduce(mul(v, v), axes, Opcode::kAdd, 0)), t);
        break;
      }
      case ReduceKind::kLogSum:
        y = unary(Opcode::kLog, b.Reduce(x, axes, Opcode::kAdd, 0));
        break;
      case ReduceKind::kLogSumExp: {
        if (!IsFloatingPoint(t)) {
          return n.Unsupported(
              absl::StrCat("ReduceLogSumExp of ", std::string(PrimitiveTypeName(t))));
        }
        // max + log(sum(exp(x - max))), with max replaced by 0 where it is not finite.
        MLTUNE_ASSIGN(m, ReduceWith(b, x, axes, Opcode::kMaximum, Extreme(b, t, true)));
        MLTUNE_ASSIGN(finite, b.Add(Opcode::kIsFinite, {m}));
        MLTUNE_ASSIGN(safe_m, b.Select(finite, m, b.Full(m, 0)));
        MLTUNE_ASSIGN(mb, b.BroadcastTo(KeepDims(b, safe_m, x, axes), x->shape().dimensions()));
        MLTUNE_ASSIGN(d, b.Add(Opcode::kSubtract, {x, mb}));
        Instruction* s = b.Reduce(unary(Opcode::kExp, d), axes, Opcode::kAdd, 0);
        MLTUNE_ASSIGN(r, b.Add(Opcode::kAdd, {unary(Opcode::kLog, s), safe_m}));
        y = r;
        break;
      }
      case ReduceKind::kSumSquare:
        y = b.Reduce(mul(x, x), axes, Opcode::kAdd, 0);
        break;
    }
    if (keepdims != 0) y = KeepDims(b, y, x, axes);
    return One(y);
  };
}

// ArgMax/ArgMin: the extreme value, then the first (or last) index holding it.
OpConverter ArgOp(bool max) {
  return [max](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 0));
    MLTUNE_ASSIGN(keepdims, n.attr_int("keepdims", 1));
    MLTUNE_ASSIGN(last, n.attr_int("select_last_index", 0));
    const int64_t rank = x->shape().rank();
    if (rank == 0) return n.Error("input must have rank 1 or more");
    MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, rank));
    Emitter& b = n.b();
    const PrimitiveType t = x->shape().element_type();
    const auto& dims = x->shape().dimensions();
    if (dims[axis] == 0) return n.Error(absl::StrCat("axis ", axis, " has extent 0"));
    MLTUNE_ASSIGN(
        m, ReduceWith(b, x, {axis}, max ? Opcode::kMaximum : Opcode::kMinimum, Extreme(b, t, max)));
    MLTUNE_ASSIGN(mb, b.BroadcastTo(KeepDims(b, m, x, {axis}), dims));
    MLTUNE_ASSIGN(hit, b.Compare(ComparisonDirection::kEq, x, mb));
    if (IsFloatingPoint(t)) {
      // A NaN is the extreme, as numpy's argmax/argmin picks it.
      MLTUNE_ASSIGN(x_nan, b.Compare(ComparisonDirection::kNe, x, x));
      MLTUNE_ASSIGN(m_nan, b.Compare(ComparisonDirection::kNe, mb, mb));
      MLTUNE_ASSIGN(both, b.Add(Opcode::kAnd, {x_nan, m_nan}));
      MLTUNE_ASSIGN(h, b.Add(Opcode::kOr, {hit, both}));
      hit = h;
    }
    Instruction* iota = b.Iota(PrimitiveType::kS64, dims, axis);
    MLTUNE_ASSIGN(
        cand,
        b.Select(hit, iota, b.Full(PrimitiveType::kS64, dims, last ? -1.0 : double(dims[axis]))));
    MLTUNE_ASSIGN(idx, ReduceWith(b, cand, {axis}, last ? Opcode::kMaximum : Opcode::kMinimum,
                                  b.Scalar(PrimitiveType::kS64, last ? -1.0 : double(dims[axis]))));
    if (keepdims != 0) idx = KeepDims(b, idx, x, {axis});
    return One(idx);
  };
}

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// The op along dimension `axis` of x.
absl::StatusOr<Instruction*> SoftmaxAlong(NodeContext& n, Instruction* x, int64_t axis,
                                          SoftmaxKind kind) {
  Emitter& b = n.b();
  const auto& dims = x->shape().dimensions();
  if (kind == SoftmaxKind::kHardmax) {
    if (dims[axis] == 0) return x;
    MLTUNE_ASSIGN(m, MaxBroadcast(b, x, {axis}));
    MLTUNE_ASSIGN(hit, b.Compare(ComparisonDirection::kEq, x, m));
    Instruction* iota = b.Iota(PrimitiveType::kS64, dims, axis);
    const double none = static_cast<double>(dims[axis]);
    MLTUNE_ASSIGN(cand, b.Select(hit, iota, b.Full(PrimitiveType::kS64, dims, none)));
    MLTUNE_ASSIGN(
        first, ReduceWith(b, cand, {axis}, Opcode::kMinimum, b.Scalar(PrimitiveType::kS64, none)));
    MLTUNE_ASSIGN(fb, b.BroadcastTo(KeepDims(b, first, x, {axis}), dims));
    MLTUNE_ASSIGN(one, b.Compare(ComparisonDirection::kEq, iota, fb));
    return b.Convert(one, x->shape().element_type());
  }
  if (!IsFloatingPoint(x->shape().element_type())) {
    return n.Error(absl::StrCat("input must be floating-point, got ",
                                std::string(PrimitiveTypeName(x->shape().element_type()))));
  }
  MLTUNE_ASSIGN(m, MaxBroadcast(b, x, {axis}));
  MLTUNE_ASSIGN(shifted, b.Add(Opcode::kSubtract, {x, m}));
  Instruction* e = b.Unary(Opcode::kExp, shifted);
  MLTUNE_ASSIGN(s, SumBroadcast(b, e, {axis}));
  if (kind == SoftmaxKind::kSoftmax) return b.Add(Opcode::kDivide, {e, s});
  return b.Add(Opcode::kSubtract, {shifted, b.Unary(Opcode::kLog, s)});
}

OpConverter SoftmaxOp(SoftmaxKind kind) {
  return [kind](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    const int64_t rank = x->shape().rank();
    const bool flatten = n.opset() < 13;
    MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", flatten ? 1 : -1));
    if (rank == 0) {
      // A scalar is a one-element axis.
      MLTUNE_ASSIGN(y, SoftmaxAlong(n, n.b().Reshape(x, {1}), 0, kind));
      return One(n.b().Reshape(y, {}));
    }
    if (!flatten) {
      MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, rank));
      return One(SoftmaxAlong(n, x, axis, kind));
    }
    // Before opset 13 the input is seen as 2-D: dimensions before `axis` against the rest.
    const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    if (axis < 0 || axis > rank) {
      return n.Error(absl::StrCat("axis ", axis_attr, " is out of range for rank ", rank));
    }
    const auto& dims = x->shape().dimensions();
    Instruction* flat = n.b().Reshape(x, {Product(dims, 0, axis), Product(dims, axis, rank)});
    MLTUNE_ASSIGN(y, SoftmaxAlong(n, flat, 1, kind));
    return One(n.b().Reshape(y, dims));
  };
}

Outputs CumSum(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axis_values, n.constant_ints(1));
  if (axis_values.size() != 1) return n.Error("axis must hold one value");
  MLTUNE_ASSIGN(exclusive, n.attr_int("exclusive", 0));
  MLTUNE_ASSIGN(reverse, n.attr_int("reverse", 0));
  const int64_t rank = x->shape().rank();
  if (rank == 0) return n.Error("input must have rank 1 or more");
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_values[0], rank));
  Emitter& b = n.b();
  const int64_t extent = x->shape().dimensions(axis);
  if (extent == 0) return One(x);
  auto flip = [&](Instruction* v) -> absl::StatusOr<Instruction*> {
    return b.Add(Opcode::kReverse, {v}, [&](Instruction& i) { i.dimensions = {axis}; });
  };
  Instruction* y = x;
  if (reverse != 0) {
    MLTUNE_ASSIGN(r, flip(y));
    y = r;
  }
  // The window ending at each position covers it and everything before it.
  Window window;
  for (int64_t d = 0; d < rank; ++d) window.dims.push_back(WindowDim{});
  window.dims[axis].size = extent;
  window.dims[axis].padding_low = extent - 1;
  if (exclusive != 0) {
    // Shift by one instead of a negative padding: a zero first, the last element dropped.
    std::vector<int64_t> zero_dims = y->shape().dimensions();
    zero_dims[axis] = 1;
    MLTUNE_ASSIGN(shifted, b.Concatenate({b.Full(y->shape().element_type(), zero_dims, 0),
                                          b.SliceDim(y, axis, 0, extent - 1)},
                                         axis));
    y = shifted;
  }
  MLTUNE_ASSIGN(s, b.ReduceWindow(y, window, Opcode::kAdd, 0));
  y = s;
  if (reverse != 0) {
    MLTUNE_ASSIGN(r, flip(y));
    y = r;
  }
  return One(y);
}

Outputs TopK(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  // sorted=0 lets the values come in any order; sorted is one of them.
  n.IgnoreAttrs({"sorted"});
  int64_t k = 0;
  if (n.opset() < 10) {
    MLTUNE_ASSIGN(kv, n.attr_int("k"));
    k = kv;
  } else {
    MLTUNE_ASSIGN(kv, n.constant_ints(1));
    if (kv.size() != 1) return n.Error("K must hold one value");
    k = kv[0];
  }
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", -1));
  MLTUNE_ASSIGN(largest, n.attr_int("largest", 1));
  const int64_t rank = x->shape().rank();
  if (rank == 0) return n.Error("input must have rank 1 or more");
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, rank));
  const int64_t extent = x->shape().dimensions(axis);
  if (k < 0 || k > extent) {
    return n.Error(
        absl::StrCat("K ", k, " is out of range for axis ", axis, " of extent ", extent));
  }
  Emitter& b = n.b();
  // topk works on the last dimension: move `axis` there and back. Its ties keep the lower index
  // first, as ONNX asks; `sorted` is honoured by always sorting.
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[axis], perm[rank - 1]);
  Instruction* xt = b.Transpose(x, perm);
  MLTUNE_ASSIGN(top, b.Add(Opcode::kTopK, {xt}, [&](Instruction& i) {
    i.topk_k = k;
    i.topk_largest = largest != 0;
  }));
  Instruction* values = b.Transpose(b.GetTupleElement(top, 0), perm);
  Instruction* indices =
      b.Transpose(b.Convert(b.GetTupleElement(top, 1), PrimitiveType::kS64), perm);
  return std::vector<Instruction*>{values, indices};
}

}  // namespace

void RegisterReduceOps(OpRegistry& r) {
  r.Register("ReduceSum", ReduceOp(ReduceKind::kSum, 13), {1});
  r.Register("ReduceMean", ReduceOp(ReduceKind::kMean, 18), {1});
  r.Register("ReduceMax", ReduceOp(ReduceKind::kMax, 18), {1});
  r.Register("ReduceMin", ReduceOp(ReduceKind::kMin, 18), {1});
  r.Register("ReduceProd", ReduceOp(ReduceKind::kProd, 18), {1});
  r.Register("ReduceL1", ReduceOp(ReduceKind::kL1, 18), {1});
  r.Register("ReduceL2", ReduceOp(ReduceKind::kL2, 18), {1});
  r.Register("ReduceLogSum", ReduceOp(ReduceKind::kLogSum, 18), {1});
  r.Register("ReduceLogSumExp", ReduceOp(ReduceKind::kLogSumExp, 18), {1});
  r.Register("ReduceSumSquare", ReduceOp(ReduceKind::kSumSquare, 18), {1});
  r.Register("ArgMax", ArgOp(true));
  r.Register("ArgMin", ArgOp(false));
  r.Register("Softmax", SoftmaxOp(SoftmaxKind::kSoftmax));
  r.Register("LogSoftmax", SoftmaxOp(SoftmaxKind::kLogSoftmax));
  r.Register("Hardmax", SoftmaxOp(SoftmaxKind::kHardmax));
  r.Register("CumSum", CumSum, {1});
  r.Register("TopK", TopK, {1});
}

}  // namespace mltune::ir::onnx
