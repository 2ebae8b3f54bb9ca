// Ops that move data without arithmetic: reshapes, transposes, slicing, concatenation, padding,
// tiling, and the constants and shape queries that feed them.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/tensor.h"

namespace mltune::ir::onnx {
namespace {

int64_t Product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < v.size(); ++i) p = CheckedMul(p, v[i]).value_or(INT64_MAX);
  return p;
}

// The axes of an attribute (before `input_from_opset`) or of input `input` after it.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOperand(NodeContext& n, int64_t input,
                                                                int64_t input_from_opset) {
  if (n.opset() < input_from_opset) {
    if (!n.has_attr("axes")) return std::optional<std::vector<int64_t>>();
    MLTUNE_ASSIGN(axes, n.attr_ints("axes"));
    return std::optional<std::vector<int64_t>>(axes);
  }
  if (!n.has_input(input)) return std::optional<std::vector<int64_t>>();
  MLTUNE_ASSIGN(axes, n.constant_ints(input));
  return std::optional<std::vector<int64_t>>(axes);
}

Outputs Reshape(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  std::vector<int64_t> shape;
  if (n.opset() < 5) {
    MLTUNE_ASSIGN(s, n.attr_ints("shape"));
    shape = s;
  } else {
    MLTUNE_ASSIGN(s, n.constant_ints(1));
    shape = s;
  }
  MLTUNE_ASSIGN(allowzero, n.attr_int("allowzero", 0));
  const std::vector<int64_t>& in = x->shape().dimensions();
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && allowzero == 0) {
      if (i >= in.size()) return n.Error(absl::StrCat("shape[", i, "] is 0 past the input's rank"));
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return n.Error("shape has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return n.Error(absl::StrCat("shape[", i, "] is ", shape[i]));
    } else {
      std::optional<int64_t> k = CheckedMul(known, shape[i]);
      if (!k.has_value()) return n.Error("shape has more elements than int64 can count");
      known = *k;
    }
  }
  const int64_t total = x->shape().ElementCount();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return n.Error(absl::StrCat("cannot infer the -1 of shape [", absl::StrJoin(shape, ","),
                                  "] from ", total, " elements"));
    }
    shape[infer] = total / known;
  } else if (known != total) {
    return n.Error(absl::StrCat("shape [", absl::StrJoin(shape, ","), "] has ", known,
                                " elements, the input ", x->shape().ToString(false), " has ",
                                total));
  }
  return One(n.b().Reshape(x, shape));
}

Outputs Flatten(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 1));
  const int64_t rank = x->shape().rank();
  int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis > rank) return n.Error(absl::StrCat("axis ", axis_attr, " is out of range"));
  const auto& d = x->shape().dimensions();
  return One(n.b().Reshape(x, {Product(d, 0, axis), Product(d, axis, rank)}));
}

Outputs Squeeze(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axes_opt, AxesOperand(n, 1, 13));
  const auto& d = x->shape().dimensions();
  std::vector<int64_t> axes;
  if (axes_opt.has_value()) {
    MLTUNE_ASSIGN(a, n.NormalizeAxes(*axes_opt, x->shape().rank()));
    axes = a;
    for (int64_t a : axes) {
      if (d[a] != 1) return n.Error(absl::StrCat("cannot squeeze axis ", a, " of extent ", d[a]));
    }
  } else {
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] == 1) axes.push_back(static_cast<int64_t>(i));
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end()) out.push_back(d[i]);
  }
  return One(n.b().Reshape(x, out));
}

Outputs Unsqueeze(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axes_opt, AxesOperand(n, 1, 13));
  if (!axes_opt.has_value()) return n.Error("axes are required");
  const int64_t rank = x->shape().rank() + static_cast<int64_t>(axes_opt->size());
  MLTUNE_ASSIGN(axes, n.NormalizeAxes(*axes_opt, rank));
  return One(n.b().InsertUnitDims(x, axes));
}

