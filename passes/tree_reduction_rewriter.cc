// tree_reduction_rewriter: XLA's CPU TreeReductionRewriter (reduce_window_size 32). A reduce with
// a reduced dimension longer than 32 becomes a two-stage tree: a reduce-window with windows (and
// strides) of min(size, 32) along the reduced dimensions, SAME-padded with the init value, then the
// original reduce over its result. As in XLA one run splits each reduce once (the new reduce is
// not revisited), so long reductions need several runs (XLA runs it inside a fixed point).
//
// Safety: the rewrite re-associates the reduction and applies the init value several times, so
// unlike XLA it only fires when that cannot change the value beyond rounding: the reducer is a
// single associative, commutative binary op of its two parameters and the init is that op's
// identity: add (0), multiply (1), maximum (lowest), minimum (highest), and (all ones), or (0).
// Integer and pred reductions are then bit-exact. For floats only maximum/minimum (exact) and f64
// add are rewritten. A tree sum differs from a sequential one by rounding only (the tree is the
// more accurate), but for f32 and narrower types that difference exceeds docs/passes.md's
// tolerance on cancelling sums (a 1000-element f32 sum of values in [-1, 1) moved by 7e-6 on a
// result of 0.55), so those sums, and float products, are left alone; in f64 it stays ~1e-14.
// Variadic reduces (XLA skips them on CPU too) and dynamic shapes are skipped.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

constexpr int64_t kReduceWindowSize = 32;

// The binary op `reducer`'s root applies to its two parameters, or nullopt. (Dead side-effect-free
// instructions beside it, as JAX emits, do not matter.)
std::optional<Opcode> ReducerOp(const Computation& reducer) {
  if (reducer.parameter_count() != 2 || ComputationHasSideEffect(&reducer)) return std::nullopt;
  const Instruction* root = reducer.root();
  if (root->operand_count() != 2 || root->operand(0)->opcode() != Opcode::kParameter ||
      root->operand(1)->opcode() != Opcode::kParameter || root->operand(0) == root->operand(1)) {
    return std::nullopt;
  }
  return root->opcode();
}

// True when `init` is the identity of `op` on `type`.
bool IsIdentity(Opcode op, PrimitiveType type, const ir::Literal& init) {
  const bool is_float = ir::IsFloatingPoint(type);
  const bool is_pred = type == PrimitiveType::kPred;
  const bool is_signed = ir::IsSignedIntegral(type);
  switch (op) {
    case Opcode::kAdd:
      if (is_pred) return false;
      return is_float ? init.GetAsDouble(0) == 0.0 : init.GetAsUint64(0) == 0;
    case Opcode::kMultiply:
      if (is_pred || is_float) return false;
      return init.GetAsInt64(0) == 1;
    case Opcode::kOr:
      if (is_float) return false;
      return init.GetAsUint64(0) == 0;
    case Opcode::kAnd: {
      if (is_float) return false;
      if (is_pred) return init.GetAsBool(0);
      ir::Literal ones = *ir::Literal::Create(Shape::Scalar(type));
      if (is_signed) {
        ones.SetFromInt64(0, -1);
      } else {
        ones.SetFromUint64(0, std::numeric_limits<uint64_t>::max());
      }
      return ones.GetAsUint64(0) == init.GetAsUint64(0);
    }
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      const bool max = op == Opcode::kMaximum;
      if (is_float) {
        const double v = init.GetAsDouble(0);
        return std::isinf(v) && (v < 0) == max;
      }
      if (is_pred) return init.GetAsBool(0) != max;
      ir::Literal bound = *ir::Literal::Create(Shape::Scalar(type));
      const int bits = ir::BitWidth(type);
      if (is_signed) {
        const int64_t hi =
            bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
        bound.SetFromInt64(0, max ? -hi - 1 : hi);
        return bound.GetAsInt64(0) == init.GetAsInt64(0);
      }
      bound.SetFromUint64(0, max ? 0 : std::numeric_limits<uint64_t>::max());
      return bound.GetAsUint64(0) == init.GetAsUint64(0);
    }
    default:
      return false;
  }
}

