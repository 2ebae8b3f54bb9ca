// algsimp, part two: XLA's AlgebraicSimplifier rewrites of data-movement and shape ops
// (broadcast, reshape, transpose, slice, concatenate, pad, reverse, iota, dynamic-slice,
// dynamic-update-slice), reduce, dot and get-tuple-element. Every rewrite here is exact: it moves
// or selects the same values, or replaces a computation over no elements by its known result.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/hlo_builder.h"
#include "passes/algsimp_internal.h"

namespace mltune::passes::algsimp {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;
using ir::SliceDim;

std::vector<std::pair<int64_t, int64_t>> CommonFactors(const std::vector<int64_t>& a,
                                                       const std::vector<int64_t>& b) {
  const int64_t na = static_cast<int64_t>(a.size()), nb = static_cast<int64_t>(b.size());
  int64_t pa = 1, pb = 1;
  for (int64_t d : a) pa *= d;
  for (int64_t d : b) pb *= d;
  if (pa == 0 || pb == 0) return {{0, 0}, {na, nb}};
  std::vector<std::pair<int64_t, int64_t>> bounds = {{0, 0}};
  int64_t i = 0, j = 0;
  pa = pb = 1;
  while (i < na || j < nb) {
    if (pa == 1 && pb == 1) {  // at a group boundary
      if (i < na && j < nb && a[i] == b[j]) {
        bounds.push_back({++i, ++j});
        continue;
      }
      if (i < na && a[i] == 1) {
        bounds.push_back({++i, j});
        continue;
      }
      if (j < nb && b[j] == 1) {
        bounds.push_back({i, ++j});
        continue;
      }
    }
    if (j >= nb || (i < na && pa <= pb)) {
      pa *= a[i++];
    } else {
      pb *= b[j++];
    }
    if (pa == pb) {
      bounds.push_back({i, j});
      pa = pb = 1;
    }
  }
  return bounds;
}

std::vector<int64_t> UnmodifiedDimensions(const std::vector<int64_t>& from,
                                          const std::vector<int64_t>& to) {
  std::vector<int64_t> out(from.size(), -1);
  const auto bounds = CommonFactors(from, to);
  for (size_t k = 1; k < bounds.size(); ++k) {
    const auto [i0, j0] = bounds[k - 1];
    const auto [i1, j1] = bounds[k];
    if (i1 - i0 == 1 && j1 - j0 == 1 && from[i0] == to[j0]) out[i0] = j0;
  }
  return out;
}

namespace {

bool IsIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t k = 0; k < perm.size(); ++k) {
    if (perm[k] != static_cast<int64_t>(k)) return false;
  }
  return true;
}

bool IsStrictlyIncreasing(const std::vector<int64_t>& v) {
  for (size_t k = 1; k < v.size(); ++k) {
    if (v[k] <= v[k - 1]) return false;
  }
  return true;
}

std::vector<int64_t> Inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[perm[k]] = static_cast<int64_t>(k);
  return inv;
}

// The slice attribute for dimension `d` of size `n` reading elements first, first+stride, ...
SliceDim Range(int64_t first, int64_t count, int64_t stride) {
  return {first, count == 0 ? first : first + (count - 1) * stride + 1, stride};
}

bool IsFullSlice(const Instruction* slice) {
  const auto& dims = slice->operand(0)->shape().dimensions();
  for (size_t d = 0; d < dims.size(); ++d) {
    const SliceDim& s = slice->slice[d];
    if (s.start != 0 || s.limit != dims[d] || s.stride != 1) return false;
  }
  return true;
}

Instruction* MakeIota(Computation& c, const Shape& like, int64_t dimension) {
  Instruction* iota = AddInstr(c, Opcode::kIota, Shape(like.element_type(), like.dimensions()), {});
  iota->iota_dimension = dimension;
  return iota;
}

