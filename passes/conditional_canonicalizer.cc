// conditional-canonicalizer: XLA's ConditionalCanonicalizer. A conditional whose result is not a
// tuple gets branches returning a one-element tuple, and its users read element 0, so every
// conditional returns a tuple (what the conditional simplifications and code motion expect).
// Branches that other instructions also call are cloned rather than changed in place.
#include <memory>
#include <unordered_map>
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

class ConditionalCanonicalizer : public Pass {
 public:
  std::string_view name() const override { return "conditional-canonicalizer"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      for (Instruction* conditional : c->MakePostOrder()) {
        if (conditional->opcode() != Opcode::kConditional || conditional->shape().IsTuple()) {
          continue;
        }
        Canonicalize(module, conditional);
        changed = true;
      }
    }
    return changed;
  }

 private:
  static void Canonicalize(ir::Module& module, Instruction* conditional) {
    const ir::Shape shape = conditional->shape();
    // Callers of each branch other than this conditional decide whether to clone it.
    std::unordered_map<const Computation*, int64_t> uses_here;
    for (const Computation* b : conditional->called_computations()) ++uses_here[b];
    std::unordered_map<Computation*, Computation*> wrapped;
    for (Computation*& branch : conditional->mutable_called_computations()) {
      auto it = wrapped.find(branch);
      if (it != wrapped.end()) {
        branch = it->second;
        continue;
      }
      Computation* target = branch;
      if (CallerCount(module, branch) > uses_here[branch])
        target = CloneComputation(*branch, module);
      target->set_root(MakeTuple(*target, {target->root()}));
      wrapped[branch] = target;
      branch = target;
    }
    Computation& parent = *conditional->parent();
    const std::vector<Instruction*> users = conditional->users();
    const bool was_root = parent.root() == conditional;
    conditional->set_shape(ir::Shape::Tuple({shape}));
    Instruction* gte = MakeGetTupleElement(parent, conditional, 0);
    for (Instruction* user : users) user->ReplaceOperandEverywhere(conditional, gte);
    if (was_root) parent.set_root(gte);
  }
};

}  // namespace

void RegisterConditionalCanonicalizer(Registry& registry) {
  registry.Register({"conditional-canonicalizer", "makes every conditional return a tuple",
                     [] { return std::make_unique<ConditionalCanonicalizer>(); }});
}

}  // namespace mltune::passes
