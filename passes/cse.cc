// cse: XLA's HloCSE. In every computation, merges constants with bit-identical literals (and
// identical iotas), then, in post-order, replaces each instruction by an earlier one with the same
// opcode, shape (layout included), operands (either order for commutative ops), attributes and
// called computations (equal by structure). Side-effecting instructions (rng included) are never
// merged, nor are instructions with control edges.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/fingerprint.h"
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

// Operand order does not matter for these. Max/min only on non-floats: with signed zeros the
// result's bits can depend on the order.
bool IsCommutative(const Instruction* i) {
  switch (i->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      return i->operand_count() == 2;
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      return i->operand_count() == 2 && !ir::IsFloatingPoint(i->shape().element_type()) &&
             !ir::IsComplex(i->shape().element_type());
    default:
      return false;
  }
}

std::string OperandId(const Instruction* op) {
  return absl::StrCat(reinterpret_cast<uintptr_t>(op));
}

// Everything but called computations, which are compared separately (by structure).
std::string CseKey(const Instruction* i) {
  std::string key =
      absl::StrCat(std::string(ir::OpcodeName(i->opcode())), " ", i->shape().ToString(true), " (");
  if (IsCommutative(i)) {
    std::string a = OperandId(i->operand(0)), b = OperandId(i->operand(1));
    if (b < a) std::swap(a, b);
    absl::StrAppend(&key, a, ",", b);
  } else {
    for (const Instruction* op : i->operands()) absl::StrAppend(&key, OperandId(op), ",");
  }
  absl::StrAppend(&key, ") calls=", i->called_computations().size(), " ",
                  ir::InstructionAttributesKey(*i));
  return key;
}

bool SameCallees(const Instruction* a, const Instruction* b) {
  const auto& ca = a->called_computations();
  const auto& cb = b->called_computations();
  if (ca.size() != cb.size()) return false;
  for (size_t k = 0; k < ca.size(); ++k) {
    if (ca[k] != cb[k] && !ComputationsEqual(*ca[k], *cb[k])) return false;
  }
  return true;
}

// Constants (never elided ones: their values are unknown) and iotas: zero-operand values that
// the post-order walk below skips.
bool CombineConstants(Computation& c) {
  bool changed = false;
  std::unordered_map<std::string, std::vector<Instruction*>> seen;
  for (Instruction* i : c.MakePostOrder()) {
    const bool constant = i->opcode() == Opcode::kConstant && i->literal.has_value();
    if ((!constant && i->opcode() != Opcode::kIota) || HasControlEdges(i)) continue;
    std::vector<Instruction*>& bucket =
        seen[absl::StrCat(std::string(ir::OpcodeName(i->opcode())), " ", i->shape().ToString(true),
                          " ", ir::InstructionAttributesKey(*i))];
    Instruction* match = nullptr;
    for (Instruction* candidate : bucket) {
      if (!constant || candidate->literal->BitwiseEqual(*i->literal)) {
        match = candidate;
        break;
      }
    }
    if (match == nullptr) {
      bucket.push_back(i);
      continue;
    }
    i->ReplaceAllUsesWith(match);
    if (c.RemoveInstruction(i).ok()) changed = true;
  }
  return changed;
}

bool RunOnComputation(Computation& c) {
  bool changed = CombineConstants(c);
  std::unordered_map<std::string, std::vector<Instruction*>> representatives;
  for (Instruction* i : c.MakePostOrder()) {
    if (i->operand_count() == 0 && i->opcode() != Opcode::kPartitionId &&
        i->opcode() != Opcode::kReplicaId) {
      continue;
    }
    if (HasControlEdges(i) || HasSideEffectRecursive(i)) continue;
    std::vector<Instruction*>& bucket = representatives[CseKey(i)];
    Instruction* match = nullptr;
    for (Instruction* candidate : bucket) {
      if (SameCallees(candidate, i)) {
        match = candidate;
        break;
      }
    }
    if (match == nullptr) {
      bucket.push_back(i);
      continue;
    }
    // Operands come first in post-order, so later instructions already see the representative.
    i->ReplaceAllUsesWith(match);
    if (c.RemoveInstruction(i).ok()) changed = true;
  }
  return changed;
}

class HloCse : public Pass {
 public:
  std::string_view name() const override { return "cse"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) changed |= RunOnComputation(*c);
    return changed;
  }
};

}  // namespace

void RegisterHloCse(Registry& registry) {
  registry.Register({"cse", "merges identical side-effect-free instructions and equal constants",
                     [] { return std::make_unique<HloCse>(); }});
}

}  // namespace mltune::passes
