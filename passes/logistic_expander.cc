// logistic-expander: XLA's LogisticExpander. logistic(x) becomes 1 / (1 + exp(-x)), XLA's
// expansion. For f16, bf16 and the f8 types the expansion runs in f32 and converts back: those
// types compute each op in f32 and round the result, so expanding in the narrow type would round
// three more times than logistic does (an error of several bf16 ulps); in f32 the expansion
// rounds exactly as logistic does.
#include <memory>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

Instruction* One(Computation& c, PrimitiveType type, const std::vector<int64_t>& dims) {
  Instruction* one = MakeScalarConstant(c, type, 1.0);
  if (dims.empty()) return one;
  return MakeBroadcast(c, one, dims, {});
}

class LogisticExpander : public Pass {
 public:
  std::string_view name() const override { return "logistic-expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->MakePostOrder()) {
        if (i->opcode() != Opcode::kLogistic || !i->shape().IsArray() ||
            !i->control_predecessors().empty() || !i->control_successors().empty()) {
          continue;
        }
        const PrimitiveType type = i->shape().element_type();
        const bool narrow =
            type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || ir::IsF8(type);
        Instruction* x = i->operand(0);
        if (narrow) x = MakeConvert(*c, x, PrimitiveType::kF32);
        const PrimitiveType compute = x->shape().element_type();
        const std::vector<int64_t>& dims = x->shape().dimensions();
        Instruction* exp = MakeUnary(*c, Opcode::kExp, MakeUnary(*c, Opcode::kNegate, x));
        Instruction* denominator = MakeBinary(*c, Opcode::kAdd, One(*c, compute, dims), exp);
        Instruction* result = MakeBinary(*c, Opcode::kDivide, One(*c, compute, dims), denominator);
        if (narrow) result = MakeConvert(*c, result, type);
        i->ReplaceAllUsesWith(result);
        RemoveInstructionAndUnusedOperands(i);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterLogisticExpander(Registry& registry) {
  registry.Register({"logistic-expander", "expands logistic(x) into 1 / (1 + exp(-x))",
                     [] { return std::make_unique<LogisticExpander>(); }});
}

}  // namespace mltune::passes
