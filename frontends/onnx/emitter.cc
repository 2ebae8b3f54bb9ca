#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"
#include "ir/hlo_builder.h"
#include "ir/shape_inference.h"

namespace mltune::ir::onnx {
namespace {

// The computation files a parameter under its number when it is added, so set it first.
Instruction* MakeParameter(Computation& c, int64_t number, const Shape& shape,
                           std::string_view name) {
  std::string unique =
      c.parent() != nullptr ? c.parent()->UniqueInstructionName(name) : std::string(name);
  auto p = std::make_unique<Instruction>(Opcode::kParameter, shape, std::move(unique));
  p->parameter_number = number;
  return c.AddInstruction(std::move(p));
}

}  // namespace

absl::StatusOr<Instruction*> Emitter::Add(Opcode opcode, const std::vector<Instruction*>& operands,
                                          const std::function<void(Instruction&)>& set_attributes,
                                          std::optional<Shape> shape) {
  // Dots and convolutions read their result type from the declared shape (XLA's preferred
  // element type): declare the wider of the first two operands' types.
  Shape placeholder;
  if (!operands.empty() && operands[0]->shape().IsArray()) {
    PrimitiveType t = operands[0]->shape().element_type();
    if (operands.size() > 1 && operands[1]->shape().IsArray() &&
        BitWidth(operands[1]->shape().element_type()) > BitWidth(t)) {
      t = operands[1]->shape().element_type();
    }
    placeholder = Shape(t, {});
  }
  Instruction* instr = ir::AddInstr(c_, opcode, shape.value_or(placeholder), operands);
  if (set_attributes) set_attributes(*instr);
  if (!shape.has_value()) {
    absl::StatusOr<std::optional<Shape>> inferred = InferShape(*instr);
    if (!inferred.ok() || !inferred->has_value()) {
      absl::Status error = inferred.ok()
                               ? absl::InternalError(absl::StrCat("no shape inference for ",
                                                                  std::string(OpcodeName(opcode))))
                               : inferred.status();
      instr->ClearOperands();
      (void)c_.RemoveInstruction(instr);
      return error;
    }
    Shape s = std::move(**inferred);
    if (s.IsArray()) s.SetDefaultLayout();
    instr->set_shape(std::move(s));
  }
  return instr;
}

Instruction* Emitter::Must(absl::StatusOr<Instruction*> result, Instruction* fallback) {
  if (result.ok()) return *result;
  if (error_.ok()) error_ = result.status();
  return fallback;
}

absl::Status Emitter::TakeError() {
  absl::Status e = error_;
  error_ = absl::OkStatus();
  return e;
}

Instruction* Emitter::Parameter(int64_t number, const Shape& shape, std::string_view name) {
  return MakeParameter(c_, number, shape, name);
}

Instruction* Emitter::Constant(Literal value) { return ir::MakeConstant(c_, std::move(value)); }

Instruction* Emitter::Scalar(PrimitiveType type, double value) {
  return ir::MakeScalarConstant(c_, type, value);
}

Instruction* Emitter::Full(Instruction* like, double value) {
  return Full(like->shape().element_type(), like->shape().dimensions(), value);
}

Instruction* Emitter::Full(PrimitiveType type, const std::vector<int64_t>& dims, double value) {
  Instruction* s = Scalar(type, value);
  return dims.empty() ? s : Broadcast(s, dims, {});
}

Instruction* Emitter::Int64s(const std::vector<int64_t>& values) {
  Literal lit = *Literal::Create(Shape(PrimitiveType::kS64, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) lit.Set<int64_t>(i, values[i]);
  return Constant(std::move(lit));
}

Instruction* Emitter::Broadcast(Instruction* x, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& mapping) {
  return ir::MakeBroadcast(c_, x, dims, mapping);
}

absl::StatusOr<Instruction*> Emitter::BroadcastTo(Instruction* x,
                                                  const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& from = x->shape().dimensions();
  if (from == dims) return x;
  const int64_t offset = static_cast<int64_t>(dims.size()) - x->shape().rank();
  if (offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot broadcast [", absl::StrJoin(from, ","),
                                                   "] to [", absl::StrJoin(dims, ","),
                                                   "]: more dimensions than the target"));
  }
  // Dimensions of extent 1 that grow are dropped by a reshape, the rest map in place.
  std::vector<int64_t> kept_dims, mapping;
  for (int64_t i = 0; i < x->shape().rank(); ++i) {
    if (from[i] == dims[i + offset]) {
      kept_dims.push_back(from[i]);
      mapping.push_back(i + offset);
    } else if (from[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("cannot broadcast [", absl::StrJoin(from, ","),
                                                     "] to [", absl::StrJoin(dims, ","),
                                                     "]: dimension ", i, " is ", from[i]));
    }
  }
  Instruction* y = kept_dims.size() == from.size() ? x : Reshape(x, kept_dims);
  return Broadcast(y, dims, mapping);
}

absl::StatusOr<std::vector<Instruction*>> Emitter::BroadcastAll(
    const std::vector<Instruction*>& xs) {
  int64_t rank = 0;
  for (Instruction* x : xs) rank = std::max(rank, x->shape().rank());
  std::vector<int64_t> dims(rank, 1);
  for (Instruction* x : xs) {
    const int64_t offset = rank - x->shape().rank();
    for (int64_t i = 0; i < x->shape().rank(); ++i) {
      const int64_t d = x->shape().dimensions(i);
      int64_t& out = dims[i + offset];
      if (d == out || d == 1) continue;
      if (out != 1) {
        std::vector<std::string> shapes;
        for (Instruction* y : xs) shapes.push_back(y->shape().ToString(false));
        return absl::InvalidArgumentError(
            absl::StrCat("operands ", absl::StrJoin(shapes, ", "), " do not broadcast together"));
      }
      out = d;
    }
  }
  std::vector<Instruction*> out;
  for (Instruction* x : xs) {
    absl::StatusOr<Instruction*> y = BroadcastTo(x, dims);
    if (!y.ok()) return y.status();
    out.push_back(*y);
  }
  return out;
}

Instruction* Emitter::Reshape(Instruction* x, const std::vector<int64_t>& dims) {
  if (x->shape().dimensions() == dims) return x;
  return ir::MakeReshape(c_, x, dims);
}

Instruction* Emitter::Transpose(Instruction* x, const std::vector<int64_t>& permutation) {
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == int64_t(i);
  if (identity) return x;
  return ir::MakeTranspose(c_, x, permutation);
}

Instruction* Emitter::Convert(Instruction* x, PrimitiveType type) {
  if (x->shape().element_type() == type) return x;
  return ir::MakeConvert(c_, x, type);
}

Instruction* Emitter::Unary(Opcode opcode, Instruction* x) { return ir::MakeUnary(c_, opcode, x); }

absl::StatusOr<Instruction*> Emitter::Binary(Opcode opcode, Instruction* a, Instruction* b) {
  absl::StatusOr<std::vector<Instruction*>> ab = BroadcastAll({a, b});
  if (!ab.ok()) return ab.status();
  return Add(opcode, *ab);
}

absl::StatusOr<Instruction*> Emitter::Compare(ComparisonDirection direction, Instruction* a,
                                              Instruction* b) {
  absl::StatusOr<std::vector<Instruction*>> ab = BroadcastAll({a, b});
  if (!ab.ok()) return ab.status();
  return ir::MakeCompare(c_, direction, (*ab)[0], (*ab)[1]);
}

absl::StatusOr<Instruction*> Emitter::Select(Instruction* pred, Instruction* a, Instruction* b) {
  absl::StatusOr<std::vector<Instruction*>> all = BroadcastAll({pred, a, b});
  if (!all.ok()) return all.status();
  return Add(Opcode::kSelect, *all);
}

Instruction* Emitter::Slice(Instruction* x, const std::vector<ir::SliceDim>& slice) {
  return ir::MakeSlice(c_, x, slice);
}

Instruction* Emitter::SliceDim(Instruction* x, int64_t dim, int64_t start, int64_t limit,
                               int64_t stride) {
  std::vector<ir::SliceDim> slice;
  for (int64_t d : x->shape().dimensions()) slice.push_back({0, d, 1});
  slice[dim] = {start, limit, stride};
  return Slice(x, slice);
}

absl::StatusOr<Instruction*> Emitter::Concatenate(const std::vector<Instruction*>& xs,
                                                  int64_t dim) {
  if (xs.size() == 1) return xs[0];
  return Add(Opcode::kConcatenate, xs, [&](Instruction& i) { i.dimensions = {dim}; });
}

Instruction* Emitter::Iota(PrimitiveType type, const std::vector<int64_t>& dims, int64_t iota_dim) {
  Instruction* i = ir::AddInstr(c_, Opcode::kIota, Shape(type, dims), {});
  i->iota_dimension = iota_dim;
  return i;
}

Computation* Emitter::ScalarComputation(Opcode combiner, PrimitiveType type) {
  const std::string name = absl::StrCat("onnx_", std::string(OpcodeName(combiner)), "_",
                                        std::string(PrimitiveTypeName(type)));
  if (Computation* existing = module_.FindComputation(name)) return existing;
  auto comp = std::make_unique<Computation>(name);
  Computation* raw = module_.AddComputation(std::move(comp));
  Instruction* a = MakeParameter(*raw, 0, Shape::Scalar(type), "a");
  Instruction* b = MakeParameter(*raw, 1, Shape::Scalar(type), "b");
  raw->set_root(ir::AddInstr(*raw, combiner, Shape::Scalar(type), {a, b}));
  return raw;
}

Instruction* Emitter::Reduce(Instruction* x, const std::vector<int64_t>& dims, Opcode combiner,
                             double init) {
  const PrimitiveType type = x->shape().element_type();
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < x->shape().rank(); ++i) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
      out_dims.push_back(x->shape().dimensions(i));
    }
  }
  Instruction* r =
      ir::AddInstr(c_, Opcode::kReduce, Shape(type, out_dims), {x, Scalar(type, init)});
  r->dimensions = dims;
  std::sort(r->dimensions.begin(), r->dimensions.end());
  r->mutable_called_computations().push_back(ScalarComputation(combiner, type));
  return r;
}

