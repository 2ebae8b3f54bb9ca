// cse_barrier_expander: XLA's OptimizationBarrierExpander. Removes every opt-barrier, forwarding
// its operand to its users; the barrier's control edges move to the operand (a predecessor edge
// that would close a cycle is dropped, as it then already holds).
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

// True when `to` is reachable from `from` through operands and control predecessors, i.e. `from`
// depends on `to`.
bool DependsOn(const Instruction* from, const Instruction* to) {
  std::unordered_set<const Instruction*> seen = {from};
  std::vector<const Instruction*> stack = {from};
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (i == to) return true;
    for (const Instruction* op : i->operands()) {
      if (seen.insert(op).second) stack.push_back(op);
    }
    for (const Instruction* p : i->control_predecessors()) {
      if (seen.insert(p).second) stack.push_back(p);
    }
  }
  return false;
}

class OptimizationBarrierExpander : public Pass {
 public:
  std::string_view name() const override { return "cse_barrier_expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    std::vector<Instruction*> barriers;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->instructions()) {
        if (i->opcode() == Opcode::kOptimizationBarrier && i->operand_count() == 1) {
          barriers.push_back(i);
        }
      }
    }
    for (Instruction* barrier : barriers) {
      Instruction* arg = barrier->operand(0);
      const std::vector<Instruction*> preds = barrier->control_predecessors();
      const std::vector<Instruction*> succs = barrier->control_successors();
      barrier->DropAllControlDependencies();
      for (Instruction* p : preds) {
        if (p != arg && !DependsOn(p, arg)) p->AddControlDependencyTo(arg);
      }
      for (Instruction* s : succs) {
        if (s != arg && !DependsOn(arg, s)) arg->AddControlDependencyTo(s);
      }
      barrier->ReplaceAllUsesWith(arg);
      (void)barrier->parent()->RemoveInstruction(barrier);
    }
    return !barriers.empty();
  }
};

}  // namespace

void RegisterOptimizationBarrierExpander(Registry& registry) {
  registry.Register({"cse_barrier_expander",
                     "removes opt-barrier instructions, forwarding their operands",
                     [] { return std::make_unique<OptimizationBarrierExpander>(); }});
}

}  // namespace mltune::passes
