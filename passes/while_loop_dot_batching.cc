// while-loop-dot-batching: a while body's dot of one step's slice of a loop-invariant array
// (x[i] of a scan's inputs) with a loop-invariant matrix becomes one matrix product over every
// step, computed before the loop, of which each iteration slices its row. This is what an RNN
// runtime does with an LSTM's input projections (onnxruntime's LSTM, cuDNN): one GEMM instead of
// a matrix-vector product per step that rereads the weights. JAX's LSTM scan ran its four input
// GEMVs per step, half the loop's weight traffic. Not one of XLA's passes; the CPU worker runs it
// after XLA's pipeline.
//
// Matched: dot(reshape?(dynamic-slice(X, i, 0, ..., 0)), W) (or W on the left) without batch
// dimensions, X and W state elements the body passes through, the slice one element long on X's
// first dimension and whole on the others. Both the old slice and the new one clamp `i` to
// X's first dimension, so every index reads the same row. Only loops with a known trip count of at
// least half of X's steps, so the product over all of them is not mostly wasted.
#include <memory>
#include <string>
#include <unordered_set>
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

struct Candidate {
  Instruction* dot;
  int64_t side;          // the operand that is the step's slice: 0 (lhs) or 1 (rhs)
  int64_t steps_index;   // X's state element
  int64_t matrix_index;  // W's state element
};

// The dynamic-slice under `operand` (through one reshape or bitcast) when it takes one step of
// pass-through state element X whole; X's state index, or -1.
int64_t StepSliceOf(const Instruction* operand, const std::unordered_set<const Instruction*>& inv,
                    const Instruction** slice) {
  const Instruction* s = operand;
  if (s->opcode() == Opcode::kReshape || s->opcode() == Opcode::kBitcast) s = s->operand(0);
  if (s->opcode() != Opcode::kDynamicSlice || s->operand_count() < 2) return -1;
  const Instruction* x = s->operand(0);
  if (!inv.count(x) || !x->shape().IsArray()) return -1;
  const std::vector<int64_t>& xd = x->shape().dimensions();
  if (xd.empty() || xd[0] < 2 || s->dynamic_slice_sizes.size() != xd.size() ||
      s->dynamic_slice_sizes[0] != 1 || s->operand_count() != static_cast<int64_t>(xd.size()) + 1) {
    return -1;
  }
  for (size_t d = 1; d < xd.size(); ++d) {
    if (s->dynamic_slice_sizes[d] != xd[d]) return -1;
    if (!IsConstantWithValue(s->operand(static_cast<int64_t>(d) + 1), 0)) return -1;
  }
  *slice = s;
  return x->tuple_index;
}

std::vector<Candidate> FindCandidates(const Instruction* while_op) {
  const Computation& body = *while_op->while_body();
  std::unordered_set<const Instruction*> invariant;
  for (Instruction* gte : GetInvariantGTEsForWhileBody(body)) {
    if (gte->shape().IsArray()) invariant.insert(gte);
  }
  const std::optional<int64_t> trips = ComputeWhileLoopTripCount(while_op);
  std::vector<Candidate> found;
  if (invariant.empty() || !trips.has_value() || *trips < 2) return found;
  for (Instruction* d : body.instructions()) {
    if (d->opcode() != Opcode::kDot || !d->dot_dnums.has_value() ||
        !d->dot_dnums->lhs_batch_dimensions.empty() || !d->control_predecessors().empty() ||
        !d->control_successors().empty()) {
      continue;
    }
    for (int64_t side = 0; side < 2; ++side) {
      const Instruction* matrix = d->operand(1 - side);
      if (!invariant.count(matrix)) continue;
      const Instruction* slice = nullptr;
      const int64_t steps = StepSliceOf(d->operand(side), invariant, &slice);
      if (steps < 0 || 2 * *trips < slice->operand(0)->shape().dimensions(0)) continue;
      found.push_back({d, side, steps, matrix->tuple_index});
      break;
    }
  }
  return found;
}

