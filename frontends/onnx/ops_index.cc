// Indexing ops: Gather*, Scatter*, OneHot, Compress, ReverseSequence, NonZero.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {
namespace {

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> v(std::max<int64_t>(0, end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// Indices as s64 with negative ones counted from the end: `extents` is broadcastable to the
// indices' shape and holds the extent each index runs over.
absl::StatusOr<Instruction*> NormalizeIndices(Emitter& b, Instruction* indices,
                                              Instruction* extents) {
  Instruction* idx = b.Convert(indices, PrimitiveType::kS64);
  const auto& dims = idx->shape().dimensions();
  MLTUNE_ASSIGN(ext, b.BroadcastTo(b.Convert(extents, PrimitiveType::kS64), dims));
  MLTUNE_ASSIGN(neg, b.Compare(ComparisonDirection::kLt, idx, b.Full(idx, 0)));
  MLTUNE_ASSIGN(wrapped, b.Add(Opcode::kAdd, {idx, ext}));
  return b.Select(neg, wrapped, idx);
}

// Indices of one axis whose extent is `extent`.
absl::StatusOr<Instruction*> NormalizeAxisIndices(Emitter& b, Instruction* indices,
                                                  int64_t extent) {
  return NormalizeIndices(b, indices, b.Scalar(PrimitiveType::kS64, static_cast<double>(extent)));
}

// Indices whose last dimension indexes data dimensions [first, first + k).
absl::StatusOr<Instruction*> NormalizeIndexVectors(Emitter& b, Instruction* indices,
                                                   Instruction* data, int64_t first) {
  const int64_t k = indices->shape().dimensions(indices->shape().rank() - 1);
  std::vector<int64_t> extents;
  for (int64_t i = 0; i < k; ++i) extents.push_back(data->shape().dimensions(first + i));
  return NormalizeIndices(b, indices, b.Int64s(extents));
}

absl::StatusOr<Instruction*> Gather(Emitter& b, Instruction* data, Instruction* indices,
                                    const GatherDimensionNumbers& dn,
                                    const std::vector<int64_t>& slice_sizes) {
  return b.Add(Opcode::kGather, {data, indices}, [&](Instruction& i) {
    i.gather_dnums = dn;
    i.gather_slice_sizes = slice_sizes;
  });
}

// numpy's take: the slices of `data` at the (non-negative, s64) `idx` along `axis`.
absl::StatusOr<Instruction*> Take(Emitter& b, Instruction* data, Instruction* idx, int64_t axis) {
  const int64_t r = data->shape().rank(), q = idx->shape().rank();
  GatherDimensionNumbers dn;
  for (int64_t d = 0; d < axis; ++d) dn.offset_dims.push_back(d);
  for (int64_t d = axis + 1; d < r; ++d) dn.offset_dims.push_back(d - 1 + q);
  dn.collapsed_slice_dims = {axis};
  dn.start_index_map = {axis};
  dn.index_vector_dim = q;
  std::vector<int64_t> sizes = data->shape().dimensions();
  sizes[axis] = 1;
  return Gather(b, data, idx, dn, sizes);
}

// Full coordinates into a rank-r array for each element of `idx` (s64, rank r): `idx` on `axis`,
// the element's own position on every other dimension. Shape: idx's dimensions + [r].
absl::StatusOr<Instruction*> Coordinates(Emitter& b, Instruction* idx, int64_t axis) {
  const auto& dims = idx->shape().dimensions();
  const int64_t r = idx->shape().rank();
  std::vector<int64_t> column = dims;
  column.push_back(1);
  std::vector<Instruction*> parts;
  for (int64_t d = 0; d < r; ++d) {
    Instruction* part = d == axis ? idx : b.Iota(PrimitiveType::kS64, dims, d);
    parts.push_back(b.Reshape(part, column));
  }
  return b.Concatenate(parts, r);
}

// data[coordinates] for each index vector (the last dimension of `coords`, one entry per data
// dimension).
absl::StatusOr<Instruction*> GatherPoints(Emitter& b, Instruction* data, Instruction* coords) {
  const int64_t r = data->shape().rank();
  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = Range(0, r);
  dn.start_index_map = Range(0, r);
  dn.index_vector_dim = coords->shape().rank() - 1;
  return Gather(b, data, coords, dn, std::vector<int64_t>(r, 1));
}

// The computation `(a, b) -> b`, made once per module and type.
Computation* SecondOfTwo(Emitter& b, PrimitiveType type) {
  const std::string name = absl::StrCat("onnx_second_", std::string(PrimitiveTypeName(type)));
  Module& m = b.module();
  if (Computation* existing = m.FindComputation(name)) return existing;
  Computation* c = m.AddComputation(std::make_unique<Computation>(name));
  Instruction* second = nullptr;
  for (int64_t k = 0; k < 2; ++k) {
    auto p = std::make_unique<Instruction>(Opcode::kParameter, Shape::Scalar(type),
                                           m.UniqueInstructionName(k == 0 ? "a" : "b"));
    // The computation files a parameter under its number when it is added.
    p->parameter_number = k;
    second = c->AddInstruction(std::move(p));
  }
  c->set_root(second);
  return c;
}

// The combiner of a scatter with the given ONNX `reduction`.
absl::StatusOr<Computation*> ScatterCombiner(NodeContext& n, PrimitiveType type) {
  MLTUNE_ASSIGN(reduction, n.attr_string("reduction", "none"));
  Emitter& b = n.b();
  if (reduction == "none") return SecondOfTwo(b, type);
  Opcode op;
  if (reduction == "add") {
    op = type == PrimitiveType::kPred ? Opcode::kOr : Opcode::kAdd;
  } else if (reduction == "mul") {
    op = type == PrimitiveType::kPred ? Opcode::kAnd : Opcode::kMultiply;
  } else if (reduction == "max") {
    op = Opcode::kMaximum;
  } else if (reduction == "min") {
    op = Opcode::kMinimum;
  } else {
    return n.Error(
        absl::StrCat("reduction must be none, add, mul, max or min, got '", reduction, "'"));
  }
  return b.ScalarComputation(op, type);
}

absl::StatusOr<Instruction*> Scatter(NodeContext& n, Instruction* data, Instruction* indices,
                                     Instruction* updates, const ScatterDimensionNumbers& dn) {
  const PrimitiveType t = data->shape().element_type();
  if (updates->shape().element_type() != t) {
    return n.Error(absl::StrCat("updates are ",
                                std::string(PrimitiveTypeName(updates->shape().element_type())),
                                ", data is ", std::string(PrimitiveTypeName(t))));
  }
  MLTUNE_ASSIGN(f, ScatterCombiner(n, t));
  return n.b().Add(Opcode::kScatter, {data, indices, updates}, [&](Instruction& i) {
    i.scatter_dnums = dn;
    i.mutable_called_computations().push_back(f);
  });
}

Outputs GatherOp(NodeContext& n) {
  MLTUNE_ASSIGN(data, n.required_input(0));
  MLTUNE_ASSIGN(indices, n.required_input(1));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 0));
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, data->shape().rank()));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeAxisIndices(b, indices, data->shape().dimensions(axis)));
  return One(Take(b, data, idx, axis));
}