bool HandleBroadcast(Instruction* i) {
  Instruction* x = i->operand(0);
  Computation& c = *i->parent();
  const std::vector<int64_t>& dims = i->dimensions;
  if (x->shape().dimensions() == i->shape().dimensions() && IsIdentityPermutation(dims)) {
    return ReplaceWith(i, x);
  }
  // A broadcast that adds only 1-sized dimensions, in order, is a reshape.
  if (x->shape().ElementCount() == i->shape().ElementCount() && IsStrictlyIncreasing(dims)) {
    return ReplaceWith(i, MakeReshape(c, x, i->shape().dimensions()));
  }
  if (x->opcode() == Opcode::kBroadcast) {
    std::vector<int64_t> composed;
    for (int64_t d : x->dimensions) composed.push_back(dims[d]);
    return ReplaceWith(i, MakeBroadcast(c, x->operand(0), i->shape().dimensions(), composed));
  }
  // broadcast(reshape(y)) where the reshape only inserts 1-sized dimensions => broadcast(y).
  if (x->opcode() == Opcode::kReshape) {
    const std::vector<int64_t>& from = x->operand(0)->shape().dimensions();
    const std::vector<int64_t>& to = x->shape().dimensions();
    std::vector<int64_t> mapping;
    size_t j = 0;
    for (size_t k = 0; k < to.size(); ++k) {
      if (j < from.size() && from[j] == to[k]) {
        mapping.push_back(dims[k]);
        ++j;
      } else if (to[k] != 1) {
        return false;
      }
    }
    if (j != from.size()) return false;
    return ReplaceWith(i, MakeBroadcast(c, x->operand(0), i->shape().dimensions(), mapping));
  }
  return false;
}

bool HandleReshape(Instruction* i) {
  Instruction* x = i->operand(0);
  Computation& c = *i->parent();
  const std::vector<int64_t>& out = i->shape().dimensions();
  if (x->shape().dimensions() == out) return ReplaceWith(i, x);
  if (x->opcode() == Opcode::kReshape) {
    Instruction* y = x->operand(0);
    if (y->shape().dimensions() == out) return ReplaceWith(i, y);
    return ReplaceWith(i, MakeReshape(c, y, out));
  }
  if (x->opcode() == Opcode::kBroadcast) {
    if (IsScalarBroadcast(x)) return ReplaceWith(i, MakeBroadcast(c, x->operand(0), out, {}));
    // A reshape leaving every broadcast dimension intact is a broadcast to the new shape.
    const std::vector<int64_t> kept = UnmodifiedDimensions(x->shape().dimensions(), out);
    std::vector<int64_t> mapping;
    for (int64_t d : x->dimensions) {
      if (kept[d] < 0) return false;
      mapping.push_back(kept[d]);
    }
    return ReplaceWith(i, MakeBroadcast(c, x->operand(0), out, mapping));
  }
  return false;
}

bool HandleTranspose(Instruction* i) {
  Instruction* x = i->operand(0);
  Computation& c = *i->parent();
  const std::vector<int64_t>& perm = i->dimensions;
  if (IsIdentityPermutation(perm)) return ReplaceWith(i, x);
  if (x->opcode() == Opcode::kTranspose) {
    std::vector<int64_t> composed;
    for (int64_t p : perm) composed.push_back(x->dimensions[p]);
    if (IsIdentityPermutation(composed)) return ReplaceWith(i, x->operand(0));
    return ReplaceWith(i, MakeTranspose(c, x->operand(0), composed));
  }
  // Only 1-sized dimensions move: a reshape.
  std::vector<int64_t> moved;
  for (size_t k = 0; k < perm.size(); ++k) {
    if (i->shape().dimensions(static_cast<int64_t>(k)) != 1) moved.push_back(perm[k]);
  }
  if (IsStrictlyIncreasing(moved)) {
    return ReplaceWith(i, MakeReshape(c, x, i->shape().dimensions()));
  }
  const std::vector<int64_t> inv = Inverse(perm);
  if (x->opcode() == Opcode::kBroadcast) {
    std::vector<int64_t> mapping;
    for (int64_t d : x->dimensions) mapping.push_back(inv[d]);
    // Kept canonical: only when the broadcast stays in operand order.
    if (!IsStrictlyIncreasing(mapping)) return false;
    return ReplaceWith(i, MakeBroadcast(c, x->operand(0), i->shape().dimensions(), mapping));
  }
  if (x->opcode() == Opcode::kIota) {
    return ReplaceWith(i, MakeIota(c, i->shape(), inv[x->iota_dimension]));
  }
  return false;
}

