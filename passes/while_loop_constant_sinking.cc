// while-loop-constant-sinking: XLA's WhileLoopConstantSinking with its default options. A state
// element that the body passes through unchanged and whose init is a constant is replaced, inside
// the body (except where the body's result passes it on) and the condition, by a copy of the
// constant, so later simplifications see the value. The state itself is unchanged (simplify-while-
// loops removes the then-unused element). Broadcasts of constants are not sunk (XLA's
// sink_broadcast_of_constants defaults to false). Loops whose body or condition have other callers
// are skipped, since sinking one caller's init would be wrong for the others.
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

// Replaces every use of `old_instr` by `new_instr`, except operand `tuple_index` of the body's
// root, which keeps passing the state element on.
void ReplaceUsesWhileKeepingLoopInvariance(Instruction* old_instr, Instruction* new_instr,
                                           const Instruction* body_root, int64_t tuple_index) {
  const std::vector<Instruction*> users = old_instr->users();
  for (Instruction* user : users) {
    for (int64_t i = 0; i < user->operand_count(); ++i) {
      if (user->operand(i) == old_instr && !(user == body_root && i == tuple_index)) {
        user->ReplaceOperand(i, new_instr);
      }
    }
  }
}

bool TrySinkingConstantsIntoWhileLoop(ir::Module& module, Instruction* while_op) {
  Computation* cond = while_op->while_condition();
  Computation* body = while_op->while_body();
  const Instruction* init = while_op->operand(0);
  if (init->opcode() != Opcode::kTuple || cond->parameter_count() != 1 ||
      body->parameter_count() != 1 || CallerCount(module, cond) != 1 ||
      CallerCount(module, body) != 1) {
    return false;
  }
  bool changed = false;
  auto cond_gtes = GetGTEsMapForWhileConditional(*cond);
  for (Instruction* gte : GetInvariantGTEsForWhileBody(*body)) {
    const int64_t index = gte->tuple_index;
    const Instruction* value = init->operand(index);
    if (value->opcode() != Opcode::kConstant || !value->literal.has_value()) continue;
    if (gte->user_count() > 1) {
      Instruction* constant = CloneInstruction(*value, *body, {});
      ReplaceUsesWhileKeepingLoopInvariance(gte, constant, body->root(), index);
      changed = true;
    }
    auto it = cond_gtes.find(index);
    if (it == cond_gtes.end()) continue;
    for (Instruction* cond_gte : it->second) {
      if (cond_gte->user_count() == 0) continue;
      cond_gte->ReplaceAllUsesWith(CloneInstruction(*value, *cond, {}));
      changed = true;
    }
  }
  return changed;
}

class WhileLoopConstantSinking : public Pass {
 public:
  std::string_view name() const override { return "while-loop-constant-sinking"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    std::vector<Instruction*> while_ops;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* i : c->instructions()) {
        if (i->opcode() == Opcode::kWhile) while_ops.push_back(i);
      }
    }
    bool changed = false;
    for (Instruction* while_op : while_ops) {
      changed |= TrySinkingConstantsIntoWhileLoop(module, while_op);
    }
    return changed;
  }
};

}  // namespace

void RegisterWhileLoopConstantSinking(Registry& registry) {
  registry.Register({"while-loop-constant-sinking",
                     "replaces loop-invariant constant state elements by the constant inside the "
                     "loop",
                     [] { return std::make_unique<WhileLoopConstantSinking>(); }});
}

}  // namespace mltune::passes
