// gather and scatter with XLA's full semantics: index_vector_dim, collapsed/inserted dims,
// operand batching dims, start index clamping for gather, out-of-bounds windows skipped for
// scatter, variadic scatter with any combiner computation.
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

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Reads the start-index vector for batch position `batch` (the index into the indices array
// with index_vector_dim removed).
struct IndexReader {
  const Literal* indices;
  int64_t index_vector_dim;
  int64_t vector_size;  // 1 when index_vector_dim == rank (implicit trailing dimension)
  std::vector<int64_t> strides;
  int64_t rank;

  IndexReader(const Literal& l, int64_t ivd) : indices(&l), index_vector_dim(ivd) {
    const auto& dims = l.shape().dimensions();
    rank = static_cast<int64_t>(dims.size());
    vector_size = ivd < rank ? dims[ivd] : 1;
    strides = RowMajorStrides(dims);
  }
  // Batch dimensions of the indices array: all but index_vector_dim.
  std::vector<int64_t> BatchDims() const {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != index_vector_dim) dims.push_back(indices->shape().dimensions(d));
    }
    return dims;
  }
  // Position among the batch dims of indices dimension `d`.
  int64_t BatchPosition(int64_t d) const { return d < index_vector_dim ? d : d - 1; }
  int64_t Get(const std::vector<int64_t>& batch, int64_t k) const {
    int64_t offset = 0;
    int64_t j = 0;
    for (int64_t d = 0; d < rank; ++d) {
      offset += (d == index_vector_dim ? k : batch[j++]) * strides[d];
    }
    return indices->GetAsInt64(offset);
  }
};

// All of `dims` are distinct dimensions below `rank`.
bool ValidDims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// Batching dims of the indices must be real batch dimensions (not index_vector_dim).
bool ValidIndexBatchingDims(const std::vector<int64_t>& dims, const IndexReader& reader) {
  if (!ValidDims(dims, reader.rank)) return false;
  for (int64_t d : dims) {
    if (d == reader.index_vector_dim) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Literal> HandleGather(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2 || !instr.gather_dnums.has_value()) return Invalid(instr, "bad gather");
  const GatherDimensionNumbers& dn = *instr.gather_dnums;
  const Literal& operand = ops[0];
  const Literal& indices = ops[1];
  const auto& op_dims = operand.shape().dimensions();
  const int64_t op_rank = static_cast<int64_t>(op_dims.size());
  const auto& out_dims = instr.shape().dimensions();
  const int64_t out_rank = static_cast<int64_t>(out_dims.size());
  const std::vector<int64_t>& sizes = instr.gather_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != op_rank || dn.index_vector_dim < 0 ||
      dn.index_vector_dim > indices.shape().rank() ||
      dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size()) {
    return Invalid(instr, "gather dimension numbers do not match the operands");
  }
  IndexReader reader(indices, dn.index_vector_dim);
  if (reader.vector_size != static_cast<int64_t>(dn.start_index_map.size())) {
    return Invalid(instr, "start_index_map does not match the index vector");
  }
  for (int64_t d : dn.start_index_map) {
    if (d < 0 || d >= op_rank) return Invalid(instr, "start_index_map out of range");
  }
  // Output dims: offset dims carry the slice; the rest are batch dims, in order.
  std::vector<int64_t> batch_out_dims;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (!Contains(dn.offset_dims, d)) batch_out_dims.push_back(d);
  }
  // Operand dims the offset dims walk: not collapsed, not batching, in increasing order.
  std::vector<int64_t> window_op_dims;
  for (int64_t d = 0; d < op_rank; ++d) {
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d)) {
      window_op_dims.push_back(d);
    }
  }
  std::vector<int64_t> batch_sizes;
  for (int64_t d : batch_out_dims) batch_sizes.push_back(out_dims[d]);
  std::vector<int64_t> collapsed_and_batching = dn.collapsed_slice_dims;
  collapsed_and_batching.insert(collapsed_and_batching.end(), dn.operand_batching_dims.begin(),
                                dn.operand_batching_dims.end());
  if (window_op_dims.size() != dn.offset_dims.size() || batch_sizes != reader.BatchDims() ||
      !ValidDims(collapsed_and_batching, op_rank) || !ValidDims(dn.offset_dims, out_rank) ||
      !ValidIndexBatchingDims(dn.start_indices_batching_dims, reader)) {
    return Invalid(instr, "gather output does not match operand and indices");
  }
  for (size_t k = 0; k < window_op_dims.size(); ++k) {
    const int64_t od = dn.offset_dims[k];
    if (od < 0 || od >= out_rank || out_dims[od] > sizes[window_op_dims[k]]) {
      return Invalid(instr, "offset dims do not match slice sizes");
    }
  }
  for (int64_t d = 0; d < op_rank; ++d) {
    if (sizes[d] < 0 || sizes[d] > op_dims[d]) return Invalid(instr, "slice larger than operand");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  if (out->element_type() != operand.element_type()) return Invalid(instr, "type mismatch");
  const int size = StorageBytes(operand.element_type());
  const std::vector<int64_t> op_strides = RowMajorStrides(op_dims);
  std::vector<int64_t> batch(batch_out_dims.size());
  std::vector<int64_t> start(op_rank);
  int64_t linear = 0;
  uint8_t* o = out->untyped_data();
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& index) {
    for (size_t j = 0; j < batch_out_dims.size(); ++j) batch[j] = index[batch_out_dims[j]];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      start[dn.start_index_map[k]] = reader.Get(batch, static_cast<int64_t>(k));
    }
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      start[dn.operand_batching_dims[i]] =
          batch[reader.BatchPosition(dn.start_indices_batching_dims[i])];
    }
    int64_t offset = 0;
    for (int64_t d = 0; d < op_rank; ++d) {
      offset += std::clamp<int64_t>(start[d], 0, op_dims[d] - sizes[d]) * op_strides[d];
    }
    for (size_t k = 0; k < window_op_dims.size(); ++k) {
      offset += index[dn.offset_dims[k]] * op_strides[window_op_dims[k]];
    }
    std::memcpy(o + linear * size, operand.untyped_data() + offset * size, size);
    ++linear;
  });
  return out;
}