bool HandleSlice(Instruction* i) {
  Instruction* x = i->operand(0);
  Computation& c = *i->parent();
  const int64_t rank = i->shape().rank();
  const std::vector<SliceDim>& s = i->slice;
  if (static_cast<int64_t>(s.size()) != rank) return false;
  if (IsFullSlice(i)) return ReplaceWith(i, x);
  const auto n = [&](int64_t d) { return i->shape().dimensions(d); };
  if (x->opcode() == Opcode::kSlice) {
    std::vector<SliceDim> composed;
    for (int64_t d = 0; d < rank; ++d) {
      const SliceDim& inner = x->slice[d];
      composed.push_back(
          Range(inner.start + s[d].start * inner.stride, n(d), inner.stride * s[d].stride));
    }
    return ReplaceWith(i, MakeSlice(c, x->operand(0), composed));
  }
  if (i->shape().ElementCount() == 0) return false;
  if (x->opcode() == Opcode::kConcatenate && x->dimensions.size() == 1) {
    // A slice within one operand of a concatenate slices that operand.
    const int64_t cd = x->dimensions[0];
    const int64_t first = s[cd].start, last = s[cd].start + (n(cd) - 1) * s[cd].stride;
    int64_t offset = 0;
    for (Instruction* op : x->operands()) {
      const int64_t size = op->shape().dimensions(cd);
      if (first >= offset && last < offset + size) {
        std::vector<SliceDim> local = s;
        local[cd] = Range(first - offset, n(cd), s[cd].stride);
        return ReplaceWith(i, MakeSlice(c, op, local));
      }
      offset += size;
    }
    return false;
  }
  if (x->opcode() == Opcode::kPad) {
    Instruction* y = x->operand(0);
    std::vector<SliceDim> inside;
    bool all_inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      const ir::PaddingDim& p = x->padding[d];
      if (p.interior != 0) return false;
      const int64_t lo = p.low, hi = p.low + y->shape().dimensions(d);
      const int64_t first = s[d].start, last = s[d].start + (n(d) - 1) * s[d].stride;
      bool any_inside = false;
      for (int64_t k = 0; k < n(d) && !any_inside; ++k) {
        const int64_t at = first + k * s[d].stride;
        any_inside = at >= lo && at < hi;
      }
      // Every element read in this dimension is padding: the whole slice is the pad value.
      if (!any_inside)
        return ReplaceWith(i, MakeBroadcast(c, x->operand(1), i->shape().dimensions(), {}));
      if (first < lo || last >= hi) all_inside = false;
      inside.push_back(Range(first - lo, n(d), s[d].stride));
    }
    if (all_inside) return ReplaceWith(i, MakeSlice(c, y, inside));
    return false;
  }
  if (x->opcode() == Opcode::kBroadcast && (IsScalarBroadcast(x) || x->user_count() == 1)) {
    // slice(broadcast(y)) => broadcast(slice(y)).
    Instruction* y = x->operand(0);
    std::vector<SliceDim> local;
    bool full = true;
    for (size_t j = 0; j < x->dimensions.size(); ++j) {
      const SliceDim& sd = s[x->dimensions[j]];
      local.push_back(sd);
      full = full && sd.start == 0 && sd.stride == 1 &&
             sd.limit == y->shape().dimensions(static_cast<int64_t>(j));
    }
    Instruction* src = full ? y : MakeSlice(c, y, local);
    return ReplaceWith(i, MakeBroadcast(c, src, i->shape().dimensions(), x->dimensions));
  }
  if (x->opcode() == Opcode::kIota) {
    const int64_t d = x->iota_dimension;
    if (s[d].start == 0 && s[d].stride == 1) return ReplaceWith(i, MakeIota(c, i->shape(), d));
  }
  return false;
}