absl::StatusOr<Instruction*> Emitter::ReduceWindow(Instruction* x, const Window& window,
                                                   Opcode combiner, double init) {
  const PrimitiveType type = x->shape().element_type();
  Computation* f = ScalarComputation(combiner, type);
  return Add(Opcode::kReduceWindow, {x, Scalar(type, init)}, [&](Instruction& i) {
    i.window = window;
    i.mutable_called_computations().push_back(f);
  });
}

absl::StatusOr<Instruction*> Emitter::Dot(Instruction* lhs, Instruction* rhs,
                                          const DotDimensionNumbers& dnums) {
  return Add(Opcode::kDot, {lhs, rhs}, [&](Instruction& i) { i.dot_dnums = dnums; });
}

Instruction* Emitter::Tuple(const std::vector<Instruction*>& xs) { return ir::MakeTuple(c_, xs); }

Instruction* Emitter::GetTupleElement(Instruction* tuple, int64_t index) {
  return ir::MakeGetTupleElement(c_, tuple, index);
}

Instruction* Emitter::InsertUnitDims(Instruction* x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> dims;
  const int64_t rank = x->shape().rank() + static_cast<int64_t>(axes.size());
  int64_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
      dims.push_back(1);
    } else {
      dims.push_back(x->shape().dimensions(next++));
    }
  }
  return Reshape(x, dims);
}

}  // namespace mltune::ir::onnx