Outputs Transpose(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  std::vector<int64_t> reversed(x->shape().rank());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  MLTUNE_ASSIGN(perm, n.attr_ints("perm", reversed));
  if (static_cast<int64_t>(perm.size()) != x->shape().rank()) {
    return n.Error(absl::StrCat("perm has ", perm.size(), " entries for rank ", x->shape().rank()));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != int64_t(i)) {
      return n.Error(absl::StrCat("perm [", absl::StrJoin(perm, ","), "] is not a permutation"));
    }
  }
  return One(n.b().Transpose(x, perm));
}

Outputs Concat(NodeContext& n) {
  std::vector<Instruction*> xs;
  for (int64_t i = 0; i < n.input_count(); ++i) {
    if (n.has_input(i)) xs.push_back(n.input(i));
  }
  if (xs.empty()) return n.Error("needs at least one input");
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis"));
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, xs[0]->shape().rank()));
  for (Instruction* x : xs) {
    if (x->shape().rank() != xs[0]->shape().rank() ||
        x->shape().element_type() != xs[0]->shape().element_type()) {
      return n.Error(absl::StrCat("inputs ", xs[0]->shape().ToString(false), " and ",
                                  x->shape().ToString(false), " differ in rank or type"));
    }
  }
  // Empty inputs contribute nothing (and XLA's concatenate takes them, but keep the op small).
  std::vector<Instruction*> nonempty;
  for (Instruction* x : xs) {
    if (x->shape().dimensions(axis) != 0) nonempty.push_back(x);
  }
  if (nonempty.empty()) nonempty.push_back(xs[0]);
  return One(n.b().Concatenate(nonempty, axis));
}

Outputs Split(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 0));
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, x->shape().rank()));
  const int64_t extent = x->shape().dimensions(axis);
  std::vector<int64_t> sizes;
  if (n.opset() < 13 && n.has_attr("split")) {
    MLTUNE_ASSIGN(s, n.attr_ints("split"));
    sizes = s;
  } else if (n.opset() >= 13 && n.has_input(1)) {
    MLTUNE_ASSIGN(s, n.constant_ints(1));
    sizes = s;
  } else {
    int64_t parts = n.output_count();
    if (n.has_attr("num_outputs")) {
      MLTUNE_ASSIGN(k, n.attr_int("num_outputs"));
      parts = k;
    }
    if (parts <= 0) return n.Error("no outputs to split into");
    const int64_t chunk = (extent + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) {
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, extent - i * chunk)));
    }
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != extent) {
    return n.Error(absl::StrCat("split sizes [", absl::StrJoin(sizes, ","),
                                "] do not add up to the axis extent ", extent));
  }
  std::vector<Instruction*> outs;
  int64_t start = 0;
  for (int64_t s : sizes) {
    outs.push_back(n.b().SliceDim(x, axis, start, start + s));
    start += s;
  }
  return outs;
}

Outputs Slice(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    MLTUNE_ASSIGN(s, n.attr_ints("starts"));
    MLTUNE_ASSIGN(e, n.attr_ints("ends"));
    starts = s;
    ends = e;
    if (n.has_attr("axes")) {
      MLTUNE_ASSIGN(a, n.attr_ints("axes"));
      axes = a;
    }
  } else {
    MLTUNE_ASSIGN(s, n.constant_ints(1));
    MLTUNE_ASSIGN(e, n.constant_ints(2));
    starts = s;
    ends = e;
    if (n.has_input(3)) {
      MLTUNE_ASSIGN(a, n.constant_ints(3));
      axes = a;
    }
    if (n.has_input(4)) {
      MLTUNE_ASSIGN(st, n.constant_ints(4));
      steps = st;
    }
  }
  const int64_t rank = x->shape().rank();
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return n.Error("starts, ends, axes and steps must have the same length");
  }
  MLTUNE_ASSIGN(norm_axes, n.NormalizeAxes(axes, rank));
  Instruction* y = x;
  std::vector<ir::SliceDim> slice;
  for (int64_t d : x->shape().dimensions()) slice.push_back({0, d, 1});
  std::vector<int64_t> reversed;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = norm_axes[i], dim = x->shape().dimensions(a), step = steps[i];
    if (step == 0) return n.Error("steps must not be 0");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      slice[a] = {start, std::max(start, end), step};
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // Walk the reversed dimension forwards: index i becomes dim - 1 - i.
      const int64_t count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
      const int64_t rstart = dim - 1 - start;
      slice[a] = {rstart, count == 0 ? rstart : rstart + (count - 1) * (-step) + 1, -step};
      if (dim > 0) reversed.push_back(a);
    }
  }
  if (!reversed.empty()) {
    MLTUNE_ASSIGN(r, n.b().Add(Opcode::kReverse, {y}, [&](Instruction& i) {
      i.dimensions = reversed;
      std::sort(i.dimensions.begin(), i.dimensions.end());
    }));
    y = r;
  }
  return One(n.b().Slice(y, slice));
}