bool HandleConcatenate(Instruction* i) {
  Computation& c = *i->parent();
  if (i->dimensions.size() != 1) return false;
  const int64_t cd = i->dimensions[0];
  const std::vector<Instruction*>& ops = i->operands();
  if (ops.size() == 1) return ReplaceWith(i, ops[0]);
  // Zero-sized operands contribute nothing.
  std::vector<Instruction*> nonempty;
  for (Instruction* op : ops) {
    if (op->shape().dimensions(cd) != 0) nonempty.push_back(op);
  }
  if (nonempty.empty()) return ReplaceWith(i, ops[0]);
  if (nonempty.size() != ops.size()) {
    if (nonempty.size() == 1) return ReplaceWith(i, nonempty[0]);
    return ReplaceWith(i, CloneInstruction(*i, c, nonempty));
  }
  // Adjacent slices of one array that continue each other are one slice.
  struct Piece {
    Instruction* op;
    std::vector<SliceDim> range;  // the joined slice, when `op` is a slice
    bool joined = false;
  };
  std::vector<Piece> pieces;
  for (Instruction* op : ops) {
    Piece* prev = pieces.empty() ? nullptr : &pieces.back();
    if (prev != nullptr && prev->op->opcode() == Opcode::kSlice && op->opcode() == Opcode::kSlice &&
        prev->op->operand(0) == op->operand(0) && prev->range[cd].stride == 1 &&
        op->slice[cd].stride == 1 && prev->range[cd].limit == op->slice[cd].start) {
      bool same_elsewhere = true;
      for (int64_t d = 0; d < i->shape().rank(); ++d) {
        if (d != cd && !(prev->range[d] == op->slice[d])) same_elsewhere = false;
      }
      if (same_elsewhere) {
        prev->range[cd].limit = op->slice[cd].limit;
        prev->joined = true;
        continue;
      }
    }
    pieces.push_back({op, op->opcode() == Opcode::kSlice ? op->slice : std::vector<SliceDim>{}});
  }
  if (pieces.size() != ops.size()) {
    std::vector<Instruction*> merged;
    for (const Piece& p : pieces) {
      merged.push_back(p.joined ? MakeSlice(c, p.op->operand(0), p.range) : p.op);
    }
    if (merged.size() == 1) return ReplaceWith(i, merged[0]);
    return ReplaceWith(i, CloneInstruction(*i, c, merged));
  }
  // Broadcasts of one scalar, concatenated, are a broadcast of it.
  if (IsScalarBroadcast(ops[0]) && std::all_of(ops.begin(), ops.end(), [&](const Instruction* op) {
        return IsScalarBroadcast(op) && op->operand(0) == ops[0]->operand(0);
      })) {
    return ReplaceWith(i, MakeBroadcast(c, ops[0]->operand(0), i->shape().dimensions(), {}));
  }
  // concat(broadcast(s), x, broadcast(s)) => pad(x, s), and the two-operand forms.
  if (ops.size() <= 3) {
    Instruction* low = IsScalarBroadcast(ops.front()) ? ops.front() : nullptr;
    Instruction* high = IsScalarBroadcast(ops.back()) ? ops.back() : nullptr;
    Instruction* middle = nullptr;
    if (ops.size() == 3 && low != nullptr && high != nullptr &&
        low->operand(0) == high->operand(0)) {
      middle = ops[1];
    } else if (ops.size() == 2 && low != nullptr && high == nullptr) {
      middle = ops[1];
    } else if (ops.size() == 2 && high != nullptr && low == nullptr) {
      middle = ops[0];
    }
    if (middle == nullptr) return false;
    Instruction* value = (low != nullptr ? low : high)->operand(0);
    std::vector<ir::PaddingDim> padding(static_cast<size_t>(i->shape().rank()));
    padding[cd].low = low != nullptr ? low->shape().dimensions(cd) : 0;
    padding[cd].high = high != nullptr && middle != high ? high->shape().dimensions(cd) : 0;
    Instruction* pad = AddInstr(c, Opcode::kPad, i->shape(), {middle, value});
    pad->mutable_shape().SetDefaultLayout();
    pad->padding = padding;
    return ReplaceWith(i, pad);
  }
  return false;
}

bool HandlePad(Instruction* i) {
  Instruction* x = i->operand(0);
  Instruction* value = i->operand(1);
  Computation& c = *i->parent();
  const int64_t rank = i->shape().rank();
  if (static_cast<int64_t>(i->padding.size()) != rank) return false;
  bool nop = true, negative = false;
  for (const ir::PaddingDim& p : i->padding) {
    nop = nop && p.low == 0 && p.high == 0 && p.interior == 0;
    negative = negative || p.low < 0 || p.high < 0;
  }
  if (nop) return ReplaceWith(i, x);
  // Padding a broadcast of the pad value extends the broadcast.
  if (IsScalarBroadcast(x) && x->operand(0) == value) {
    return ReplaceWith(i, MakeBroadcast(c, value, i->shape().dimensions(), {}));
  }
  if (!negative) return false;
  // Negative padding removes elements: pad with the non-negative part, then slice.
  std::vector<ir::PaddingDim> positive = i->padding;
  std::vector<SliceDim> slice;
  std::vector<int64_t> padded_dims;
  bool pad_needed = false;
  for (int64_t d = 0; d < rank; ++d) {
    ir::PaddingDim& p = positive[d];
    const int64_t size = x->shape().dimensions(d);
    const int64_t cut_low = std::max<int64_t>(0, -p.low), cut_high = std::max<int64_t>(0, -p.high);
    p.low = std::max<int64_t>(0, p.low);
    p.high = std::max<int64_t>(0, p.high);
    pad_needed = pad_needed || p.low != 0 || p.high != 0 || p.interior != 0;
    const int64_t padded = p.low + p.high + (size == 0 ? 0 : size + (size - 1) * p.interior);
    padded_dims.push_back(padded);
    slice.push_back({cut_low, padded - cut_high, 1});
  }
  Instruction* base = x;
  if (pad_needed) {
    base = AddInstr(c, Opcode::kPad, Shape(i->shape().element_type(), padded_dims), {x, value});
    base->padding = positive;
  }
  return ReplaceWith(i, MakeSlice(c, base, slice));
}

