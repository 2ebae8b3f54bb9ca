// constant_folding: XLA's HloConstantFolding (default level). Replaces an instruction whose
// operands are all constants (or broadcasts of constants, iotas, or tuples of those, with at least
// one real constant) by a constant holding its value, computed by the reference evaluator so the
// folded value is exactly what the instruction would have produced.
//
// As XLA, it does not fold broadcasts or iotas (they would grow constants), FFTs, while loops,
// side-effecting or rng instructions (or ones calling such), instructions with control edges,
// pad(broadcast, constant), or results/operands beyond 45M elements. It also skips custom-calls
// (XLA's evaluator has none), tuple-shaped results (backends do not take tuple constants) and
// dots/convolutions of more than 1e8 multiply-adds (the reference evaluator is slow).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/evaluator/evaluator.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

// XLA's kMaximumConstantSizeElements.
constexpr int64_t kMaxElements = 45'000'000;
// Multiply-adds a folded dot or convolution may cost. XLA has no such limit (only a slow-operation
// alarm), but the reference evaluator is far slower than XLA's; the guard bounds compile time and
// cannot change results.
constexpr int64_t kMaxMultiplyAdds = 100'000'000;

int64_t SaturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

// Multiply-adds of a dot or convolution, 0 for other instructions.
int64_t MultiplyAdds(const Instruction* instr) {
  const int64_t out = instr->shape().IsArray() ? instr->shape().ElementCount() : 0;
  if (instr->opcode() == Opcode::kDot && instr->dot_dnums.has_value()) {
    int64_t contracted = 1;
    for (int64_t d : instr->dot_dnums->lhs_contracting_dimensions) {
      contracted = SaturatingMul(contracted, instr->operand(0)->shape().dimensions(d));
    }
    return SaturatingMul(out, contracted);
  }
  if (instr->opcode() == Opcode::kConvolution) {
    // Each output element reads a window over every input feature of its group: bounded by the
    // kernel's size divided by its output features.
    const ir::Shape& kernel = instr->operand(1)->shape();
    int64_t per_output = kernel.ElementCount();
    if (instr->conv_dnums.has_value()) {
      const int64_t out_features =
          kernel.dimensions(instr->conv_dnums->kernel_output_feature_dimension);
      if (out_features > 0) per_output /= out_features;
    }
    return SaturatingMul(out, std::max<int64_t>(per_output, 1));
  }
  return 0;
}

bool IsConstantLike(const Instruction* op) {
  switch (op->opcode()) {
    case Opcode::kConstant:
    case Opcode::kIota:
      return true;
    case Opcode::kBroadcast:
      return op->operand(0)->opcode() == Opcode::kConstant;
    case Opcode::kTuple:
      return std::all_of(op->operands().begin(), op->operands().end(), IsConstantLike);
    default:
      return false;
  }
}

bool AnyOperandConstant(const Instruction* instr) {
  for (const Instruction* op : instr->operands()) {
    if (op->opcode() == Opcode::kConstant) return true;
    if (op->opcode() == Opcode::kTuple && AnyOperandConstant(op)) return true;
  }
  return false;
}

