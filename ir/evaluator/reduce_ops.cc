// Reductions: reduce (variadic), reduce-window (variadic, padding, dilations), select-and-scatter
// and map. Reducers that are one binary op run as typed loops; others are interpreted per step.
// Each output element folds its inputs in row-major order, as XLA's evaluator does.
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

// Splits a variadic reduce's operands into inputs and inits, creating the outputs filled with
// the inits.
struct Variadic {
  int64_t n = 0;
  std::vector<Literal> outs;
  std::vector<PrimitiveType> types;
};

absl::StatusOr<Variadic> MakeOutputs(Evaluator& ev, const Instruction& instr, Operands& ops) {
  Variadic v;
  if (ops.size() < 2 || ops.size() % 2 != 0) return Invalid(instr, "needs inputs and inits");
  v.n = ops.size() / 2;
  const Shape& shape = instr.shape();
  if (v.n > 1 && (!shape.IsTuple() || shape.tuple_size() != v.n)) {
    return Invalid(instr, "result must be a tuple of one array per input");
  }
  for (int64_t k = 0; k < v.n; ++k) {
    const Shape& s = v.n == 1 ? shape : shape.tuple_shapes(k);
    const Literal& init = ops[v.n + k];
    if (!s.IsArray() || init.element_count() != 1 || init.element_type() != s.element_type() ||
        ops[k].element_type() != s.element_type() ||
        !ops[k].shape().SameDimensions(ops[0].shape())) {
      return Invalid(instr, "inputs, inits and results do not match");
    }
    absl::StatusOr<Literal> out = ev.NewLiteral(s);
    if (!out.ok()) return out.status();
    const int size = StorageBytes(s.element_type());
    for (int64_t i = 0; i < out->element_count(); ++i) {
      std::memcpy(out->untyped_data() + i * size, init.untyped_data(), size);
    }
    v.types.push_back(s.element_type());
    v.outs.push_back(*std::move(out));
  }
  return v;
}

Literal Finish(Variadic& v) {
  if (v.n == 1) return std::move(v.outs[0]);
  return Literal::MakeTuple(std::move(v.outs));
}

// Folds inputs into outputs through the reducer: for_each_pair(cb) calls cb(output offset,
// input offset) in fold order. A typed loop when the reducer is a single binary op, else the
// interpreted computation on (accumulators..., inputs...).
template <typename ForEachPair>
absl::Status Fold(Evaluator& ev, const Instruction& instr, const Computation& reducer, Variadic& v,
                  Operands& ops, ForEachPair&& for_each_pair) {
  std::optional<SimpleBinary> simple;
  if (v.n == 1) simple = MatchSimpleBinary(reducer);
  if (simple.has_value()) {
    uint8_t* o = v.outs[0].untyped_data();
    const uint8_t* in = ops[0].untyped_data();
    return DispatchType(v.types[0], [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      using C = typename Tr::C;
      if (simple->kind == SimpleBinary::kFirst) return absl::OkStatus();
      if (simple->kind == SimpleBinary::kSecond) {
        for_each_pair([&](int64_t oi, int64_t ii) { Tr::Store(o, oi, Tr::Load(in, ii)); });
        return absl::OkStatus();
      }
      const bool swapped = simple->swapped;
      return WithBinaryOp<Tr>(simple->op, [&](auto fn) {
        // Accumulate in the compute type, rounding each step to the element type. (Bytes
        // for pred: std::vector<bool> is not a plain array.)
        using S = std::conditional_t<kIsBool<C>, uint8_t, C>;
        std::vector<S> acc(v.outs[0].element_count());
        for (size_t i = 0; i < acc.size(); ++i) acc[i] = Tr::Load(o, i);
        if (swapped) {
          for_each_pair(
              [&](int64_t oi, int64_t ii) { acc[oi] = Tr::Round(fn(Tr::Load(in, ii), acc[oi])); });
        } else {
          for_each_pair(
              [&](int64_t oi, int64_t ii) { acc[oi] = Tr::Round(fn(acc[oi], Tr::Load(in, ii))); });
        }
        for (size_t i = 0; i < acc.size(); ++i) Tr::Store(o, i, acc[i]);
        return absl::OkStatus();
      });
    });
  }
  std::vector<PrimitiveType> args = v.types;
  args.insert(args.end(), v.types.begin(), v.types.end());
  absl::StatusOr<ScalarCall> call = ScalarCall::Make(ev, reducer, args, v.types);
  if (!call.ok()) return Invalid(instr, call.status().message());
  absl::Status status;
  for_each_pair([&](int64_t oi, int64_t ii) {
    if (!status.ok()) return;
    for (int64_t k = 0; k < v.n; ++k) {
      const int sz = StorageBytes(v.types[k]);
      call->SetArg(k, v.outs[k].untyped_data() + oi * sz);
      call->SetArg(v.n + k, ops[k].untyped_data() + ii * sz);
    }
    status = call->Call();
    if (!status.ok()) return;
    for (int64_t k = 0; k < v.n; ++k) {
      const int sz = StorageBytes(v.types[k]);
      std::memcpy(v.outs[k].untyped_data() + oi * sz, call->Result(k), sz);
    }
  });
  return status;
}

