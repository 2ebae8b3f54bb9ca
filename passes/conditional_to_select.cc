// conditional-to-select: XLA's ConditionalToSelect. Inside computations that are only called in
// embedded context (by map, reduce, reduce-window, sort, scatter, select-and-scatter, all-reduce,
// fusion, custom-call, ..., directly or through calls/whiles/conditionals), where backends do not
// support control flow, a pred conditional with side-effect-free branches and an array result
// becomes both branches inlined plus a select. Tuple results are left alone, as in XLA.
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

constexpr int kSequential = 1;
constexpr int kEmbedded = 2;

bool IsControlFlow(Opcode op) {
  return op == Opcode::kCall || op == Opcode::kWhile || op == Opcode::kConditional ||
         op == Opcode::kAsyncStart || op == Opcode::kAsyncUpdate || op == Opcode::kAsyncDone;
}

// XLA's CallGraph contexts: the entry runs sequentially; control flow passes its caller's context
// on, every other caller makes its callee embedded.
std::unordered_map<const Computation*, int> CallContexts(const ir::Module& module) {
  std::unordered_map<const Computation*, int> context;
  const std::vector<Computation*> order = module.MakeComputationPostOrder();
  if (module.entry() != nullptr) context[module.entry()] = kSequential;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int caller = context[*it];
    for (const Instruction* i : (*it)->instructions()) {
      for (const Computation* callee : i->called_computations()) {
        context[callee] |= IsControlFlow(i->opcode()) ? caller : kEmbedded;
      }
    }
  }
  return context;
}

bool DoConditionalToSelect(Instruction* conditional) {
  const std::vector<Computation*>& branches = conditional->called_computations();
  if (branches.size() != 2 ||
      conditional->operand(0)->shape().element_type() != ir::PrimitiveType::kPred) {
    return false;
  }
  if (ComputationHasSideEffect(branches[0]) || ComputationHasSideEffect(branches[1])) return false;
  if (!conditional->shape().IsArray() || !conditional->control_predecessors().empty() ||
      !conditional->control_successors().empty()) {
    return false;
  }
  Computation& c = *conditional->parent();
  Instruction* on_true = InlineComputation(*branches[0], c, {conditional->operand(1)});
  Instruction* on_false = InlineComputation(*branches[1], c, {conditional->operand(2)});
  Instruction* pred = conditional->operand(0);
  const ir::Shape& shape = conditional->shape();
  if (!shape.IsScalar()) pred = MakeBroadcast(c, pred, shape.dimensions(), {});
  ReplaceAndForward(
      conditional, AddInstr(c, Opcode::kSelect, ir::Shape(shape.element_type(), shape.dimensions()),
                            {pred, on_true, on_false}));
  return true;
}

class ConditionalToSelect : public Pass {
 public:
  std::string_view name() const override { return "conditional-to-select"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_map<const Computation*, int> context = CallContexts(module);
    bool changed = false;
    for (Computation* c : module.MakeComputationPostOrder()) {
      auto it = context.find(c);
      if (it == context.end() || it->second != kEmbedded) continue;
      for (Instruction* i : c->MakePostOrder()) {
        if (i->opcode() == Opcode::kConditional) changed |= DoConditionalToSelect(i);
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterConditionalToSelect(Registry& registry) {
  registry.Register({"conditional-to-select",
                     "turns conditionals inside embedded computations (map, reduce, sort, ...) "
                     "into selects",
                     [] { return std::make_unique<ConditionalToSelect>(); }});
}

}  // namespace mltune::passes
