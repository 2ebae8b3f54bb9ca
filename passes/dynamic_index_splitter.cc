// dynamic-index-splitter: XLA's DynamicIndexSplitter. dynamic-slice and dynamic-update-slice in
// the legacy form, with one rank-1 vector of start indices, get one scalar index operand per
// dimension (slice + reshape of the vector). On a rank-0 operand, dynamic-slice is its operand and
// dynamic-update-slice its update. Both rewrites read the same start indices, so they are exact.
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

class DynamicIndexSplitter : public Pass {
 public:
  std::string_view name() const override { return "dynamic-index-splitter"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* op : c->MakePostOrder()) {
        const bool update = op->opcode() == Opcode::kDynamicUpdateSlice;
        if ((op->opcode() != Opcode::kDynamicSlice && !update) || !op->shape().IsArray() ||
            !op->control_predecessors().empty() || !op->control_successors().empty()) {
          continue;
        }
        const int64_t rank = op->operand(0)->shape().rank();
        const int64_t first_index = update ? 2 : 1;
        Instruction* replacement = nullptr;
        if (rank == 0) {
          replacement = op->operand(update ? 1 : 0);
        } else {
          if (op->operand_count() != first_index + 1) continue;
          Instruction* vector = op->operand(first_index);
          if (vector->shape().rank() != 1 || vector->shape().dimensions(0) != rank) continue;
          std::vector<Instruction*> operands(op->operands().begin(),
                                             op->operands().begin() + first_index);
          for (int64_t d = 0; d < rank; ++d) {
            Instruction* element = MakeSlice(*c, vector, {{d, d + 1, 1}});
            operands.push_back(MakeReshape(*c, element, {}));
          }
          replacement = CloneInstruction(*op, *c, operands);
        }
        if (!replacement->shape().Compatible(op->shape())) continue;
        op->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(op);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterDynamicIndexSplitter(Registry& registry) {
  registry.Register({"dynamic-index-splitter",
                     "gives dynamic-slice/update-slice one scalar start index per dimension",
                     [] { return std::make_unique<DynamicIndexSplitter>(); }});
}

}  // namespace mltune::passes
