// call-inliner: XLA's CallInliner. Replaces every `call` by a copy of its callee's body (callees
// first, so nested calls are inlined once), then runs dce to drop the computations no longer
// called. Calls marked inlineable="false" in their frontend attributes are kept, as in XLA, and
// so are calls with control edges (their ordering constraints have no single place to go).
#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;

bool IsInlineable(const Instruction* call) {
  if (call->opcode() != ir::Opcode::kCall || call->to_apply() == nullptr ||
      call->to_apply()->root() == nullptr) {
    return false;
  }
  if (!call->control_predecessors().empty() || !call->control_successors().empty()) return false;
  return call->frontend_attributes.find("inlineable=\"false\"") == std::string::npos;
}

void Inline(Instruction* call) {
  const Computation& callee = *call->to_apply();
  Computation& caller = *call->parent();
  std::unordered_map<const Instruction*, Instruction*> map;
  for (Instruction* i : callee.MakePostOrder()) {
    if (i->opcode() == ir::Opcode::kParameter) {
      map[i] = call->operand(i->parameter_number);
      continue;
    }
    std::vector<Instruction*> operands;
    for (Instruction* op : i->operands()) operands.push_back(map.at(op));
    map[i] = CloneInstruction(*i, caller, operands);
  }
  for (Instruction* i : callee.instructions()) {
    for (Instruction* succ : i->control_successors()) {
      map.at(i)->AddControlDependencyTo(map.at(succ));
    }
  }
  call->ReplaceAllUsesWith(map.at(callee.root()));
  (void)caller.RemoveInstruction(call);
}

class CallInliner : public Pass {
 public:
  std::string_view name() const override { return "call-inliner"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* instr : c->MakePostOrder()) {
        if (!IsInlineable(instr)) continue;
        Inline(instr);
        changed = true;
      }
    }
    if (changed) {
      absl::StatusOr<std::unique_ptr<Pass>> dce = Registry::Global().Create("dce");
      if (!dce.ok()) return dce.status();
      if (absl::StatusOr<bool> s = (*dce)->Run(module); !s.ok()) return s.status();
    }
    return changed;
  }
};

}  // namespace

void RegisterCallInliner(Registry& registry) {
  registry.Register({"call-inliner", "inlines every call instruction into its caller",
                     [] { return std::make_unique<CallInliner>(); }});
}

}  // namespace mltune::passes