Outputs GatherElements(NodeContext& n) {
  MLTUNE_ASSIGN(data, n.required_input(0));
  MLTUNE_ASSIGN(indices, n.required_input(1));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 0));
  const int64_t r = data->shape().rank();
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, r));
  if (indices->shape().rank() != r) {
    return n.Error(
        absl::StrCat("indices have rank ", indices->shape().rank(), ", data has rank ", r));
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeAxisIndices(b, indices, data->shape().dimensions(axis)));
  MLTUNE_ASSIGN(coords, Coordinates(b, idx, axis));
  return One(GatherPoints(b, data, coords));
}

Outputs GatherND(NodeContext& n) {
  MLTUNE_ASSIGN(data, n.required_input(0));
  MLTUNE_ASSIGN(indices, n.required_input(1));
  MLTUNE_ASSIGN(batch, n.attr_int("batch_dims", 0));
  const int64_t r = data->shape().rank(), q = indices->shape().rank();
  if (q < 1) return n.Error("indices must have rank 1 or more");
  const int64_t m = indices->shape().dimensions(q - 1);
  if (batch < 0 || batch >= q || batch > r || m > r - batch) {
    return n.Error(absl::StrCat("batch_dims ", batch, " and index vectors of length ", m,
                                " do not fit data of rank ", r, " and indices of rank ", q));
  }
  for (int64_t d = 0; d < batch; ++d) {
    if (data->shape().dimensions(d) != indices->shape().dimensions(d)) {
      return n.Error(absl::StrCat("batch dimension ", d, " differs between data (",
                                  data->shape().dimensions(d), ") and indices (",
                                  indices->shape().dimensions(d), ")"));
    }
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeIndexVectors(b, indices, data, batch));
  GatherDimensionNumbers dn;
  dn.offset_dims = Range(q - 1, q - 1 + r - batch - m);
  dn.collapsed_slice_dims = Range(batch, batch + m);
  dn.start_index_map = Range(batch, batch + m);
  dn.operand_batching_dims = Range(0, batch);
  dn.start_indices_batching_dims = Range(0, batch);
  dn.index_vector_dim = q - 1;
  std::vector<int64_t> sizes = data->shape().dimensions();
  for (int64_t d = 0; d < batch + m; ++d) sizes[d] = 1;
  return One(Gather(b, data, idx, dn, sizes));
}

