// sharding-remover: XLA's ShardingRemover. With a single partition, the sharding annotation
// custom-calls (Sharding, SPMDFullToShardShape, SPMDShardToFullShape) are identities: their users
// read the operand instead. A Sharding call becomes a copy (which dce may then drop), the others
// are removed once unused. Calls whose shape differs from their operand's (a real multi-partition
// full<->shard reshaping) are left alone.
#include <memory>
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

bool IsShardingOp(const Instruction* i) {
  if (i->opcode() != Opcode::kCustomCall || i->operand_count() != 1 || i->HasSideEffect()) {
    return false;
  }
  const std::string& t = i->custom_call_target;
  return t == "Sharding" || t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape";
}

class ShardingRemover : public Pass {
 public:
  std::string_view name() const override { return "sharding-remover"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      std::vector<Instruction*> order = c->MakePostOrder();
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Instruction* instr = *it;
        if (!IsShardingOp(instr) || !instr->shape().Compatible(instr->operand(0)->shape()) ||
            !instr->control_predecessors().empty() || !instr->control_successors().empty()) {
          continue;
        }
        Instruction* operand = instr->operand(0);
        if (instr->custom_call_target == "Sharding") {
          Instruction* copy = AddInstr(*c, Opcode::kCopy, instr->shape(), {operand});
          copy->sharding = instr->sharding;
          copy->metadata = instr->metadata;
          instr->ReplaceAllUsesWith(copy);
        } else {
          instr->ReplaceAllUsesWith(operand);
        }
        (void)c->RemoveInstruction(instr);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterShardingRemover(Registry& registry) {
  registry.Register({"sharding-remover", "drops single-partition sharding annotation custom-calls",
                     [] { return std::make_unique<ShardingRemover>(); }});
}

}  // namespace mltune::passes