Outputs ShapeOf(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  const auto& d = x->shape().dimensions();
  const int64_t rank = x->shape().rank();
  MLTUNE_ASSIGN(start_attr, n.attr_int("start", 0));
  MLTUNE_ASSIGN(end_attr, n.attr_int("end", rank));
  auto clampi = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clampi(start_attr), end = clampi(end_attr);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(d[i]);
  return One(n.b().Int64s(dims));
}

Outputs Size(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  return One(n.b().Scalar(PrimitiveType::kS64, static_cast<double>(x->shape().ElementCount())));
}

Outputs Constant(NodeContext& n) {
  Emitter& b = n.b();
  if (n.has_attr("value")) {
    MLTUNE_ASSIGN(t, n.attr_tensor("value"));
    return One(b.Constant(std::move(t)));
  }
  if (n.has_attr("value_float")) {
    MLTUNE_ASSIGN(v, n.attr_float("value_float"));
    return One(b.Scalar(PrimitiveType::kF32, v));
  }
  if (n.has_attr("value_int")) {
    MLTUNE_ASSIGN(v, n.attr_int("value_int"));
    Literal lit = *Literal::Create(Shape::Scalar(PrimitiveType::kS64));
    lit.Set<int64_t>(0, v);
    return One(b.Constant(std::move(lit)));
  }
  if (n.has_attr("value_ints")) {
    MLTUNE_ASSIGN(v, n.attr_ints("value_ints"));
    return One(b.Int64s(v));
  }
  if (n.has_attr("value_floats")) {
    MLTUNE_ASSIGN(v, n.attr_floats("value_floats"));
    Literal lit = *Literal::Create(Shape(PrimitiveType::kF32, {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) lit.Set<float>(i, v[i]);
    return One(b.Constant(std::move(lit)));
  }
  return n.Unsupported("only value, value_float(s) and value_int(s) constants are supported");
}

Outputs ConstantOfShape(NodeContext& n) {
  MLTUNE_ASSIGN(dims, n.constant_ints(0));
  Literal value = *Literal::Create(Shape::Scalar(PrimitiveType::kF32));
  if (n.has_attr("value")) {
    MLTUNE_ASSIGN(t, n.attr_tensor("value"));
    if (t.element_count() != 1) return n.Error("value must hold one element");
    value = *Literal::Create(Shape::Scalar(t.element_type()));
    std::memcpy(value.untyped_data(), t.untyped_data(), value.size_bytes());
  }
  for (int64_t d : dims) {
    if (d < 0) return n.Error(absl::StrCat("shape has negative dimension ", d));
  }
  Instruction* s = n.b().Constant(std::move(value));
  return One(dims.empty() ? s : n.b().Broadcast(s, dims, {}));
}

Outputs Expand(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(shape, n.constant_ints(1));
  // Bidirectional: the result is the broadcast of x's shape and `shape`.
  const int64_t rank = std::max<int64_t>(x->shape().rank(), shape.size());
  std::vector<int64_t> dims(rank, 1);
  auto merge = [&](const std::vector<int64_t>& d) -> absl::Status {
    const int64_t offset = rank - static_cast<int64_t>(d.size());
    for (size_t i = 0; i < d.size(); ++i) {
      int64_t& o = dims[i + offset];
      if (d[i] == o || d[i] == 1) continue;
      if (o != 1) {
        return n.Error(absl::StrCat("shape [", absl::StrJoin(shape, ","), "] does not broadcast ",
                                    "with the input ", x->shape().ToString(false)));
      }
      o = d[i];
    }
    return absl::OkStatus();
  };
  if (absl::Status s = merge(x->shape().dimensions()); !s.ok()) return s;
  if (absl::Status s = merge(shape); !s.ok()) return s;
  return One(n.b().BroadcastTo(x, dims));
}

Outputs Tile(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(repeats, n.constant_ints(1));
  const auto& d = x->shape().dimensions();
  if (repeats.size() != d.size()) {
    return n.Error(absl::StrCat("repeats has ", repeats.size(), " entries for rank ", d.size()));
  }
  std::vector<int64_t> wide, mapping, out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (repeats[i] < 0) return n.Error("repeats must not be negative");
    wide.push_back(repeats[i]);
    wide.push_back(d[i]);
    mapping.push_back(static_cast<int64_t>(2 * i + 1));
    std::optional<int64_t> extent = CheckedMul(repeats[i], d[i]);
    if (!extent.has_value()) return n.Error("the tiled shape overflows int64");
    out.push_back(*extent);
  }
  return One(n.b().Reshape(n.b().Broadcast(x, wide, mapping), out));
}

// Edge or reflect padding of one dimension by concatenating slices of x.
absl::StatusOr<Instruction*> PadDimByCopy(Emitter& b, Instruction* x, int64_t dim, int64_t low,
                                          int64_t high, bool reflect) {
  const int64_t extent = x->shape().dimensions(dim);
  std::vector<Instruction*> parts;
  auto reverse = [&](Instruction* s) -> absl::StatusOr<Instruction*> {
    return b.Add(Opcode::kReverse, {s}, [&](Instruction& i) { i.dimensions = {dim}; });
  };
  if (low > 0) {
    if (reflect) {
      MLTUNE_ASSIGN(r, reverse(b.SliceDim(x, dim, 1, low + 1)));
      parts.push_back(r);
    } else {
      std::vector<int64_t> dims = x->shape().dimensions();
      dims[dim] = low;
      MLTUNE_ASSIGN(e, b.BroadcastTo(b.SliceDim(x, dim, 0, 1), dims));
      parts.push_back(e);
    }
  }
  parts.push_back(x);
  if (high > 0) {
    if (reflect) {
      MLTUNE_ASSIGN(r, reverse(b.SliceDim(x, dim, extent - 1 - high, extent - 1)));
      parts.push_back(r);
    } else {
      std::vector<int64_t> dims = x->shape().dimensions();
      dims[dim] = high;
      MLTUNE_ASSIGN(e, b.BroadcastTo(b.SliceDim(x, dim, extent - 1, extent), dims));
      parts.push_back(e);
    }
  }
  return b.Concatenate(parts, dim);
}

Outputs Pad(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  std::vector<int64_t> pads;
  Instruction* value = nullptr;
  if (n.opset() < 11) {
    MLTUNE_ASSIGN(p, n.attr_ints(n.opset() < 2 ? "paddings" : "pads"));
    MLTUNE_ASSIGN(v, n.attr_float("value", 0.0f));
    pads = p;
    value = b.Scalar(x->shape().element_type(), v);
  } else {
    MLTUNE_ASSIGN(p, n.constant_ints(1));
    pads = p;
    if (n.has_input(2)) {
      value = b.Reshape(n.input(2), {});
    } else {
      value = b.Scalar(x->shape().element_type(), 0);
    }
  }
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (n.has_input(3)) {
    MLTUNE_ASSIGN(a, n.constant_ints(3));
    MLTUNE_ASSIGN(na, n.NormalizeAxes(a, rank));
    axes = na;
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * k) {
    return n.Error(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * k));
  }
  MLTUNE_ASSIGN(mode, n.attr_string("mode", "constant"));
  std::vector<PaddingDim> padding(rank);
  for (int64_t i = 0; i < k; ++i) padding[axes[i]] = {pads[i], pads[i + k], 0};
  if (mode == "constant") {
    return One(b.Add(Opcode::kPad, {x, b.Convert(value, x->shape().element_type())},
                     [&](Instruction& i) { i.padding = padding; }));
  }
  if (mode != "reflect" && mode != "edge") {
    return n.Error(absl::StrCat("mode must be constant, reflect or edge, got '", mode, "'"));
  }
  Instruction* y = x;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDim& p = padding[d];
    if (p.low < 0 || p.high < 0) {
      y = b.SliceDim(y, d, std::max<int64_t>(0, -p.low),
                     y->shape().dimensions(d) - std::max<int64_t>(0, -p.high));
    }
    const int64_t extent = y->shape().dimensions(d);
    if (mode == "reflect" && (p.low >= extent || p.high >= extent)) {
      return n.Unsupported("reflect padding as wide as the dimension");
    }
    if (p.low > 0 || p.high > 0) {
      MLTUNE_ASSIGN(z, PadDimByCopy(b, y, d, std::max<int64_t>(0, p.low),
                                    std::max<int64_t>(0, p.high), mode == "reflect"));
      y = z;
    }
  }
  return One(y);
}