bool HandleReverse(Instruction* i) {
  Instruction* x = i->operand(0);
  bool degenerate = true;
  for (int64_t d : i->dimensions) degenerate = degenerate && i->shape().dimensions(d) == 1;
  if (degenerate) return ReplaceWith(i, x);
  if (x->opcode() == Opcode::kReverse) {
    std::vector<int64_t> a = i->dimensions, b = x->dimensions;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a == b) return ReplaceWith(i, x->operand(0));
  }
  return false;
}

// Start indices of a dynamic-slice (first index operand at `first`): the index instructions, and
// their values when all are constants.
struct StartIndices {
  std::vector<const Instruction*> operands;
  std::optional<std::vector<int64_t>> values;
};

std::optional<int64_t> IntValue(const ir::Literal& l, int64_t k) {
  const ir::PrimitiveType t = l.element_type();
  if (ir::IsUnsignedIntegral(t)) {
    const uint64_t v = l.GetAsUint64(k);
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
  }
  if (ir::IsSignedIntegral(t)) return l.GetAsInt64(k);
  return std::nullopt;
}

StartIndices GetStartIndices(const Instruction* i, int64_t first, int64_t rank) {
  StartIndices r;
  std::vector<int64_t> values;
  bool constant = true;
  for (int64_t k = first; k < i->operand_count(); ++k) r.operands.push_back(i->operand(k));
  const bool vector_form = r.operands.size() == 1 && r.operands[0]->shape().rank() == 1;
  for (const Instruction* op : r.operands) {
    if (op->opcode() != Opcode::kConstant || !op->literal.has_value()) {
      constant = false;
      break;
    }
    for (int64_t k = 0; k < op->literal->element_count(); ++k) {
      std::optional<int64_t> v = IntValue(*op->literal, k);
      if (!v.has_value()) constant = false;
      values.push_back(v.value_or(0));
    }
  }
  if (constant && static_cast<int64_t>(values.size()) == rank &&
      (vector_form || static_cast<int64_t>(r.operands.size()) == rank)) {
    r.values = values;
  }
  return r;
}

bool HandleDynamicSlice(Instruction* i) {
  Instruction* x = i->operand(0);
  Computation& c = *i->parent();
  const int64_t rank = x->shape().rank();
  // Start indices are clamped into range, so a full-size slice starts at 0.
  if (i->shape().dimensions() == x->shape().dimensions()) return ReplaceWith(i, x);
  if (IsScalarBroadcast(x)) {
    return ReplaceWith(i, MakeBroadcast(c, x->operand(0), i->shape().dimensions(), {}));
  }
  const StartIndices starts = GetStartIndices(i, 1, rank);
  // dynamic-slice(dynamic-update-slice(y, u, idx), idx) of u's size => u.
  if (x->opcode() == Opcode::kDynamicUpdateSlice &&
      x->operand(1)->shape().dimensions() == i->shape().dimensions()) {
    const StartIndices update_starts = GetStartIndices(x, 2, rank);
    if (update_starts.operands == starts.operands) return ReplaceWith(i, x->operand(1));
  }
  if (!starts.values.has_value()) return false;
  std::vector<SliceDim> slice;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = i->shape().dimensions(d);
    const int64_t start =
        std::clamp<int64_t>((*starts.values)[d], 0, x->shape().dimensions(d) - size);
    slice.push_back({start, start + size, 1});
  }
  return ReplaceWith(i, MakeSlice(c, x, slice));
}

