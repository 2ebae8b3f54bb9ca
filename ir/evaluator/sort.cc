// sort (variadic, any comparator computation, always stable) and topk.
// Sorting uses a plain bottom-up merge sort on indices: stable, and safe even when a comparator
// is not a strict weak order (std::sort may read out of bounds then).
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/evaluator/element_types.h"
#include "ir/evaluator/elementwise_ops.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/index_util.h"

namespace mltune::ir::eval {
namespace {

// Stable merge sort of positions 0..n-1 under less(a, b).
template <typename Less>
void MergeSort(std::vector<int64_t>& perm, Less&& less) {
  const int64_t n = static_cast<int64_t>(perm.size());
  std::vector<int64_t> tmp(n);
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = less(perm[j], perm[i]) ? perm[j++] : perm[i++];
      while (i < mid) tmp[k++] = perm[i++];
      while (j < hi) tmp[k++] = perm[j++];
    }
    perm.swap(tmp);
  }
}

// Calls fn(offsets) for every 1-D slice of `dims` along `dim`: offsets are the slice's linear
// element offsets in order.
template <typename F>
void ForEachSlice(const std::vector<int64_t>& dims, int64_t dim, F&& fn) {
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> offsets(dims[dim]);
  ForEachStrided(outer, strides, 0, [&](int64_t, int64_t base) {
    for (int64_t i = 0; i < dims[dim]; ++i) offsets[i] = base + i * strides[dim];
    fn(static_cast<const std::vector<int64_t>&>(offsets));
  });
}

}  // namespace

absl::StatusOr<Literal> HandleSort(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const int64_t n = ops.size();
  if (n == 0 || instr.to_apply() == nullptr || instr.dimensions.size() != 1) {
    return Invalid(instr, "bad sort");
  }
  const auto& dims = ops[0].shape().dimensions();
  const int64_t dim = instr.dimensions[0];
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size())) {
    return Invalid(instr, "sort dimension out of range");
  }
  std::vector<PrimitiveType> arg_types;
  for (int64_t k = 0; k < n; ++k) {
    if (!ops[k].shape().SameDimensions(ops[0].shape())) {
      return Invalid(instr, "operands differ in shape");
    }
    arg_types.push_back(ops[k].element_type());
    arg_types.push_back(ops[k].element_type());
  }
  const Computation& cmp = *instr.to_apply();
  std::vector<Literal> outs;
  for (int64_t k = 0; k < n; ++k) {
    absl::StatusOr<Literal> o = ev.NewLiteral(ops[k].shape());
    if (!o.ok()) return o.status();
    outs.push_back(*std::move(o));
  }
  std::vector<int64_t> perm;
  auto permute = [&](const std::vector<int64_t>& offsets) {
    for (int64_t k = 0; k < n; ++k) {
      const int size = StorageBytes(ops[k].element_type());
      for (size_t i = 0; i < offsets.size(); ++i) {
        std::memcpy(outs[k].untyped_data() + offsets[i] * size,
                    ops[k].untyped_data() + offsets[perm[i]] * size, size);
      }
    }
  };
  auto run = [&](auto&& less) {
    ForEachSlice(dims, dim, [&](const std::vector<int64_t>& offsets) {
      perm.resize(offsets.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      MergeSort(perm, [&](int64_t a, int64_t b) { return less(offsets[a], offsets[b]); });
      permute(offsets);
    });
  };

  // Fast path: the comparator is compare(param 2k, param 2k+1) (or swapped) on operand k.
  std::optional<SimpleCompare> simple = MatchSimpleCompare(cmp);
  if (simple.has_value() && cmp.parameter_count() == 2 * n) {
    const int64_t lo = std::min(simple->lhs_param, simple->rhs_param);
    const int64_t hi = std::max(simple->lhs_param, simple->rhs_param);
    if (lo % 2 == 0 && hi == lo + 1) {
      const int64_t k = lo / 2;
      const bool swapped = simple->lhs_param > simple->rhs_param;
      const Literal& keys = ops[k];
      return DispatchType(keys.element_type(), [&](auto tr) -> absl::StatusOr<Literal> {
        using Tr = decltype(tr);
        const uint8_t* data = keys.untyped_data();
        run([&](int64_t a, int64_t b) {
          const auto x = Tr::Load(data, a), y = Tr::Load(data, b);
          return swapped ? CompareValues(simple->direction, simple->total_order, y, x)
                         : CompareValues(simple->direction, simple->total_order, x, y);
        });
        if (n == 1) return std::move(outs[0]);
        return Literal::MakeTuple(std::move(outs));
      });
    }
  }

  absl::StatusOr<ScalarCall> call = ScalarCall::Make(ev, cmp, arg_types, {PrimitiveType::kPred});
  if (!call.ok()) return Invalid(instr, call.status().message());
  absl::Status status;
  run([&](int64_t a, int64_t b) {
    if (!status.ok()) return false;
    for (int64_t k = 0; k < n; ++k) {
      const int size = StorageBytes(ops[k].element_type());
      call->SetArg(2 * k, ops[k].untyped_data() + a * size);
      call->SetArg(2 * k + 1, ops[k].untyped_data() + b * size);
    }
    status = call->Call();
    return status.ok() && *call->Result(0) != 0;
  });
  if (!status.ok()) return status;
  if (n == 1) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

absl::StatusOr<Literal> HandleTopK(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  const Shape& shape = instr.shape();
  if (ops.size() != 1 || !shape.IsTuple() || shape.tuple_size() != 2 || in.shape().rank() < 1) {
    return Invalid(instr, "bad topk");
  }
  const auto& dims = in.shape().dimensions();
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  const int64_t k = instr.topk_k;
  std::vector<int64_t> out_dims = dims;
  out_dims[last] = k;
  if (k < 0 || k > dims[last] || shape.tuple_shapes(0).dimensions() != out_dims ||
      shape.tuple_shapes(1).dimensions() != out_dims ||
      shape.tuple_shapes(0).element_type() != in.element_type() ||
      !IsIntegral(shape.tuple_shapes(1).element_type())) {
    return Invalid(instr, "k does not match the result");
  }
  absl::StatusOr<Literal> values = ev.NewLiteral(shape.tuple_shapes(0));
  if (!values.ok()) return values.status();
  absl::StatusOr<Literal> indices = ev.NewLiteral(shape.tuple_shapes(1));
  if (!indices.ok()) return indices.status();
  const int size = StorageBytes(in.element_type());
  const bool largest = instr.topk_largest;
  absl::Status s = DispatchType(in.element_type(), [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    const uint8_t* data = in.untyped_data();
    std::vector<int64_t> perm;
    int64_t row = 0;
    ForEachSlice(dims, last, [&](const std::vector<int64_t>& offsets) {
      perm.resize(offsets.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      // Ties keep the lower index first (stable); floats order by total order.
      MergeSort(perm, [&](int64_t a, int64_t b) {
        const auto x = Tr::Load(data, offsets[a]), y = Tr::Load(data, offsets[b]);
        return CompareValues(largest ? ComparisonDirection::kGt : ComparisonDirection::kLt, true, x,
                             y);
      });
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(values->untyped_data() + (row * k + j) * size, data + offsets[perm[j]] * size,
                    size);
        indices->SetFromInt64(row * k + j, perm[j]);
      }
      ++row;
    });
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  std::vector<Literal> parts;
  parts.push_back(*std::move(values));
  parts.push_back(*std::move(indices));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace mltune::ir::eval
