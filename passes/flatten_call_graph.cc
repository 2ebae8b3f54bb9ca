// flatten-call-graph: XLA's FlattenCallGraph. Gives every computation called in a sequential
// context (call, while, conditional) exactly one such call site, by cloning the callee (and,
// through the clone's own sites, its sequential callees) for every extra site. A computation also
// called in an embedded context (reduce, map, sort, fusion, ...) gets a clone for every sequential
// site, as XLA does for its kBoth context. Embedded callees themselves are shared, not cloned.
#include <deque>
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

bool IsSequentialSite(const Instruction* i) {
  return i->opcode() == Opcode::kCall || i->opcode() == Opcode::kWhile ||
         i->opcode() == Opcode::kConditional;
}

class FlattenCallGraph : public Pass {
 public:
  std::string_view name() const override { return "flatten-call-graph"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    if (module.entry() == nullptr) return false;
    std::unordered_set<const Computation*> claimed;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* i : c->instructions()) {
        if (IsSequentialSite(i)) continue;
        for (Computation* callee : i->called_computations()) claimed.insert(callee);
      }
    }
    bool changed = false;
    // Callers before callees: a computation's sites are settled before it is cloned or processed.
    std::unordered_set<const Computation*> queued = {module.entry()};
    std::deque<Computation*> worklist = {module.entry()};
    while (!worklist.empty()) {
      Computation* c = worklist.front();
      worklist.pop_front();
      for (Instruction* i : c->instructions()) {
        std::vector<Computation*>& callees = i->mutable_called_computations();
        for (size_t k = 0; k < callees.size(); ++k) {
          Computation* callee = callees[k];
          if (callee == nullptr) continue;
          if (IsSequentialSite(i) && !claimed.insert(callee).second) {
            callee = CloneComputation(*callee, module);
            callees[k] = callee;
            claimed.insert(callee);
            changed = true;
          }
          if (queued.insert(callee).second) worklist.push_back(callee);
        }
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterFlattenCallGraph(Registry& registry) {
  registry.Register({"flatten-call-graph",
                     "clones computations so each has a single sequential call site",
                     [] { return std::make_unique<FlattenCallGraph>(); }});
}

}  // namespace mltune::passes