// ScatterElements, and Scatter (its older name).
Outputs ScatterElements(NodeContext& n) {
  MLTUNE_ASSIGN(data, n.required_input(0));
  MLTUNE_ASSIGN(indices, n.required_input(1));
  MLTUNE_ASSIGN(updates, n.required_input(2));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", 0));
  const int64_t r = data->shape().rank();
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, r));
  if (indices->shape().rank() != r ||
      indices->shape().dimensions() != updates->shape().dimensions()) {
    return n.Error(absl::StrCat("indices ", indices->shape().ToString(false), " and updates ",
                                updates->shape().ToString(false),
                                " must have the same shape, of the data's rank ", r));
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeAxisIndices(b, indices, data->shape().dimensions(axis)));
  MLTUNE_ASSIGN(coords, Coordinates(b, idx, axis));
  ScatterDimensionNumbers dn;
  dn.inserted_window_dims = Range(0, r);
  dn.scatter_dims_to_operand_dims = Range(0, r);
  dn.index_vector_dim = r;
  return One(Scatter(n, data, coords, updates, dn));
}

Outputs ScatterND(NodeContext& n) {
  MLTUNE_ASSIGN(data, n.required_input(0));
  MLTUNE_ASSIGN(indices, n.required_input(1));
  MLTUNE_ASSIGN(updates, n.required_input(2));
  const int64_t r = data->shape().rank(), q = indices->shape().rank();
  if (q < 1) return n.Error("indices must have rank 1 or more");
  const int64_t k = indices->shape().dimensions(q - 1);
  if (k > r) {
    return n.Error(absl::StrCat("index vectors of length ", k, " for data of rank ", r));
  }
  std::vector<int64_t> want(indices->shape().dimensions().begin(),
                            indices->shape().dimensions().end() - 1);
  for (int64_t d = k; d < r; ++d) want.push_back(data->shape().dimensions(d));
  if (updates->shape().dimensions() != want) {
    return n.Error(absl::StrCat("updates are ", updates->shape().ToString(false), ", expected [",
                                absl::StrJoin(want, ","), "]"));
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeIndexVectors(b, indices, data, 0));
  ScatterDimensionNumbers dn;
  dn.update_window_dims = Range(q - 1, q - 1 + r - k);
  dn.inserted_window_dims = Range(0, k);
  dn.scatter_dims_to_operand_dims = Range(0, k);
  dn.index_vector_dim = q - 1;
  return One(Scatter(n, data, idx, updates, dn));
}

Outputs OneHot(NodeContext& n) {
  MLTUNE_ASSIGN(indices, n.required_input(0));
  MLTUNE_ASSIGN(depth_values, n.constant_doubles(1));
  MLTUNE_ASSIGN(values, n.required_input(2));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", -1));
  if (depth_values.size() != 1) return n.Error("depth must hold one value");
  const int64_t depth = static_cast<int64_t>(depth_values[0]);
  if (depth < 0) return n.Error(absl::StrCat("depth ", depth, " is negative"));
  if (values->shape().ElementCount() != 2) {
    return n.Error(absl::StrCat("values must hold 2 elements (off, on), got ",
                                values->shape().ToString(false)));
  }
  const int64_t r = indices->shape().rank();
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, r + 1));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(idx, NormalizeAxisIndices(b, indices, depth));
  std::vector<int64_t> out = idx->shape().dimensions();
  out.insert(out.begin() + axis, depth);
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d <= r; ++d) {
    if (d != axis) mapping.push_back(d);
  }
  MLTUNE_ASSIGN(hot, b.Compare(ComparisonDirection::kEq, b.Broadcast(idx, out, mapping),
                               b.Iota(PrimitiveType::kS64, out, axis)));
  Instruction* flat = b.Reshape(values, {2});
  Instruction* off = b.Reshape(b.SliceDim(flat, 0, 0, 1), {});
  Instruction* on = b.Reshape(b.SliceDim(flat, 0, 1, 2), {});
  return One(b.Select(hot, on, off));
}

