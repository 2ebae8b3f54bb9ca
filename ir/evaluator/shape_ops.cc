// Data-movement ops: broadcast, reshape/bitcast, transpose, slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reverse, iota, get-dimension-size. They move elements
// by byte size, so one implementation serves every element type.
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/element_types.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/index_util.h"

namespace mltune::ir::eval {
namespace {

int ElementBytes(const Literal& l) { return StorageBytes(l.element_type()); }

absl::Status CheckArray(const Instruction& instr, const Literal& l) {
  if (!l.shape().IsArray()) return Invalid(instr, "operand must be an array");
  return absl::OkStatus();
}

// Start indices of dynamic-slice / dynamic-update-slice: scalar operands from `first` on, or
// (older form) one rank-1 operand. Clamped so the window [start, start+size) stays in bounds.
absl::StatusOr<std::vector<int64_t>> StartIndices(const Instruction& instr, Operands& ops,
                                                  int64_t first, const std::vector<int64_t>& dims,
                                                  const std::vector<int64_t>& sizes) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> start(rank, 0);
  if (ops.size() == first + 1 && ops[first].shape().rank() == 1 && rank != 1) {
    if (ops[first].element_count() != rank) return Invalid(instr, "wrong number of indices");
    for (int64_t d = 0; d < rank; ++d) start[d] = ops[first].GetAsInt64(d);
  } else {
    if (ops.size() != first + rank) return Invalid(instr, "wrong number of start indices");
    for (int64_t d = 0; d < rank; ++d) {
      if (ops[first + d].element_count() != 1) return Invalid(instr, "start index not scalar");
      start[d] = ops[first + d].GetAsInt64(0);
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] > dims[d] || sizes[d] < 0) return Invalid(instr, "window larger than operand");
    start[d] = std::clamp<int64_t>(start[d], 0, dims[d] - sizes[d]);
  }
  return start;
}

}  // namespace

absl::StatusOr<Literal> HandleBroadcast(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& out_dims = instr.shape().dimensions();
  const auto& in_dims = in.shape().dimensions();
  if (instr.dimensions.size() != in_dims.size()) return Invalid(instr, "wrong dimensions");
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> strides(out_dims.size(), 0);
  for (size_t k = 0; k < in_dims.size(); ++k) {
    const int64_t d = instr.dimensions[k];
    if (d < 0 || d >= static_cast<int64_t>(out_dims.size()) || out_dims[d] != in_dims[k]) {
      return Invalid(instr, "dimensions do not match the result");
    }
    strides[d] = in_strides[k];
  }
  StridedGather(in.untyped_data(), out->untyped_data(), ElementBytes(in), out_dims, strides, 0);
  return out;
}

absl::StatusOr<Literal> HandleReshape(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  if (in.element_count() != instr.shape().ElementCount() ||
      in.element_type() != instr.shape().element_type()) {
    return Invalid(instr, "operand and result differ in size or type");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  if (in.size_bytes() > 0) std::memcpy(out->untyped_data(), in.untyped_data(), in.size_bytes());
  return out;
}

absl::StatusOr<Literal> HandleTranspose(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& in_dims = in.shape().dimensions();
  const auto& out_dims = instr.shape().dimensions();
  const std::vector<int64_t>& perm = instr.dimensions;
  if (perm.size() != in_dims.size() || out_dims.size() != in_dims.size()) {
    return Invalid(instr, "wrong permutation");
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(in_dims.size()) ||
        in_dims[perm[i]] != out_dims[i]) {
      return Invalid(instr, "permutation does not match the result");
    }
    strides[i] = in_strides[perm[i]];
  }
  StridedGather(in.untyped_data(), out->untyped_data(), ElementBytes(in), out_dims, strides, 0);
  return out;
}