// For each position of a window over `in_dims` (stride/padding/dilations from `window`) at
// output index `out_index`, calls fn(input linear offset) in row-major window order; padding
// and holes from base dilation are skipped.
template <typename F>
void ForEachWindowElement(const Window& window, const std::vector<int64_t>& in_dims,
                          const std::vector<int64_t>& in_strides,
                          const std::vector<int64_t>& out_index,
                          const std::vector<int64_t>& window_dims, F&& fn) {
  const size_t rank = in_dims.size();
  ForEachIndex(window_dims, [&](const std::vector<int64_t>& w) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      const WindowDim& wd = window.dims[d];
      const int64_t pos = out_index[d] * wd.stride + w[d] * wd.window_dilation - wd.padding_low;
      if (pos < 0 || pos % wd.base_dilation != 0) return;
      const int64_t i = pos / wd.base_dilation;
      if (i >= in_dims[d]) return;
      offset += i * in_strides[d];
    }
    fn(offset);
  });
}

absl::Status CheckWindow(const Instruction& instr, const std::vector<int64_t>& in_dims) {
  if (!instr.window.has_value() || instr.window->dims.size() != in_dims.size()) {
    return Invalid(instr, "window rank does not match the operand");
  }
  for (const WindowDim& wd : instr.window->dims) {
    if (wd.size < 0 || wd.stride < 1 || wd.window_dilation < 1 || wd.base_dilation < 1) {
      return Invalid(instr, "bad window");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Literal> HandleReduce(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.to_apply() == nullptr) return Invalid(instr, "has no reducer");
  absl::StatusOr<Variadic> v = MakeOutputs(ev, instr, ops);
  if (!v.ok()) return v.status();
  const auto& in_dims = ops[0].shape().dimensions();
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  std::vector<bool> reduced(rank, false);
  for (int64_t d : instr.dimensions) {
    if (d < 0 || d >= rank || reduced[d]) return Invalid(instr, "bad reduce dimensions");
    reduced[d] = true;
  }
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) kept.push_back(in_dims[d]);
  }
  if (kept != v->outs[0].shape().dimensions()) return Invalid(instr, "wrong result dimensions");
  // Output offset of each input element: kept dims use the output's strides, reduced dims 0.
  const std::vector<int64_t> out_strides = RowMajorStrides(kept);
  std::vector<int64_t> strides(rank, 0);
  for (int64_t d = 0, k = 0; d < rank; ++d) {
    if (!reduced[d]) strides[d] = out_strides[k++];
  }
  auto for_each_pair = [&](auto&& cb) {
    ForEachStrided(in_dims, strides, 0, [&](int64_t i, int64_t o) { cb(o, i); });
  };
  if (absl::Status s = Fold(ev, instr, *instr.to_apply(), *v, ops, for_each_pair); !s.ok()) {
    return s;
  }
  return Finish(*v);
}

