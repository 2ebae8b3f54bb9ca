// tuple-simplifier: XLA's TupleSimplifier. Forwards get-tuple-element(tuple(..., x, ...)) (through
// chains of GTEs of nested tuples) to x, and replaces tuple(gte(t, 0), ..., gte(t, n-1)) by t
// when the shapes are compatible. Instructions with control edges are left alone.
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

bool HasControlEdges(const Instruction* i) {
  return !i->control_predecessors().empty() || !i->control_successors().empty();
}

// As XLA's ReplaceInstruction(preserve_sharding=true): never trade one sharding for another.
bool ShardingCompatible(const Instruction* old_instr, const Instruction* replacement) {
  return old_instr->sharding.empty() || replacement->sharding.empty() ||
         old_instr->sharding == replacement->sharding;
}

// tuple(gte(t, 0), ..., gte(t, n-1)) -> t.
Instruction* WholeTupleSource(const Instruction* tuple) {
  Instruction* source = nullptr;
  for (int64_t k = 0; k < tuple->operand_count(); ++k) {
    const Instruction* op = tuple->operand(k);
    if (op->opcode() != Opcode::kGetTupleElement || op->tuple_index != k) return nullptr;
    if (source == nullptr) {
      source = op->operand(0);
      if (!source->shape().Compatible(tuple->shape())) return nullptr;
    } else if (source != op->operand(0)) {
      return nullptr;
    }
  }
  return source;
}

// The instruction a chain of GTEs ending in `gte` reads through tuple instructions, or nullptr.
Instruction* ForwardedElement(const Instruction* gte) {
  std::vector<int64_t> path;
  const Instruction* ancestor = gte;
  while (ancestor->opcode() == Opcode::kGetTupleElement) {
    path.push_back(ancestor->tuple_index);
    ancestor = ancestor->operand(0);
  }
  Instruction* element = const_cast<Instruction*>(ancestor);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (element->opcode() != Opcode::kTuple || *it < 0 || *it >= element->operand_count()) {
      return nullptr;
    }
    element = element->operand(*it);
  }
  return element;
}

bool RunOnComputation(Computation& c) {
  bool changed = false;
  // Replacing only ever removes operands, which come before the current instruction here.
  for (Instruction* instr : c.MakePostOrder()) {
    if (HasControlEdges(instr)) continue;
    Instruction* replacement = nullptr;
    if (instr->opcode() == Opcode::kTuple) {
      replacement = WholeTupleSource(instr);
    } else if (instr->opcode() == Opcode::kGetTupleElement) {
      replacement = ForwardedElement(instr);
      if (replacement != nullptr && !replacement->shape().Compatible(instr->shape())) {
        replacement = nullptr;
      }
    }
    if (replacement == nullptr || replacement == instr || !ShardingCompatible(instr, replacement)) {
      continue;
    }
    instr->ReplaceAllUsesWith(replacement);
    RemoveInstructionAndUnusedOperands(instr);
    changed = true;
  }
  return changed;
}

class TupleSimplifier : public Pass {
 public:
  std::string_view name() const override { return "tuple-simplifier"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) changed |= RunOnComputation(*c);
    return changed;
  }
};

}  // namespace

void RegisterTupleSimplifier(Registry& registry) {
  registry.Register({"tuple-simplifier",
                     "forwards get-tuple-element(tuple) and removes tuple(gte(t, i)...) copies",
                     [] { return std::make_unique<TupleSimplifier>(); }});
}

}  // namespace mltune::passes