absl::StatusOr<Literal> HandleSlice(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& in_dims = in.shape().dimensions();
  const auto& out_dims = instr.shape().dimensions();
  if (instr.slice.size() != in_dims.size() || out_dims.size() != in_dims.size()) {
    return Invalid(instr, "wrong slice rank");
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> strides(in_dims.size());
  int64_t base = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const SliceDim& s = instr.slice[d];
    if (s.stride <= 0 || s.start < 0 || s.limit > in_dims[d] || s.start > s.limit ||
        (s.limit - s.start + s.stride - 1) / s.stride != out_dims[d]) {
      return Invalid(instr, "slice does not match operand and result");
    }
    base += s.start * in_strides[d];
    strides[d] = s.stride * in_strides[d];
  }
  StridedGather(in.untyped_data(), out->untyped_data(), ElementBytes(in), out_dims, strides, base);
  return out;
}

absl::StatusOr<Literal> HandleDynamicSlice(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  const auto& in_dims = in.shape().dimensions();
  const auto& out_dims = instr.shape().dimensions();
  if (out_dims.size() != in_dims.size()) return Invalid(instr, "rank mismatch");
  absl::StatusOr<std::vector<int64_t>> start = StartIndices(instr, ops, 1, in_dims, out_dims);
  if (!start.ok()) return start.status();
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const std::vector<int64_t> strides = RowMajorStrides(in_dims);
  int64_t base = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) base += (*start)[d] * strides[d];
  StridedGather(in.untyped_data(), out->untyped_data(), ElementBytes(in), out_dims, strides, base);
  return out;
}

absl::StatusOr<Literal> HandleDynamicUpdateSlice(Evaluator&, const Instruction& instr,
                                                 Operands& ops) {
  if (ops.size() < 2) return Invalid(instr, "needs operand and update");
  if (absl::Status s = CheckArray(instr, ops[0]); !s.ok()) return s;
  const std::vector<int64_t> in_dims = ops[0].shape().dimensions();
  const Literal& update = ops[1];
  const auto& up_dims = update.shape().dimensions();
  if (up_dims.size() != in_dims.size() || update.element_type() != ops[0].element_type()) {
    return Invalid(instr, "update does not match the operand");
  }
  absl::StatusOr<std::vector<int64_t>> start = StartIndices(instr, ops, 2, in_dims, up_dims);
  if (!start.ok()) return start.status();
  const std::vector<int64_t> strides = RowMajorStrides(in_dims);
  int64_t base = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) base += (*start)[d] * strides[d];
  const int size = ElementBytes(update);
  // Take moves operand 0 only when no other operand slot reads the same value, so `update`
  // stays valid.
  Literal out = ops.Take(0);
  StridedScatter(update.untyped_data(), out.untyped_data(), size, up_dims, strides, base);
  return out;
}

absl::StatusOr<Literal> HandleConcatenate(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.dimensions.size() != 1 || ops.size() == 0) return Invalid(instr, "bad operands");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& out_dims = instr.shape().dimensions();
  const int64_t dim = instr.dimensions[0];
  if (dim < 0 || dim >= static_cast<int64_t>(out_dims.size())) {
    return Invalid(instr, "dimension out of range");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out_dims[d];
  for (size_t d = dim + 1; d < out_dims.size(); ++d) inner *= out_dims[d];
  const int size = StorageBytes(out->element_type());
  const int64_t out_row = out_dims[dim] * inner * size;
  int64_t offset = 0;  // bytes into each output row
  for (int64_t k = 0; k < ops.size(); ++k) {
    const Literal& in = ops[k];
    const auto& in_dims = in.shape().dimensions();
    if (!in.shape().IsArray() || in_dims.size() != out_dims.size() ||
        in.element_type() != out->element_type()) {
      return Invalid(instr, "operand does not match the result");
    }
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (static_cast<int64_t>(d) != dim && in_dims[d] != out_dims[d]) {
        return Invalid(instr, "operand does not match the result");
      }
    }
    const int64_t row = in_dims[dim] * inner * size;
    if (offset + row > out_row) return Invalid(instr, "operands exceed the result");
    for (int64_t o = 0; o < outer && row > 0; ++o) {
      std::memcpy(out->untyped_data() + o * out_row + offset, in.untyped_data() + o * row, row);
    }
    offset += row;
  }
  if (offset != out_row) return Invalid(instr, "operands do not fill the result");
  return out;
}

