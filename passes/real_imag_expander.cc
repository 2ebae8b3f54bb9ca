// real_imag_expander: XLA's RealImagExpander. real and imag of a real (non-complex) operand are
// trivial: real(x) is x and imag(x) is zeros. (The evaluator, like XLA, reads a real number as
// x + 0i, so both rewrites are exact.)
#include <memory>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

class RealImagExpander : public Pass {
 public:
  std::string_view name() const override { return "real_imag_expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->MakePostOrder()) {
        if ((i->opcode() != Opcode::kReal && i->opcode() != Opcode::kImag) ||
            !i->shape().IsArray() || ir::IsComplex(i->operand(0)->shape().element_type()) ||
            !i->control_predecessors().empty() || !i->control_successors().empty()) {
          continue;
        }
        Instruction* replacement = i->operand(0);
        if (i->opcode() == Opcode::kImag) {
          replacement = MakeScalarConstant(*c, i->shape().element_type(), 0);
          if (i->shape().rank() > 0) {
            replacement = MakeBroadcast(*c, replacement, i->shape().dimensions(), {});
          }
        }
        i->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(i);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterRealImagExpander(Registry& registry) {
  registry.Register({"real_imag_expander",
                     "rewrites real(x) to x and imag(x) to zeros for non-complex x",
                     [] { return std::make_unique<RealImagExpander>(); }});
}

}  // namespace mltune::passes