class HloConstantFolding : public Pass {
 public:
  std::string_view name() const override { return "constant_folding"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    foldable_computation_.clear();
    const std::unordered_set<const Computation*> fusion_computation = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fusion_computation.count(c)) continue;
      // Folding only ever removes instructions that come before the current one in this order.
      for (Instruction* instr : c->MakePostOrder()) {
        if (IsDead(instr) || !AnyOperandConstant(instr)) continue;
        if (!std::all_of(instr->operands().begin(), instr->operands().end(), IsConstantLike)) {
          continue;
        }
        if (instr->opcode() == Opcode::kParameter || instr->opcode() == Opcode::kConstant ||
            instr->opcode() == Opcode::kTuple || !instr->shape().IsArray() ||
            !instr->shape().is_static() || !IsFoldable(instr)) {
          continue;
        }
        absl::StatusOr<ir::Literal> value = Evaluate(*instr);
        if (!value.ok()) continue;  // the evaluator cannot run it (elided constant, ...)
        auto constant = std::make_unique<Instruction>(Opcode::kConstant, instr->shape(),
                                                      module.UniqueInstructionName("constant"));
        if (!constant->shape().layout().has_value()) constant->mutable_shape().SetDefaultLayout();
        constant->literal = *std::move(value);
        Instruction* folded = c->AddInstruction(std::move(constant));
        instr->ReplaceAllUsesWith(folded);
        RemoveInstructionAndUnusedOperands(instr);
        changed = true;
      }
    }
    return changed;
  }

 private:
  bool IsFoldable(const Instruction* instr) {
    switch (instr->opcode()) {
      case Opcode::kBroadcast:
      case Opcode::kIota:
      case Opcode::kFft:
      case Opcode::kWhile:
      case Opcode::kCustomCall:
      case Opcode::kRng:
      case Opcode::kAfterAll:
        return false;
      default:
        break;
    }
    for (const Computation* callee : instr->called_computations()) {
      auto it = foldable_computation_.find(callee);
      if (it == foldable_computation_.end()) {
        bool ok = true;
        for (const Instruction* i : callee->MakePostOrder()) {
          if (!IsFoldable(i)) {
            ok = false;
            break;
          }
        }
        it = foldable_computation_.emplace(callee, ok).first;
      }
      if (!it->second) return false;
    }
    if (HasSideEffectRecursive(instr) || !instr->control_predecessors().empty() ||
        !instr->control_successors().empty()) {
      return false;
    }
    // As XLA: folding pad(broadcast, constant) costs much compile time for little gain.
    if (instr->opcode() == Opcode::kPad && instr->operand(0)->opcode() == Opcode::kBroadcast &&
        instr->operand(1)->opcode() == Opcode::kConstant) {
      return false;
    }
    if (instr->shape().IsArray()) {
      int64_t operand_elements = 0;
      for (const Instruction* op : instr->operands()) {
        if (op->shape().IsArray()) operand_elements += op->shape().ElementCount();
      }
      if (std::max(instr->shape().ElementCount(), operand_elements) > kMaxElements) return false;
    }
    return MultiplyAdds(instr) <= kMaxMultiplyAdds;
  }

  // Copies the constant operand tree of `op` into `into`.
  static Instruction* CloneOperandTree(const Instruction* op, Computation& into) {
    std::vector<Instruction*> operands;
    for (const Instruction* o : op->operands()) operands.push_back(CloneOperandTree(o, into));
    return CloneInstruction(*op, into, operands);
  }

  // Runs `instr` alone: a scratch module whose entry is the constant operands and a copy of
  // `instr` (still calling the original module's computations, which outlive the scratch module).
  static absl::StatusOr<ir::Literal> Evaluate(const Instruction& instr) {
    ir::Module scratch("constant_folding");
    Computation* entry = scratch.AddComputation(std::make_unique<Computation>("fold"));
    scratch.set_entry(entry);
    std::vector<Instruction*> operands;
    for (const Instruction* op : instr.operands()) {
      operands.push_back(CloneOperandTree(op, *entry));
    }
    entry->set_root(CloneInstruction(instr, *entry, operands));
    ir::EvalOptions options;
    // As XLA's default-level evaluator: no loop may run.
    options.max_loop_iterations = 0;
    return ir::Evaluate(scratch, {}, options);
  }

  std::unordered_map<const Computation*, bool> foldable_computation_;
};

}  // namespace

void RegisterHloConstantFolding(Registry& registry) {
  registry.Register({"constant_folding", "evaluates instructions whose operands are all constants",
                     [] { return std::make_unique<HloConstantFolding>(); }});
}

}  // namespace mltune::passes
