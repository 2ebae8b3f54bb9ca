// Pooling as reduce-windows: max (with its indices), average, Lp, and their global forms.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/nn_util.h"

namespace mltune::ir::onnx {
namespace {

// The reduce-window of a pooling op: unit window over N and C, and high padding that gives
// exactly the output extent (more than the pads where ceil_mode adds a partial last window).
Window PoolWindow(const SpatialWindow& w, const std::vector<int64_t>& in) {
  Window window;
  window.dims.resize(2);
  for (size_t i = 0; i < in.size(); ++i) {
    WindowDim wd;
    wd.size = w.kernel[i];
    wd.stride = w.strides[i];
    wd.window_dilation = w.dilations[i];
    wd.padding_low = w.pad_lo[i];
    const int64_t k = (w.kernel[i] - 1) * w.dilations[i] + 1;
    // Exactly the padding that yields w.out windows (ceil_mode may drop one that starts in it).
    wd.padding_high = std::max<int64_t>(0, (w.out[i] - 1) * w.strides[i] + k - in[i] - w.pad_lo[i]);
    window.dims.push_back(wd);
  }
  return window;
}

// (value, index) pairs -> the larger value, the smaller index among equal values.
Computation* ArgMaxComputation(Emitter& b, PrimitiveType t) {
  const std::string name = absl::StrCat("onnx_argmax_", std::string(PrimitiveTypeName(t)));
  if (Computation* existing = b.module().FindComputation(name)) return existing;
  Computation* comp = b.module().AddComputation(std::make_unique<Computation>(name));
  Emitter e(b.module(), *comp);
  Instruction* acc_v = e.Parameter(0, Shape::Scalar(t), "acc_v");
  Instruction* acc_i = e.Parameter(1, Shape::Scalar(PrimitiveType::kS64), "acc_i");
  Instruction* v = e.Parameter(2, Shape::Scalar(t), "v");
  Instruction* i = e.Parameter(3, Shape::Scalar(PrimitiveType::kS64), "i");
  Instruction* gt = e.Must(e.Compare(ComparisonDirection::kGt, v, acc_v), v);
  Instruction* eq = e.Must(e.Compare(ComparisonDirection::kEq, v, acc_v), v);
  Instruction* earlier = e.Must(e.Compare(ComparisonDirection::kLt, i, acc_i), i);
  Instruction* take = Bin(e, Opcode::kOr, gt, Bin(e, Opcode::kAnd, eq, earlier));
  comp->set_root(e.Tuple({*e.Select(take, v, acc_v), *e.Select(take, i, acc_i)}));
  return comp;
}

// MaxPool's values and Indices: the flat index of each maximum in the input, row-major over
// all dimensions, or with the spatial dimensions column-major when storage_order is 1.
Outputs MaxPoolWithIndices(NodeContext& n, Instruction* x, const Window& window) {
  MLTUNE_ASSIGN(storage_order, n.attr_int("storage_order", 0));
  Emitter& b = n.b();
  const PrimitiveType t = x->shape().element_type();
  const std::vector<int64_t>& d = x->shape().dimensions();
  const int64_t rank = x->shape().rank();
  Instruction* flat = nullptr;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    Instruction* term = Bin(b, Opcode::kMultiply, b.Iota(PrimitiveType::kS64, d, i),
                            b.Full(PrimitiveType::kS64, d, static_cast<double>(stride)));
    flat = flat == nullptr ? term : Bin(b, Opcode::kAdd, flat, term);
    stride *= d[i];
  }
  Computation* f = ArgMaxComputation(b, t);
  absl::StatusOr<Instruction*> rw = b.Add(
      Opcode::kReduceWindow, {x, flat, b.Scalar(t, Lowest(t)), b.Scalar(PrimitiveType::kS64, 0)},
      [&](Instruction& i) {
        i.window = window;
        i.mutable_called_computations().push_back(f);
      });
  if (!rw.ok()) return n.Error(std::string(rw.status().message()));
  Instruction* values = b.GetTupleElement(*rw, 0);
  Instruction* indices = b.GetTupleElement(*rw, 1);
  if (storage_order == 1) {
    // Re-linearize the spatial part: split off each row-major coordinate, then recombine.
    const std::vector<int64_t>& od = indices->shape().dimensions();
    auto full = [&](double v) { return b.Full(PrimitiveType::kS64, od, v); };
    int64_t spatial = 1;
    for (int64_t i = 2; i < rank; ++i) spatial *= d[i];
    Instruction* rest = indices;
    Instruction* col =
        Bin(b, Opcode::kMultiply, Bin(b, Opcode::kDivide, rest, full(static_cast<double>(spatial))),
            full(static_cast<double>(spatial)));
    std::vector<int64_t> col_strides(rank, 1);
    for (int64_t i = 3; i < rank; ++i) col_strides[i] = col_strides[i - 1] * d[i - 1];
    for (int64_t i = rank - 1; i >= 2; --i) {
      Instruction* coord = Bin(b, Opcode::kRemainder, rest, full(static_cast<double>(d[i])));
      rest = Bin(b, Opcode::kDivide, rest, full(static_cast<double>(d[i])));
      col = Bin(b, Opcode::kAdd, col,
                Bin(b, Opcode::kMultiply, coord, full(static_cast<double>(col_strides[i]))));
    }
    indices = col;
  }
  std::vector<Instruction*> outs = {values, indices};
  outs.resize(n.output_count(), nullptr);
  return outs;
}

// LpPool's p: an int, a float before opset 2.
absl::StatusOr<double> LpNorm(NodeContext& n) {
  const ::onnx::AttributeProto* a = n.FindAttr("p");
  if (a != nullptr && a->type() == ::onnx::AttributeProto::FLOAT) return a->f();
  MLTUNE_ASSIGN(p, n.attr_int("p", 2));
  if (p <= 0) return n.Error(absl::StrCat("p must be positive, got ", p));
  return static_cast<double>(p);
}

enum class PoolKind { kMax, kAverage, kLp };

OpConverter Pool(PoolKind kind) {
  return [kind](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    Emitter& b = n.b();
    if (x->shape().rank() < 3) {
      return n.Error(absl::StrCat("input ", x->shape().ToString(false), " must have rank >= 3"));
    }
    MLTUNE_ASSIGN(kernel, n.attr_ints("kernel_shape"));
    MLTUNE_ASSIGN(ceil_mode, n.attr_int("ceil_mode", 0));
    const std::vector<int64_t> in = SpatialDims(x);
    MLTUNE_ASSIGN(w, ComputeWindow(n, in, kernel, ceil_mode != 0));
    const Window window = PoolWindow(w, in);
    const PrimitiveType t = x->shape().element_type();
    if (kind == PoolKind::kMax) {
      if (n.wants_output(1)) return MaxPoolWithIndices(n, x, window);
      absl::StatusOr<Instruction*> y = b.ReduceWindow(x, window, Opcode::kMaximum, Lowest(t));
      if (!y.ok()) return n.Error(std::string(y.status().message()));
      return One(*y);
    }
    if (kind == PoolKind::kLp) {
      MLTUNE_ASSIGN(p, LpNorm(n));
      Instruction* xp = Bin(b, Opcode::kPower, b.Unary(Opcode::kAbs, x), b.Full(x, p));
      absl::StatusOr<Instruction*> s = b.ReduceWindow(xp, window, Opcode::kAdd, 0);
      if (!s.ok()) return n.Error(std::string(s.status().message()));
      return One(b.Add(Opcode::kPower, {*s, b.Full(*s, 1.0 / p)}));
    }
    MLTUNE_ASSIGN(include_pad, n.attr_int("count_include_pad", 0));
    absl::StatusOr<Instruction*> s = b.ReduceWindow(x, window, Opcode::kAdd, 0);
    if (!s.ok()) return n.Error(std::string(s.status().message()));
    // The divisor per output position: the window positions inside the input (or, with
    // count_include_pad, inside the explicitly padded input), a product over dimensions.
    const size_t ns = in.size();
    std::vector<std::vector<int64_t>> per_dim(ns);
    for (size_t i = 0; i < ns; ++i) {
      const int64_t lo = include_pad ? -w.pad_lo[i] : 0;
      const int64_t hi = include_pad ? in[i] + w.pad_hi[i] : in[i];
      for (int64_t o = 0; o < w.out[i]; ++o) {
        int64_t c = 0;
        for (int64_t k = 0; k < w.kernel[i]; ++k) {
          const int64_t pos = o * w.strides[i] + k * w.dilations[i] - w.pad_lo[i];
          c += pos >= lo && pos < hi;
        }
        per_dim[i].push_back(c);
      }
    }
    MLTUNE_ASSIGN(counts, n.NewLiteral(Shape(t, w.out)));
    std::vector<int64_t> idx(ns, 0);
    for (int64_t e = 0; e < counts.element_count(); ++e) {
      int64_t rem = e;
      double c = 1;
      for (int64_t i = static_cast<int64_t>(ns) - 1; i >= 0; --i) {
        c *= static_cast<double>(per_dim[i][rem % w.out[i]]);
        rem /= w.out[i];
      }
      counts.SetFromDouble(e, c);
    }
    Instruction* divisor = b.Broadcast(b.Constant(std::move(counts)), (*s)->shape().dimensions(),
                                       Range(2, x->shape().rank()));
    return One(b.Add(Opcode::kDivide, {*s, divisor}));
  };
}

OpConverter GlobalPool(PoolKind kind) {
  return [kind](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(x, n.required_input(0));
    Emitter& b = n.b();
    const int64_t rank = x->shape().rank();
    if (rank < 2) {
      return n.Error(absl::StrCat("input ", x->shape().ToString(false), " must have rank >= 2"));
    }
    const std::vector<int64_t> dims = Range(2, rank);
    std::vector<int64_t> out = {x->shape().dimensions(0), x->shape().dimensions(1)};
    out.resize(rank, 1);
    Instruction* y;
    if (kind == PoolKind::kMax) {
      y = b.Reduce(x, dims, Opcode::kMaximum, Lowest(x->shape().element_type()));
    } else if (kind == PoolKind::kAverage) {
      y = b.Reduce(x, dims, Opcode::kAdd, 0);
      y = Bin(b, Opcode::kDivide, y, b.Full(y, static_cast<double>(Count(x, dims))));
    } else {
      MLTUNE_ASSIGN(p, LpNorm(n));
      Instruction* xp = Bin(b, Opcode::kPower, b.Unary(Opcode::kAbs, x), b.Full(x, p));
      y = b.Reduce(xp, dims, Opcode::kAdd, 0);
      y = Bin(b, Opcode::kPower, y, b.Full(y, 1.0 / p));
    }
    return One(b.Reshape(y, out));
  };
}

}  // namespace

void RegisterPoolOps(OpRegistry& r) {
  r.Register("MaxPool", Pool(PoolKind::kMax));
  r.Register("AveragePool", Pool(PoolKind::kAverage));
  r.Register("LpPool", Pool(PoolKind::kLp));
  r.Register("GlobalMaxPool", GlobalPool(PoolKind::kMax));
  r.Register("GlobalAveragePool", GlobalPool(PoolKind::kAverage));
  r.Register("GlobalLpPool", GlobalPool(PoolKind::kLp));
}

}  // namespace mltune::ir::onnx