// dot(X reshaped to [T] + step shape, W) before the loop, and where its step dimension lands.
Instruction* ProductOverSteps(Instruction* while_op, const Candidate& c, int64_t* step_dim) {
  Computation& parent = *while_op->parent();
  Instruction* init = while_op->operand(0);
  Instruction* x = TupleElement(parent, init, c.steps_index);
  Instruction* w = TupleElement(parent, init, c.matrix_index);
  const Instruction* step = c.dot->operand(c.side);
  std::vector<int64_t> xdims = {x->shape().dimensions(0)};
  for (int64_t d : step->shape().dimensions()) xdims.push_back(d);
  Instruction* xr = MakeReshape(parent, x, xdims);
  ir::DotDimensionNumbers dn = *c.dot->dot_dnums;
  std::vector<int64_t>& contracting =
      c.side == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  for (int64_t& d : contracting) ++d;
  // The product's dimensions: lhs free, then rhs free; the step dimension is the first free one
  // of its side.
  const Instruction* lhs = c.side == 0 ? xr : w;
  const int64_t lhs_free =
      lhs->shape().rank() - static_cast<int64_t>(dn.lhs_contracting_dimensions.size());
  *step_dim = c.side == 0 ? 0 : lhs_free;
  std::vector<int64_t> pdims = c.dot->shape().dimensions();
  pdims.insert(pdims.begin() + *step_dim, x->shape().dimensions(0));
  Instruction* p =
      AddInstr(parent, Opcode::kDot, ir::Shape(c.dot->shape().element_type(), pdims),
               c.side == 0 ? std::vector<Instruction*>{xr, w} : std::vector<Instruction*>{w, xr},
               c.dot->name());
  p->dot_dnums = dn;
  return p;
}

bool BatchLoopDots(Instruction* while_op, bool* replaced_computations) {
  if (!while_op->shape().IsTuple() || !while_op->control_predecessors().empty() ||
      !while_op->control_successors().empty() || while_op->while_body()->parameter_count() != 1 ||
      while_op->while_condition()->parameter_count() != 1) {
    return false;
  }
  const std::vector<Candidate> candidates = FindCandidates(while_op);
  if (candidates.empty()) return false;
  std::vector<Instruction*> products;
  std::vector<int64_t> step_dims;
  for (const Candidate& c : candidates) {
    int64_t step_dim = 0;
    products.push_back(ProductOverSteps(while_op, c, &step_dim));
    step_dims.push_back(step_dim);
  }
  LiveInResult live_in = MakeInstructionsLiveIn(while_op, products);
  for (size_t k = 0; k < candidates.size(); ++k) {
    Instruction* dot = candidates[k].dot;
    if (!live_in.in_place) {
      auto it = live_in.body_map.find(dot);
      if (it == live_in.body_map.end() || it->second == nullptr) continue;
      dot = it->second;
    }
    Computation& body = *dot->parent();
    const Instruction* step = dot->operand(candidates[k].side);
    if (step->opcode() != Opcode::kDynamicSlice) step = step->operand(0);
    Instruction* index = const_cast<Instruction*>(step->operand(1));
    Instruction* product = live_in.live_in_values[k];
    const std::vector<int64_t>& pdims = product->shape().dimensions();
    Instruction* zero = MakeScalarConstant(body, index->shape().element_type(), 0);
    std::vector<Instruction*> operands = {product};
    std::vector<int64_t> sizes = pdims;
    for (size_t d = 0; d < pdims.size(); ++d) {
      const bool at_step = static_cast<int64_t>(d) == step_dims[k];
      operands.push_back(at_step ? index : zero);
      if (at_step) sizes[d] = 1;
    }
    Instruction* row =
        AddInstr(body, Opcode::kDynamicSlice, ir::Shape(dot->shape().element_type(), sizes),
                 operands, "step_row");
    row->dynamic_slice_sizes = sizes;
    ReplaceInstruction(dot, MakeReshape(body, row, dot->shape().dimensions()));
  }
  *replaced_computations = !live_in.in_place;
  return true;
}

class WhileLoopDotBatching : public Pass {
 public:
  std::string_view name() const override { return "while-loop-dot-batching"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    return RewriteWhileLoops(module, BatchLoopDots);
  }
};

}  // namespace

void RegisterWhileLoopDotBatching(Registry& registry) {
  registry.Register({"while-loop-dot-batching",
                     "computes a loop's per-step dots of invariant arrays as one product before it",
                     [] { return std::make_unique<WhileLoopDotBatching>(); }});
}

}  // namespace mltune::passes