Outputs Range(NodeContext& n) {
  MLTUNE_ASSIGN(start, n.constant_input(0));
  MLTUNE_ASSIGN(limit, n.constant_input(1));
  MLTUNE_ASSIGN(delta, n.constant_input(2));
  const PrimitiveType t = start.element_type();
  const bool fp = IsFloatingPoint(t);
  const double s = start.GetAsDouble(0), l = limit.GetAsDouble(0), d = delta.GetAsDouble(0);
  if (d == 0) return n.Error("delta must not be 0");
  const double steps = std::ceil((l - s) / d);
  if (!(steps < 9.0e18)) return n.Error("the range has too many elements");
  const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  absl::StatusOr<Literal> out = n.NewLiteral(Shape(t, {count}));
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < count; ++i) {
    if (fp) {
      out->SetFromDouble(i, s + static_cast<double>(i) * d);
    } else {
      out->SetFromInt64(i, start.GetAsInt64(0) + i * delta.GetAsInt64(0));
    }
  }
  return One(n.b().Constant(std::move(*out)));
}

Outputs DepthToSpace(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(bs, n.attr_int("blocksize"));
  MLTUNE_ASSIGN(mode, n.attr_string("mode", "DCR"));
  if (x->shape().rank() != 4) return n.Error("input must be rank 4 (N, C, H, W)");
  const auto& d = x->shape().dimensions();
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3];
  if (bs <= 0 || C % (bs * bs) != 0) return n.Error("channels must be a multiple of blocksize^2");
  Emitter& b = n.b();
  const int64_t c = C / (bs * bs);
  Instruction* t;
  if (mode == "DCR") {
    t = b.Transpose(b.Reshape(x, {N, bs, bs, c, H, W}), {0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    t = b.Transpose(b.Reshape(x, {N, c, bs, bs, H, W}), {0, 1, 4, 2, 5, 3});
  } else {
    return n.Error(absl::StrCat("mode must be DCR or CRD, got '", mode, "'"));
  }
  std::optional<int64_t> h = CheckedMul(H, bs), w = CheckedMul(W, bs);
  if (!h.has_value() || !w.has_value()) return n.Error("the output shape overflows int64");
  return One(b.Reshape(t, {N, c, *h, *w}));
}

Outputs SpaceToDepth(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(bs, n.attr_int("blocksize"));
  if (x->shape().rank() != 4) return n.Error("input must be rank 4 (N, C, H, W)");
  const auto& d = x->shape().dimensions();
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3];
  if (bs <= 0 || H % bs != 0 || W % bs != 0)
    return n.Error("H and W must be multiples of blocksize");
  Emitter& b = n.b();
  Instruction* t = b.Transpose(b.Reshape(x, {N, C, H / bs, bs, W / bs, bs}), {0, 3, 5, 1, 2, 4});
  return One(b.Reshape(t, {N, C * bs * bs, H / bs, W / bs}));
}