absl::StatusOr<Literal> HandleReduceWindow(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.to_apply() == nullptr) return Invalid(instr, "has no reducer");
  absl::StatusOr<Variadic> v = MakeOutputs(ev, instr, ops);
  if (!v.ok()) return v.status();
  const auto& in_dims = ops[0].shape().dimensions();
  if (absl::Status s = CheckWindow(instr, in_dims); !s.ok()) return s;
  const auto& out_dims = v->outs[0].shape().dimensions();
  if (out_dims.size() != in_dims.size()) return Invalid(instr, "wrong result rank");
  std::vector<int64_t> window_dims;
  for (const WindowDim& wd : instr.window->dims) window_dims.push_back(wd.size);
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  auto for_each_pair = [&](auto&& cb) {
    int64_t o = 0;
    ForEachIndex(out_dims, [&](const std::vector<int64_t>& out_index) {
      ForEachWindowElement(*instr.window, in_dims, in_strides, out_index, window_dims,
                           [&](int64_t i) { cb(o, i); });
      ++o;
    });
  };
  if (absl::Status s = Fold(ev, instr, *instr.to_apply(), *v, ops, for_each_pair); !s.ok()) {
    return s;
  }
  return Finish(*v);
}

absl::StatusOr<Literal> HandleSelectAndScatter(Evaluator& ev, const Instruction& instr,
                                               Operands& ops) {
  if (ops.size() != 3 || instr.called_computations().size() != 2) {
    return Invalid(instr, "needs operand, source, init and select/scatter computations");
  }
  const Literal& operand = ops[0];
  const Literal& source = ops[1];
  const Literal& init = ops[2];
  const auto& in_dims = operand.shape().dimensions();
  if (absl::Status s = CheckWindow(instr, in_dims); !s.ok()) return s;
  const PrimitiveType type = operand.element_type();
  const PrimitiveType src_type = source.element_type();
  if (init.element_count() != 1 || init.element_type() != src_type ||
      instr.shape().element_type() != src_type || !instr.shape().SameDimensions(operand.shape()) ||
      source.shape().rank() != operand.shape().rank()) {
    return Invalid(instr, "operand, source, init and result do not match");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const int src_size = StorageBytes(src_type);
  for (int64_t i = 0; i < out->element_count(); ++i) {
    std::memcpy(out->untyped_data() + i * src_size, init.untyped_data(), src_size);
  }
  const Computation& select = *instr.called_computations()[0];
  const Computation& scatter = *instr.called_computations()[1];
  absl::StatusOr<ScalarCall> select_call =
      ScalarCall::Make(ev, select, {type, type}, {PrimitiveType::kPred});
  if (!select_call.ok()) return Invalid(instr, select_call.status().message());
  const int size = StorageBytes(type);
  std::vector<int64_t> window_dims;
  for (const WindowDim& wd : instr.window->dims) window_dims.push_back(wd.size);
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  // Selection: the first valid position wins unless select(current, candidate) is false.
  std::optional<SimpleCompare> fast_select = MatchSimpleCompare(select);
  if (fast_select.has_value() && !((fast_select->lhs_param == 0 && fast_select->rhs_param == 1) ||
                                   (fast_select->lhs_param == 1 && fast_select->rhs_param == 0))) {
    fast_select.reset();
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (operand offset selected, source offset)
  absl::Status status;
  int64_t s = 0;
  ForEachIndex(source.shape().dimensions(), [&](const std::vector<int64_t>& src_index) {
    int64_t selected = -1;
    ForEachWindowElement(
        *instr.window, in_dims, in_strides, src_index, window_dims, [&](int64_t i) {
          if (!status.ok()) return;
          if (selected < 0) {
            selected = i;
            return;
          }
          bool keep;
          if (fast_select.has_value()) {
            keep = true;
            status = DispatchType(type, [&](auto tr) -> absl::Status {
              using Tr = decltype(tr);
              const auto a = Tr::Load(operand.untyped_data(), selected);
              const auto b = Tr::Load(operand.untyped_data(), i);
              const bool first = fast_select->lhs_param == 0;
              keep = CompareValues(fast_select->direction, fast_select->total_order, first ? a : b,
                                   first ? b : a);
              return absl::OkStatus();
            });
          } else {
            select_call->SetArg(0, operand.untyped_data() + selected * size);
            select_call->SetArg(1, operand.untyped_data() + i * size);
            status = select_call->Call();
            keep = status.ok() && *select_call->Result(0) != 0;
          }
          if (!keep) selected = i;
        });
    if (selected >= 0) pairs.push_back({selected, s});
    ++s;
  });
  if (!status.ok()) return status;
  // Scatter: fold each source value into its selected output element, in source order.
  std::optional<SimpleBinary> simple = MatchSimpleBinary(scatter);
  uint8_t* o = out->untyped_data();
  if (simple.has_value()) {
    status = DispatchType(src_type, [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      if (simple->kind == SimpleBinary::kFirst) return absl::OkStatus();
      if (simple->kind == SimpleBinary::kSecond) {
        for (auto [oi, si] : pairs) Tr::Store(o, oi, Tr::Load(source.untyped_data(), si));
        return absl::OkStatus();
      }
      return WithBinaryOp<Tr>(simple->op, [&](auto fn) {
        for (auto [oi, si] : pairs) {
          const auto cur = Tr::Load(o, oi);
          const auto x = Tr::Load(source.untyped_data(), si);
          Tr::Store(o, oi, simple->swapped ? fn(x, cur) : fn(cur, x));
        }
        return absl::OkStatus();
      });
    });
  } else {
    absl::StatusOr<ScalarCall> call =
        ScalarCall::Make(ev, scatter, {src_type, src_type}, {src_type});
    if (!call.ok()) return Invalid(instr, call.status().message());
    for (auto [oi, si] : pairs) {
      call->SetArg(0, o + oi * src_size);
      call->SetArg(1, source.untyped_data() + si * src_size);
      if (status = call->Call(); !status.ok()) break;
      std::memcpy(o + oi * src_size, call->Result(0), src_size);
    }
  }
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<Literal> HandleMap(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.to_apply() == nullptr || ops.size() == 0) return Invalid(instr, "bad map");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const int64_t n = out->element_count();
  std::vector<PrimitiveType> types;
  for (int64_t k = 0; k < ops.size(); ++k) {
    if (ops[k].element_count() != n) return Invalid(instr, "operand sizes differ");
    types.push_back(ops[k].element_type());
  }
  const Computation& fn = *instr.to_apply();
  std::optional<SimpleBinary> simple;
  if (ops.size() == 2 && types[0] == types[1] && types[0] == out->element_type()) {
    simple = MatchSimpleBinary(fn);
  }
  if (simple.has_value()) {
    uint8_t* o = out->untyped_data();
    const uint8_t* a = ops[0].untyped_data();
    const uint8_t* b = ops[1].untyped_data();
    absl::Status s = DispatchType(types[0], [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      if (simple->kind != SimpleBinary::kOp) {
        const uint8_t* src = simple->kind == SimpleBinary::kFirst ? a : b;
        for (int64_t i = 0; i < n; ++i) Tr::Store(o, i, Tr::Load(src, i));
        return absl::OkStatus();
      }
      return WithBinaryOp<Tr>(simple->op, [&](auto f) {
        for (int64_t i = 0; i < n; ++i) {
          const auto x = Tr::Load(a, i), y = Tr::Load(b, i);
          Tr::Store(o, i, simple->swapped ? f(y, x) : f(x, y));
        }
        return absl::OkStatus();
      });
    });
    if (!s.ok()) return s;
    return out;
  }
  absl::StatusOr<ScalarCall> call = ScalarCall::Make(ev, fn, types, {out->element_type()});
  if (!call.ok()) return Invalid(instr, call.status().message());
  const int out_size = StorageBytes(out->element_type());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < ops.size(); ++k) {
      call->SetArg(k, ops[k].untyped_data() + i * StorageBytes(types[k]));
    }
    if (absl::Status s = call->Call(); !s.ok()) return s;
    std::memcpy(out->untyped_data() + i * out_size, call->Result(0), out_size);
  }
  return out;
}

}  // namespace mltune::ir::eval