bool HandleDynamicUpdateSlice(Instruction* i) {
  Instruction* x = i->operand(0);
  Instruction* update = i->operand(1);
  if (update->shape().dimensions() == x->shape().dimensions()) return ReplaceWith(i, update);
  if (update->shape().ElementCount() == 0) return ReplaceWith(i, x);
  // Writing back what a dynamic-slice read at the same indices changes nothing.
  if (update->opcode() == Opcode::kDynamicSlice && update->operand(0) == x) {
    const int64_t rank = x->shape().rank();
    if (GetStartIndices(update, 1, rank).operands == GetStartIndices(i, 2, rank).operands) {
      return ReplaceWith(i, x);
    }
  }
  return false;
}

// The binary op of a reducer `op(p0, p1)` on two scalars of the result type, or nullopt.
std::optional<Opcode> ReducerOp(const Computation* reducer) {
  if (reducer == nullptr || reducer->parameter_count() != 2) return std::nullopt;
  const Instruction* root = reducer->root();
  if (root == nullptr || root->operand_count() != 2) return std::nullopt;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter || a == b ||
      !root->shape().IsScalar() || !a->shape().IsScalar() || !b->shape().IsScalar() ||
      a->shape().element_type() != root->shape().element_type() ||
      b->shape().element_type() != root->shape().element_type()) {
    return std::nullopt;
  }
  switch (root->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kAnd:
    case Opcode::kOr:
      return root->opcode();
    default:
      return std::nullopt;
  }
}

bool IsIdentityOf(Opcode op, const Instruction* init) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kOr:
      return IsAll(init, 0);
    case Opcode::kMultiply:
      return IsAll(init, 1);
    case Opcode::kAnd:
      return IsAllOnes(init);
    case Opcode::kMaximum:
      return IsAllExtreme(init, /*lowest=*/true);
    case Opcode::kMinimum:
      return IsAllExtreme(init, /*lowest=*/false);
    default:
      return false;
  }
}

bool HandleReduce(Instruction* i) {
  if (i->operand_count() != 2 || !i->shape().IsArray()) return false;
  Instruction* x = i->operand(0);
  Instruction* init = i->operand(1);
  Computation& c = *i->parent();
  // Reducing no elements gives the init value.
  if (x->shape().ElementCount() == 0) {
    return ReplaceWith(i, BroadcastScalar(c, init, i->shape().dimensions()));
  }
  // Reducing only 1-sized dimensions with an identity init value moves no value: a reshape (XLA
  // assumes the init value is an identity; here it is checked).
  if (x->shape().ElementCount() == i->shape().ElementCount()) {
    std::optional<Opcode> op = ReducerOp(i->to_apply());
    if (op.has_value() && IsIdentityOf(*op, init)) {
      return ReplaceWith(i, MakeReshape(c, x, i->shape().dimensions()));
    }
  }
  return false;
}

bool HandleDot(Instruction* i) {
  // A dot over an empty contracting dimension sums nothing: zeros.
  if (i->shape().ElementCount() == 0) return false;
  if (i->operand(0)->shape().ElementCount() != 0 && i->operand(1)->shape().ElementCount() != 0) {
    return false;
  }
  return ReplaceWith(
      i, MakeFilled(*i->parent(), i->shape().element_type(), i->shape().dimensions(), 0));
}

}  // namespace

bool SimplifyDataMovement(Instruction* i) {
  switch (i->opcode()) {
    case Opcode::kBroadcast:
      return HandleBroadcast(i);
    case Opcode::kReshape:
      return HandleReshape(i);
    case Opcode::kTranspose:
      return HandleTranspose(i);
    case Opcode::kSlice:
      return HandleSlice(i);
    case Opcode::kConcatenate:
      return HandleConcatenate(i);
    case Opcode::kPad:
      return HandlePad(i);
    case Opcode::kReverse:
      return HandleReverse(i);
    case Opcode::kIota:
      // An iota along a 1-sized dimension is all zeros.
      if (i->shape().dimensions(i->iota_dimension) != 1) return false;
      return ReplaceWith(
          i, MakeFilled(*i->parent(), i->shape().element_type(), i->shape().dimensions(), 0));
    case Opcode::kDynamicSlice:
      return HandleDynamicSlice(i);
    case Opcode::kDynamicUpdateSlice:
      return HandleDynamicUpdateSlice(i);
    case Opcode::kReduce:
      return HandleReduce(i);
    case Opcode::kDot:
      return HandleDot(i);
    case Opcode::kGetTupleElement:
      if (i->operand(0)->opcode() != Opcode::kTuple) return false;
      return ReplaceWith(i, i->operand(0)->operand(i->tuple_index));
    default:
      return false;
  }
}

}  // namespace mltune::passes::algsimp