absl::StatusOr<Literal> HandleScatter(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (!instr.scatter_dnums.has_value() || ops.size() < 3 || ops.size() % 2 != 1 ||
      instr.to_apply() == nullptr) {
    return Invalid(instr, "bad scatter");
  }
  const ScatterDimensionNumbers& dn = *instr.scatter_dnums;
  const int64_t n = (ops.size() - 1) / 2;
  const Literal& indices = ops[n];
  // Copies: operand 0 may be moved out below.
  const std::vector<int64_t> op_dims = ops[0].shape().dimensions();
  const int64_t op_rank = static_cast<int64_t>(op_dims.size());
  const std::vector<int64_t> up_dims = ops[n + 1].shape().dimensions();
  const int64_t up_rank = static_cast<int64_t>(up_dims.size());
  for (int64_t k = 0; k < n; ++k) {
    if (!ops[k].shape().SameDimensions(ops[0].shape()) ||
        !ops[n + 1 + k].shape().SameDimensions(ops[n + 1].shape()) ||
        ops[k].element_type() != ops[n + 1 + k].element_type()) {
      return Invalid(instr, "operands or updates do not match");
    }
  }
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.shape().rank() ||
      dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size()) {
    return Invalid(instr, "scatter dimension numbers do not match the operands");
  }
  IndexReader reader(indices, dn.index_vector_dim);
  if (reader.vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
    return Invalid(instr, "scatter_dims_to_operand_dims does not match the index vector");
  }
  for (int64_t d : dn.scatter_dims_to_operand_dims) {
    if (d < 0 || d >= op_rank) return Invalid(instr, "scatter dims out of range");
  }
  std::vector<int64_t> scatter_up_dims;
  for (int64_t d = 0; d < up_rank; ++d) {
    if (!Contains(dn.update_window_dims, d)) scatter_up_dims.push_back(d);
  }
  std::vector<int64_t> window_op_dims;
  for (int64_t d = 0; d < op_rank; ++d) {
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d)) {
      window_op_dims.push_back(d);
    }
  }
  std::vector<int64_t> batch_sizes;
  for (int64_t d : scatter_up_dims) batch_sizes.push_back(up_dims[d]);
  std::vector<int64_t> inserted_and_batching = dn.inserted_window_dims;
  inserted_and_batching.insert(inserted_and_batching.end(), dn.input_batching_dims.begin(),
                               dn.input_batching_dims.end());
  if (window_op_dims.size() != dn.update_window_dims.size() || batch_sizes != reader.BatchDims() ||
      !ValidDims(inserted_and_batching, op_rank) || !ValidDims(dn.update_window_dims, up_rank) ||
      !ValidIndexBatchingDims(dn.scatter_indices_batching_dims, reader)) {
    return Invalid(instr, "scatter updates do not match operand and indices");
  }
  // Size of the update window along each operand dim (1 for inserted and batching dims).
  std::vector<int64_t> window_size(op_rank, 1);
  for (size_t k = 0; k < window_op_dims.size(); ++k) {
    const int64_t ud = dn.update_window_dims[k];
    if (ud < 0 || ud >= up_rank) return Invalid(instr, "update_window_dims out of range");
    window_size[window_op_dims[k]] = up_dims[ud];
  }
  std::vector<Literal> outs;
  for (int64_t k = 0; k < n; ++k) outs.push_back(ops.Take(k));
  const std::vector<int64_t> op_strides = RowMajorStrides(op_dims);
  const PrimitiveType type = outs[0].element_type();

  // The combiner: a typed loop when it is one binary op (or an assignment), else interpreted.
  std::optional<SimpleBinary> simple;
  if (n == 1) simple = MatchSimpleBinary(*instr.to_apply());
  // Collects (operand offset, update offset) pairs in update order, skipping windows that do
  // not fit the operand (XLA skips the whole out-of-bounds window).
  std::vector<std::pair<int64_t, int64_t>> targets;
  std::vector<int64_t> batch(scatter_up_dims.size());
  std::vector<int64_t> start(op_rank);
  int64_t up_linear = 0;
  ForEachIndex(up_dims, [&](const std::vector<int64_t>& index) {
    for (size_t j = 0; j < scatter_up_dims.size(); ++j) batch[j] = index[scatter_up_dims[j]];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
      start[dn.scatter_dims_to_operand_dims[k]] = reader.Get(batch, static_cast<int64_t>(k));
    }
    for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
      start[dn.input_batching_dims[i]] =
          batch[reader.BatchPosition(dn.scatter_indices_batching_dims[i])];
    }
    bool in_bounds = true;
    int64_t offset = 0;
    for (int64_t d = 0; d < op_rank; ++d) {
      if (start[d] < 0 || start[d] > op_dims[d] - window_size[d]) in_bounds = false;
      offset += start[d] * op_strides[d];
    }
    for (size_t k = 0; k < window_op_dims.size(); ++k) {
      offset += index[dn.update_window_dims[k]] * op_strides[window_op_dims[k]];
    }
    if (in_bounds) targets.push_back({offset, up_linear});
    ++up_linear;
  });

  if (simple.has_value()) {
    const Literal& updates = ops[n + 1];
    uint8_t* o = outs[0].untyped_data();
    const uint8_t* u = updates.untyped_data();
    absl::Status s = DispatchType(type, [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      using C = typename Tr::C;
      if (simple->kind == SimpleBinary::kSecond) {
        for (auto [t, i] : targets) Tr::Store(o, t, Tr::Load(u, i));
        return absl::OkStatus();
      }
      if (simple->kind == SimpleBinary::kFirst) return absl::OkStatus();
      const bool swapped = simple->swapped;
      return WithBinaryOp<Tr>(simple->op, [&](auto fn) {
        for (auto [t, i] : targets) {
          const C cur = Tr::Load(o, t);
          const C upd = Tr::Load(u, i);
          Tr::Store(o, t, swapped ? fn(upd, cur) : fn(cur, upd));
        }
        return absl::OkStatus();
      });
    });
    if (!s.ok()) return s;
  } else {
    std::vector<PrimitiveType> types, result_types;
    for (int64_t k = 0; k < n; ++k) result_types.push_back(outs[k].element_type());
    types = result_types;
    types.insert(types.end(), result_types.begin(), result_types.end());
    absl::StatusOr<ScalarCall> call = ScalarCall::Make(ev, *instr.to_apply(), types, result_types);
    if (!call.ok()) return call.status();
    for (auto [t, i] : targets) {
      for (int64_t k = 0; k < n; ++k) {
        const int sz = StorageBytes(result_types[k]);
        call->SetArg(k, outs[k].untyped_data() + t * sz);
        call->SetArg(n + k, ops[n + 1 + k].untyped_data() + i * sz);
      }
      if (absl::Status s = call->Call(); !s.ok()) return s;
      for (int64_t k = 0; k < n; ++k) {
        const int sz = StorageBytes(result_types[k]);
        std::memcpy(outs[k].untyped_data() + t * sz, call->Result(k), sz);
      }
    }
  }
  if (n == 1) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

}  // namespace mltune::ir::eval
