// dce: XLA's HloDCE. Removes instructions whose results nobody uses (and that have no side
// effect, control edge or parameter role), then every computation the entry no longer reaches.
#include <algorithm>
#include <string>
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

// XLA keeps a Sharding custom-call that annotates a root, a parameter or a shared value: it is
// what carries the sharding there.
bool IsPinnedShardingAnnotation(const Instruction* instr) {
  if (instr->opcode() != ir::Opcode::kCustomCall || instr->custom_call_target != "Sharding" ||
      instr->operand_count() != 1) {
    return false;
  }
  const Instruction* op = instr->operand(0);
  return op->parent()->root() == op || op->opcode() == ir::Opcode::kParameter ||
         op->user_count() != 1;
}

// Users before operands (reverse post-order), so a whole dead chain goes in one sweep and no
// visited pointer is ever one already removed.
bool RemoveDeadInstructions(Computation& c) {
  bool changed = false;
  std::vector<Instruction*> order = c.MakePostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* instr = *it;
    if (!IsSafelyRemovable(instr) || IsPinnedShardingAnnotation(instr)) continue;
    if (c.RemoveInstruction(instr).ok()) changed = true;
  }
  return changed;
}

class HloDce : public Pass {
 public:
  std::string_view name() const override { return "dce"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    if (module.entry() == nullptr) return false;
    bool changed = false;
    // Clean each live computation before following its calls, so callees that only dead
    // instructions referred to are never reached and are removed below.
    std::unordered_set<Computation*> live = {module.entry()};
    std::vector<Computation*> agenda = {module.entry()};
    while (!agenda.empty()) {
      Computation* c = agenda.back();
      agenda.pop_back();
      changed |= RemoveDeadInstructions(*c);
      for (Instruction* i : c->instructions()) {
        for (Computation* callee : i->called_computations()) {
          if (callee != nullptr && live.insert(callee).second) agenda.push_back(callee);
        }
      }
    }
    changed |= RemoveDeadComputations(module, live);
    return changed;
  }

 private:
  // Removes every computation outside `live`, callers first (Module refuses to remove one that
  // is still called).
  static bool RemoveDeadComputations(ir::Module& module,
                                     const std::unordered_set<Computation*>& live) {
    std::vector<Computation*> dead;
    for (Computation* c : module.computations()) {
      if (!live.count(c)) dead.push_back(c);
    }
    if (dead.empty()) return false;
    std::unordered_set<Computation*> pending(dead.begin(), dead.end());
    while (!pending.empty()) {
      std::unordered_set<Computation*> called;
      for (Computation* c : pending) {
        for (Instruction* i : c->instructions()) {
          for (Computation* callee : i->called_computations()) called.insert(callee);
        }
      }
      std::vector<Computation*> removable;
      for (Computation* c : dead) {
        if (pending.count(c) && !called.count(c)) removable.push_back(c);
      }
      if (removable.empty()) break;  // a call cycle among dead computations; leave it
      for (Computation* c : removable) {
        pending.erase(c);
        (void)module.RemoveComputation(c);
      }
    }
    return true;
  }
};

}  // namespace

void RegisterHloDce(Registry& registry) {
  registry.Register({"dce",
                     "removes unused side-effect-free instructions and uncalled computations",
                     [] { return std::make_unique<HloDce>(); }});
}

}  // namespace mltune::passes