// col - row over the last two dimensions of `dims`, as s64.
Instruction* Diagonals(Emitter& b, const std::vector<int64_t>& dims) {
  const int64_t r = static_cast<int64_t>(dims.size());
  Instruction* row = b.Iota(PrimitiveType::kS64, dims, r - 2);
  Instruction* col = b.Iota(PrimitiveType::kS64, dims, r - 1);
  return b.Must(b.Add(Opcode::kSubtract, {col, row}), col);
}

Outputs EyeLike(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  if (x->shape().rank() != 2) return n.Error("input must be rank 2");
  MLTUNE_ASSIGN(k, n.attr_int("k", 0));
  PrimitiveType t = x->shape().element_type();
  if (n.has_attr("dtype")) {
    MLTUNE_ASSIGN(dt, n.attr_int("dtype"));
    absl::StatusOr<PrimitiveType> type = ElementTypeFromOnnx(static_cast<int32_t>(dt));
    if (!type.ok()) return n.Unsupported(std::string(type.status().message()));
    t = *type;
  }
  Emitter& b = n.b();
  const auto& dims = x->shape().dimensions();
  MLTUNE_ASSIGN(on, b.Compare(ComparisonDirection::kEq, Diagonals(b, dims),
                              b.Full(PrimitiveType::kS64, dims, static_cast<double>(k))));
  return One(b.Convert(on, t));
}