bool IsSafeToSplit(const Instruction* reduce) {
  if (reduce->operand_count() != 2 || !reduce->shape().IsArray() || reduce->to_apply() == nullptr ||
      !reduce->operand(0)->shape().is_static()) {
    return false;
  }
  for (int64_t d : reduce->dimensions) {
    if (reduce->operand(0)->shape().dimensions(d) == 0) return false;
  }
  const PrimitiveType type = reduce->shape().element_type();
  if (ir::IsComplex(type)) return false;
  std::optional<Opcode> op = ReducerOp(*reduce->to_apply());
  if (!op.has_value()) return false;
  if (ir::IsFloatingPoint(type)) {
    const bool exact = *op == Opcode::kMaximum || *op == Opcode::kMinimum;
    const bool wide_add = *op == Opcode::kAdd && type == PrimitiveType::kF64;
    if (!exact && !wide_add) return false;
  }
  const Instruction* init = reduce->operand(1);
  if (init->opcode() != Opcode::kConstant || !init->literal.has_value() ||
      init->literal->element_count() != 1) {
    return false;
  }
  return IsIdentity(*op, type, *init->literal);
}

bool Rewrite(Instruction* reduce) {
  Instruction* input = reduce->operand(0);
  Instruction* init = reduce->operand(1);
  const Shape& in = input->shape();
  const std::vector<int64_t>& reduced = reduce->dimensions;
  if (std::all_of(reduced.begin(), reduced.end(),
                  [&](int64_t d) { return in.dimensions(d) <= kReduceWindowSize; })) {
    return false;
  }
  ir::Window window;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < in.rank(); ++d) {
    ir::WindowDim wd;
    if (std::find(reduced.begin(), reduced.end(), d) != reduced.end()) {
      const int64_t size = std::min(in.dimensions(d), kReduceWindowSize);
      wd.size = size;
      wd.stride = size;
      // SAME padding: ceil(n / stride) windows, the padding split low/high.
      const int64_t out = size == 0 ? 0 : (in.dimensions(d) + size - 1) / size;
      const int64_t pad = std::max<int64_t>(0, (out - 1) * size + size - in.dimensions(d));
      wd.padding_low = pad / 2;
      wd.padding_high = pad - pad / 2;
      dims.push_back(out);
    } else {
      dims.push_back(in.dimensions(d));
    }
    window.dims.push_back(wd);
  }
  Computation& c = *reduce->parent();
  Instruction* reduce_window =
      AddInstr(c, Opcode::kReduceWindow, Shape(in.element_type(), dims), {input, init});
  reduce_window->window = window;
  reduce_window->mutable_called_computations() = {reduce->to_apply()};
  reduce_window->metadata = reduce->metadata;
  ReplaceInstruction(reduce, CloneInstruction(*reduce, c, {reduce_window, init}));
  return true;
}

class TreeReductionRewriter : public Pass {
 public:
  std::string_view name() const override { return "tree_reduction_rewriter"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> reduces;
      for (Instruction* i : c->MakePostOrder()) {
        if (i->opcode() == Opcode::kReduce && i->control_predecessors().empty() &&
            i->control_successors().empty() && IsSafeToSplit(i)) {
          reduces.push_back(i);
        }
      }
      for (Instruction* reduce : reduces) changed |= Rewrite(reduce);
    }
    return changed;
  }
};

}  // namespace

void RegisterTreeReductionRewriter(Registry& registry) {
  registry.Register({"tree_reduction_rewriter",
                     "splits long reductions into a reduce-window of 32 plus a reduce",
                     [] { return std::make_unique<TreeReductionRewriter>(); }});
}

}  // namespace mltune::passes
