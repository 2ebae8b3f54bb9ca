// NormalizeTupleUses: every leaf of a tuple-shaped value gets a get-tuple-element, which the
// lowering makes the owner of the leaf's buffer (lowering.h's LeafValue).
#include "backends/cpu/lowering.h"
#include "ir/hlo_builder.h"

namespace mltune::backends::cpu {

const ir::Instruction* LeafValue(const ir::Instruction* value, int64_t index) {
  for (const ir::Instruction* u : value->users()) {
    if (u->opcode() == ir::Opcode::kGetTupleElement && u->tuple_index == index &&
        u->operand(0) == value) {
      return u;
    }
  }
  return nullptr;
}

void NormalizeTupleUses(ir::Module& module) {
  for (ir::Computation* comp : module.computations()) {
    for (ir::Instruction* value : comp->MakePostOrder()) {
      const ir::Shape& shape = value->shape();
      if (!shape.IsTuple() || value->opcode() == ir::Opcode::kTuple) continue;
      // Nested tuples are left as they are; CheckSupported refuses them.
      bool flat = true;
      for (const ir::Shape& s : shape.tuple_shapes()) flat &= s.IsArray();
      if (!flat) continue;
      std::vector<ir::Instruction*> leaves;
      for (int64_t i = 0; i < shape.tuple_size(); ++i) {
        const ir::Instruction* leaf = LeafValue(value, i);
        leaves.push_back(leaf != nullptr ? const_cast<ir::Instruction*>(leaf)
                                         : ir::MakeGetTupleElement(*comp, value, i));
      }
      std::vector<ir::Instruction*> others;
      for (ir::Instruction* u : value->users()) {
        if (u->opcode() != ir::Opcode::kGetTupleElement) others.push_back(u);
      }
      if (others.empty() && comp->root() != value) continue;
      ir::Instruction* tuple = ir::MakeTuple(*comp, leaves);
      for (ir::Instruction* u : others) u->ReplaceOperandEverywhere(value, tuple);
      if (comp->root() == value) comp->set_root(tuple);
    }
  }
}

}  // namespace mltune::backends::cpu
