// simplify-fp-conversions: XLA's SimplifyFPConversions, restricted to exact chains. XLA replaces
// any chain of two or more float converts convert(...convert(A)) by convert(A, final type) (or A),
// deliberately dropping intermediate roundings such as f32 -> bf16 -> f32 on GPU. That changes
// results by up to a bf16 rounding (2^-9 relative), far beyond the float tolerance that every pass
// here must meet, so this version removes a chain only when no intermediate convert rounds: each
// intermediate type holds every value of the type before it (CastPreservesValues). Then the chain
// computes exactly convert(A, final type).
#include <memory>
#include <unordered_set>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

bool IsFloatConvert(const Instruction* i) {
  return i->opcode() == Opcode::kConvert && ir::IsFloatingPoint(i->shape().element_type()) &&
         i->control_predecessors().empty() && i->control_successors().empty();
}

class SimplifyFPConversions : public Pass {
 public:
  std::string_view name() const override { return "simplify-fp-conversions"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      std::unordered_set<const Instruction*> gone;
      std::vector<Instruction*> order = c->MakePostOrder();
      // Users first, so each chain is replaced once, from its last convert.
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Instruction* last = *it;
        if (gone.count(last) || !IsFloatConvert(last)) continue;
        // Walk down the chain while every step keeps the values of the one before it.
        Instruction* input = last->operand(0);
        int length = 1;
        while (IsFloatConvert(input) &&
               CastPreservesValues(input->operand(0)->shape().element_type(),
                                   input->shape().element_type())) {
          input = input->operand(0);
          ++length;
        }
        if (length < 2) continue;
        Instruction* replacement = input->shape().element_type() == last->shape().element_type()
                                       ? input
                                       : MakeConvert(*c, input, last->shape().element_type());
        // The chain's converts used only along the chain die with `last`; they come earlier in
        // the order, so remember not to visit them.
        for (Instruction* i = last->operand(0); i != input && i->user_count() == 1;
             i = i->operand(0)) {
          gone.insert(i);
        }
        last->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(last);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterSimplifyFPConversions(Registry& registry) {
  registry.Register({"simplify-fp-conversions",
                     "removes chains of float converts whose intermediate steps are exact",
                     [] { return std::make_unique<SimplifyFPConversions>(); }});
}

}  // namespace mltune::passes