Outputs Compress(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(condition, n.constant_input(1));
  if (condition.shape().rank() != 1) {
    return n.Error(
        absl::StrCat("condition must be rank 1, got ", condition.shape().ToString(false)));
  }
  Emitter& b = n.b();
  Instruction* y = x;
  int64_t axis = 0;
  if (n.has_attr("axis")) {
    MLTUNE_ASSIGN(axis_attr, n.attr_int("axis"));
    MLTUNE_ASSIGN(a, n.NormalizeAxis(axis_attr, x->shape().rank()));
    axis = a;
  } else {
    y = b.Reshape(x, {x->shape().ElementCount()});
  }
  const int64_t extent = y->shape().dimensions(axis);
  if (condition.element_count() > extent) {
    return n.Error(absl::StrCat("condition has ", condition.element_count(),
                                " entries for an axis of extent ", extent));
  }
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < condition.element_count(); ++i) {
    if (condition.GetAsDouble(i) != 0) selected.push_back(i);
  }
  if (selected.empty()) return One(b.SliceDim(y, axis, 0, 0));
  return One(Take(b, y, b.Int64s(selected), axis));
}

Outputs ReverseSequence(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(lens, n.required_input(1));
  MLTUNE_ASSIGN(time_attr, n.attr_int("time_axis", 0));
  MLTUNE_ASSIGN(batch_attr, n.attr_int("batch_axis", 1));
  const int64_t r = x->shape().rank();
  if (r < 2) return n.Error("input must have rank 2 or more");
  MLTUNE_ASSIGN(time_axis, n.NormalizeAxis(time_attr, r));
  MLTUNE_ASSIGN(batch_axis, n.NormalizeAxis(batch_attr, r));
  if (time_axis == batch_axis) return n.Error("time_axis and batch_axis must differ");
  const auto& dims = x->shape().dimensions();
  if (lens->shape().dimensions() != std::vector<int64_t>{dims[batch_axis]}) {
    return n.Error(absl::StrCat("sequence_lens is ", lens->shape().ToString(false),
                                ", expected one length per batch entry (", dims[batch_axis], ")"));
  }
  Emitter& b = n.b();
  // Position t of a sequence of length L reads from L - 1 - t while t < L, else stays put.
  Instruction* t = b.Iota(PrimitiveType::kS64, dims, time_axis);
  Instruction* len = b.Broadcast(b.Convert(lens, PrimitiveType::kS64), dims, {batch_axis});
  MLTUNE_ASSIGN(last, b.Add(Opcode::kSubtract, {len, b.Full(len, 1)}));
  MLTUNE_ASSIGN(mirrored, b.Add(Opcode::kSubtract, {last, t}));
  MLTUNE_ASSIGN(inside, b.Compare(ComparisonDirection::kLt, t, len));
  MLTUNE_ASSIGN(src, b.Select(inside, mirrored, t));
  MLTUNE_ASSIGN(coords, Coordinates(b, src, time_axis));
  return One(GatherPoints(b, x, coords));
}

// The output's shape depends on the input's values, so the input must be known at import.
Outputs NonZero(NodeContext& n) {
  absl::StatusOr<Literal> value = n.constant_input(0);
  if (!value.ok()) {
    return absl::UnimplementedError(
        absl::StrCat(std::string(value.status().message()),
                     " (NonZero's output shape depends on its input's values)"));
  }
  std::vector<int64_t> dims = value->shape().dimensions();
  if (dims.empty()) dims = {1};  // a scalar counts as one element, as numpy does
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < value->element_count(); ++i) {
    const bool nonzero = IsComplex(value->element_type())
                             ? value->GetAsComplex(i) != std::complex<double>(0, 0)
                             : value->GetAsDouble(i) != 0;
    if (nonzero) {
      hits.push_back(i);
    }
  }
  const int64_t count = static_cast<int64_t>(hits.size());
  MLTUNE_ASSIGN(out, n.NewLiteral(Shape(PrimitiveType::kS64, {rank, count})));
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = hits[j];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out.Set<int64_t>(d * count + j, rest % dims[d]);
      rest /= dims[d];
    }
  }
  return One(n.b().Constant(std::move(out)));
}

}  // namespace

void RegisterIndexOps(OpRegistry& r) {
  r.Register("Gather", GatherOp);
  r.Register("GatherElements", GatherElements);
  r.Register("GatherND", GatherND);
  r.Register("Scatter", ScatterElements);
  r.Register("ScatterElements", ScatterElements);
  r.Register("ScatterND", ScatterND);
  r.Register("OneHot", OneHot, {1});
  r.Register("Compress", Compress, {1});
  r.Register("ReverseSequence", ReverseSequence);
  r.Register("NonZero", NonZero, {0});
}

}  // namespace mltune::ir::onnx
