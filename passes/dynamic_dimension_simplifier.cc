// dynamic-dimension-simplifier: XLA's DynamicDimensionSimplifier, the small cleanups of the
// shape arithmetic that dynamic-dimension handling emits, each as one sweep over the module:
//   concat(concat(a, b), c) -> concat(a, b, c) (same dimension);
//   slice(concat(..., x, ...)) -> x for a rank-1 unit-stride slice covering exactly x;
//   reshape(broadcast(scalar a) to [n]) to a scalar -> a;
//   reshape(reshape(a)) -> a when the outer reshape restores a's shape;
//   convert(a) to a's own type -> a;  reshape(a) to a's own shape -> a.
// Forwarded instructions are left for dce, as in XLA; a change is only reported when something
// was rewired (XLA also counts forwarding a value nobody uses).
#include <memory>
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

bool HasUses(const Instruction* i) { return i->user_count() > 0 || i->parent()->root() == i; }

// Makes the users of `from` use `to`; true when there were any.
bool Forward(Instruction* from, Instruction* to) {
  if (!HasUses(from) || from == to) return false;
  from->ReplaceAllUsesWith(to);
  return true;
}

bool ConcatForwarding(Instruction* concat) {
  if (concat->opcode() != Opcode::kConcatenate || concat->dimensions.size() != 1) return false;
  std::vector<Instruction*> operands;
  bool changed = false;
  for (Instruction* op : concat->operands()) {
    if (op->opcode() == Opcode::kConcatenate && op->dimensions == concat->dimensions) {
      operands.insert(operands.end(), op->operands().begin(), op->operands().end());
      changed = true;
    } else {
      operands.push_back(op);
    }
  }
  if (!changed) return false;
  concat->ReplaceAllUsesWith(CloneInstruction(*concat, *concat->parent(), operands));
  // As XLA's ReplaceInstruction: the old concat and operands only it used go (they all come
  // earlier in the post order being walked).
  RemoveInstructionAndUnusedOperands(concat);
  return true;
}

bool SliceConcatForwarding(Instruction* slice) {
  if (slice->opcode() != Opcode::kSlice || slice->shape().rank() != 1 || slice->slice.size() != 1) {
    return false;
  }
  Instruction* concat = slice->operand(0);
  if (concat->opcode() != Opcode::kConcatenate) return false;
  const ir::SliceDim& s = slice->slice[0];
  const int64_t size = slice->shape().dimensions(0);
  if (size != s.limit - s.start || s.stride != 1) return false;
  int64_t offset = 0;
  for (Instruction* op : concat->operands()) {
    if (offset == s.start && op->shape().dimensions(0) == size) return Forward(slice, op);
    offset += op->shape().dimensions(0);
  }
  return false;
}

bool ReshapeBroadcastForwarding(Instruction* reshape) {
  if (reshape->opcode() != Opcode::kReshape || reshape->shape().rank() != 0) return false;
  Instruction* broadcast = reshape->operand(0);
  if (broadcast->opcode() != Opcode::kBroadcast || broadcast->shape().rank() != 1 ||
      broadcast->operand(0)->shape().rank() != 0) {
    return false;
  }
  return Forward(reshape, broadcast->operand(0));
}

bool ReshapeReshapeForwarding(Instruction* reshape) {
  if (reshape->opcode() != Opcode::kReshape) return false;
  Instruction* inner = reshape->operand(0);
  if (inner->opcode() != Opcode::kReshape ||
      !reshape->shape().Compatible(inner->operand(0)->shape())) {
    return false;
  }
  return Forward(reshape, inner->operand(0));
}

bool IdentityRemoving(Instruction* instr, Opcode opcode) {
  if (instr->opcode() != opcode || !instr->shape().Compatible(instr->operand(0)->shape())) {
    return false;
  }
  return Forward(instr, instr->operand(0));
}

class DynamicDimensionSimplifier : public Pass {
 public:
  std::string_view name() const override { return "dynamic-dimension-simplifier"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    const std::vector<bool (*)(Instruction*)> rewrites = {
        ConcatForwarding,
        SliceConcatForwarding,
        ReshapeBroadcastForwarding,
        ReshapeReshapeForwarding,
        [](Instruction* i) { return IdentityRemoving(i, Opcode::kConvert); },
        [](Instruction* i) { return IdentityRemoving(i, Opcode::kReshape); },
    };
    for (auto rewrite : rewrites) {
      for (Computation* c : NonFusionComputations(module)) {
        for (Instruction* i : c->MakePostOrder()) changed |= rewrite(i);
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterDynamicDimensionSimplifier(Registry& registry) {
  registry.Register({"dynamic-dimension-simplifier",
                     "forwards nested concats, slices of concats, and identity "
                     "reshapes/converts",
                     [] { return std::make_unique<DynamicDimensionSimplifier>(); }});
}

}  // namespace mltune::passes