Outputs Trilu(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  if (x->shape().rank() < 2) return n.Error("input must have rank 2 or more");
  MLTUNE_ASSIGN(upper, n.attr_int("upper", 1));
  int64_t k = 0;
  if (n.has_input(1)) {
    MLTUNE_ASSIGN(kv, n.constant_ints(1));
    if (kv.size() != 1) return n.Error("k must hold one value");
    k = kv[0];
  }
  Emitter& b = n.b();
  const auto& dims = x->shape().dimensions();
  MLTUNE_ASSIGN(keep, b.Compare(upper ? ComparisonDirection::kGe : ComparisonDirection::kLe,
                                Diagonals(b, dims),
                                b.Full(PrimitiveType::kS64, dims, static_cast<double>(k))));
  return One(b.Select(keep, x, b.Full(x, 0)));
}

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  r.Register("Reshape", Reshape, {1});
  r.Register("Flatten", Flatten);
  r.Register("Squeeze", Squeeze, {1});
  r.Register("Unsqueeze", Unsqueeze, {1});
  r.Register("Transpose", Transpose);
  r.Register("Concat", Concat);
  r.Register("Split", Split, {1});
  r.Register("Slice", Slice, {1, 2, 3, 4});
  r.Register("Shape", ShapeOf);
  r.Register("Size", Size);
  r.Register("Constant", Constant);
  r.Register("ConstantOfShape", ConstantOfShape, {0});
  r.Register("Expand", Expand, {1});
  r.Register("Tile", Tile, {1});
  r.Register("Pad", Pad, {1, 3});
  r.Register("Range", Range, {0, 1, 2});
  r.Register("DepthToSpace", DepthToSpace);
  r.Register("SpaceToDepth", SpaceToDepth);
  r.Register("EyeLike", EyeLike);
  r.Register("Trilu", Trilu, {1});
}

}  // namespace mltune::ir::onnx
