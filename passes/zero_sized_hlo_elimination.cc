// zero_sized_hlo_elimination: XLA's ZeroSizedHloElimination. Replaces every side-effect-free,
// static-shaped array instruction with zero elements (other than constants and parameters, and
// ones with control edges) by a constant of that shape, so later passes never see empty
// computations.
#include <memory>
#include <unordered_set>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

bool IsReplaceable(const Instruction* i) {
  const ir::Shape& shape = i->shape();
  return shape.IsArray() && shape.is_static() && shape.ElementCount() == 0 &&
         i->opcode() != Opcode::kConstant && i->opcode() != Opcode::kParameter &&
         i->control_predecessors().empty() && i->control_successors().empty() &&
         !HasSideEffectRecursive(i);
}

class ZeroSizedHloElimination : public Pass {
 public:
  std::string_view name() const override { return "zero_sized_hlo_elimination"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fusion_computations = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fusion_computations.count(c)) continue;
      // Replacing only ever removes operands, which come before the current instruction here.
      for (Instruction* instr : c->MakePostOrder()) {
        if (!IsReplaceable(instr)) continue;
        ir::Shape shape = instr->shape();
        if (!shape.layout().has_value()) shape.SetDefaultLayout();
        absl::StatusOr<ir::Literal> empty = ir::Literal::Create(shape);
        if (!empty.ok()) continue;
        auto constant = std::make_unique<Instruction>(Opcode::kConstant, shape,
                                                      module.UniqueInstructionName("constant"));
        constant->literal = *std::move(empty);
        Instruction* replacement = c->AddInstruction(std::move(constant));
        instr->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(instr);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterZeroSizedHloElimination(Registry& registry) {
  registry.Register({"zero_sized_hlo_elimination",
                     "replaces zero-element array instructions by empty constants",
                     [] { return std::make_unique<ZeroSizedHloElimination>(); }});
}

}  // namespace mltune::passes
