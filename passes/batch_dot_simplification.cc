// batch-dot-simplification: XLA's BatchDotSimplification. A dot whose batch dimensions are
// 0..n-1 on both sides, with one contracting dimension, loses its batch dimensions of size 1:
// both operands are reshaped without them, the dot runs on the rest, and a reshape restores the
// original result shape.
#include <algorithm>
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
using ir::Shape;

// reshape(operand) without the (size-1) dimensions `dims`.
Instruction* ElideDegenerateDims(Computation& c, Instruction* operand,
                                 const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < operand->shape().rank(); ++i) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
      kept.push_back(operand->shape().dimensions(i));
    }
  }
  return MakeReshape(c, operand, kept);
}

bool ElideDegenerateBatchDimensionFromBatchDot(Instruction* dot) {
  if (dot->operand_count() != 2 || !dot->dot_dnums.has_value() || !dot->shape().is_static() ||
      !dot->operand(0)->shape().is_static() || !dot->operand(1)->shape().is_static()) {
    return false;
  }
  const ir::DotDimensionNumbers& d = *dot->dot_dnums;
  if (d.lhs_batch_dimensions != d.rhs_batch_dimensions) return false;
  for (size_t i = 0; i < d.lhs_batch_dimensions.size(); ++i) {
    if (d.lhs_batch_dimensions[i] != static_cast<int64_t>(i)) return false;
  }
  // A dot without contracting dimensions is algsimp's; several are not handled, as in XLA.
  if (d.lhs_contracting_dimensions.size() != 1) return false;
  Instruction* lhs = dot->operand(0);
  Instruction* rhs = dot->operand(1);
  std::vector<int64_t> degenerate;
  for (int64_t b : d.lhs_batch_dimensions) {
    if (lhs->shape().dimensions(b) == 1) degenerate.push_back(b);
  }
  if (degenerate.empty()) return false;
  Computation& c = *dot->parent();
  Instruction* new_lhs = ElideDegenerateDims(c, lhs, degenerate);
  Instruction* new_rhs = ElideDegenerateDims(c, rhs, degenerate);
  const int64_t removed = static_cast<int64_t>(degenerate.size());
  const int64_t num_batch = static_cast<int64_t>(d.lhs_batch_dimensions.size()) - removed;
  ir::DotDimensionNumbers nd;
  for (int64_t i = 0; i < num_batch; ++i) {
    nd.lhs_batch_dimensions.push_back(i);
    nd.rhs_batch_dimensions.push_back(i);
  }
  nd.lhs_contracting_dimensions = {d.lhs_contracting_dimensions[0] - removed};
  nd.rhs_contracting_dimensions = {d.rhs_contracting_dimensions[0] - removed};
  // Result: remaining batch, lhs non-contracting, rhs non-contracting.
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < num_batch; ++i) dims.push_back(new_lhs->shape().dimensions(i));
  for (int64_t i = num_batch; i < new_lhs->shape().rank(); ++i) {
    if (i != nd.lhs_contracting_dimensions[0]) dims.push_back(new_lhs->shape().dimensions(i));
  }
  for (int64_t i = num_batch; i < new_rhs->shape().rank(); ++i) {
    if (i != nd.rhs_contracting_dimensions[0]) dims.push_back(new_rhs->shape().dimensions(i));
  }
  Instruction* new_dot = CloneInstruction(*dot, c, {new_lhs, new_rhs});
  new_dot->set_shape(Shape(dot->shape().element_type(), dims));
  new_dot->dot_dnums = nd;
  ReplaceInstruction(dot, AddInstr(c, Opcode::kReshape, dot->shape(), {new_dot}));
  return true;
}

class BatchDotSimplification : public Pass {
 public:
  std::string_view name() const override { return "batch-dot-simplification"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> dots;
      for (Instruction* i : c->instructions()) {
        if (i->opcode() == Opcode::kDot) dots.push_back(i);
      }
      for (Instruction* dot : dots) changed |= ElideDegenerateBatchDimensionFromBatchDot(dot);
    }
    return changed;
  }
};

}  // namespace

void RegisterBatchDotSimplification(Registry& registry) {
  registry.Register({"batch-dot-simplification", "removes size-1 batch dimensions of dots",
                     [] { return std::make_unique<BatchDotSimplification>(); }});
}

}  // namespace mltune::passes