absl::StatusOr<Literal> HandlePad(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2) return Invalid(instr, "needs operand and padding value");
  const Literal& in = ops[0];
  const Literal& value = ops[1];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& in_dims = in.shape().dimensions();
  const auto& out_dims = instr.shape().dimensions();
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  if (static_cast<int64_t>(instr.padding.size()) != rank ||
      static_cast<int64_t>(out_dims.size()) != rank || value.element_count() != 1 ||
      value.element_type() != in.element_type() || out->element_type() != in.element_type()) {
    return Invalid(instr, "padding does not match operand and result");
  }
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDim& p = instr.padding[d];
    const int64_t expect =
        p.low + p.high + in_dims[d] + std::max<int64_t>(in_dims[d] - 1, 0) * p.interior;
    if (p.interior < 0 || expect != out_dims[d]) return Invalid(instr, "wrong padded size");
  }
  const int size = ElementBytes(in);
  const int64_t n = out->element_count();
  uint8_t* o = out->untyped_data();
  for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * size, value.untyped_data(), size);
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  int64_t linear = 0;
  ForEachIndex(in_dims, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t pos = instr.padding[d].low + index[d] * (instr.padding[d].interior + 1);
      if (pos < 0 || pos >= out_dims[d]) {
        inside = false;
        break;
      }
      offset += pos * out_strides[d];
    }
    if (inside) std::memcpy(o + offset * size, in.untyped_data() + linear * size, size);
    ++linear;
  });
  return out;
}

absl::StatusOr<Literal> HandleReverse(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  if (absl::Status s = CheckArray(instr, in); !s.ok()) return s;
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& dims = in.shape().dimensions();
  if (!in.shape().SameDimensions(instr.shape())) return Invalid(instr, "shape mismatch");
  std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t base = 0;
  for (int64_t d : instr.dimensions) {
    if (d < 0 || d >= static_cast<int64_t>(dims.size())) return Invalid(instr, "bad dimension");
    base += (dims[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  StridedGather(in.untyped_data(), out->untyped_data(), ElementBytes(in), dims, strides, base);
  return out;
}

absl::StatusOr<Literal> HandleIota(Evaluator& ev, const Instruction& instr, Operands&) {
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& dims = instr.shape().dimensions();
  const int64_t d = instr.iota_dimension;
  if (d < 0 || d >= static_cast<int64_t>(dims.size())) return Invalid(instr, "bad dimension");
  const int64_t stride = RowMajorStrides(dims)[d];
  const int64_t extent = dims[d];
  const int64_t n = out->element_count();
  uint8_t* o = out->untyped_data();
  absl::Status s = DispatchType(out->element_type(), [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = (i / stride) % extent;
      if constexpr (kIsComplex<C>) {
        Tr::Store(o, i, C(static_cast<typename C::value_type>(v), 0));
      } else if constexpr (kIsBool<C>) {
        Tr::Store(o, i, v != 0);
      } else {
        Tr::Store(o, i, Tr::Round(static_cast<C>(v)));
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Literal> HandleGetDimensionSize(Evaluator& ev, const Instruction& instr,
                                               Operands& ops) {
  const Literal& in = ops[0];
  const int64_t dim = instr.dimensions.size() == 1 ? instr.dimensions[0] : -1;
  if (dim < 0 || dim >= in.shape().rank()) return Invalid(instr, "bad dimension");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  out->SetFromInt64(0, in.shape().dimensions(dim));
  return out;
}

}  // namespace mltune::ir::eval
