// comparison-expander: XLA's ComparisonExpander. A float compare with type=TOTALORDER becomes a
// signed integer compare of keys built from the bits:
//   s = bitcast-convert(x) to sN;  key = s < 0 ? bitcast-convert(INT_MAX - bitcast(x) to uN) : s
// which orders -NaN < -inf < ... < -0 < +0 < ... < inf < NaN. As XLA, bf16 operands are first
// converted to f32 (exact). Only f16, bf16, f32 and f64 are expanded: the f8 types have no total
// order the evaluator and XLA agree on.
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
using ir::Shape;

std::pair<PrimitiveType, PrimitiveType> IntegerTypes(int bits) {
  switch (bits) {
    case 16:
      return {PrimitiveType::kS16, PrimitiveType::kU16};
    case 32:
      return {PrimitiveType::kS32, PrimitiveType::kU32};
    default:
      return {PrimitiveType::kS64, PrimitiveType::kU64};
  }
}

Instruction* Filled(Computation& c, ir::Literal scalar, const std::vector<int64_t>& dims) {
  Instruction* constant = MakeConstant(c, std::move(scalar));
  if (dims.empty()) return constant;
  return MakeBroadcast(c, constant, dims, {});
}

Instruction* Bitcast(Computation& c, Instruction* x, PrimitiveType type) {
  return AddInstr(c, Opcode::kBitcastConvert, Shape(type, x->shape().dimensions()), {x});
}

// The integer key of float `x` whose signed order is the float total order.
Instruction* TotalOrderKey(Computation& c, Instruction* x, Instruction* zero,
                           Instruction* max_value, PrimitiveType s, PrimitiveType u) {
  Instruction* as_signed = Bitcast(c, x, s);
  Instruction* as_unsigned = Bitcast(c, x, u);
  Instruction* flipped = Bitcast(c, MakeBinary(c, Opcode::kSubtract, max_value, as_unsigned), s);
  Instruction* negative = MakeCompare(c, ir::ComparisonDirection::kLt, as_signed, zero);
  Instruction* key =
      AddInstr(c, Opcode::kSelect, as_signed->shape(), {negative, flipped, as_signed});
  return key;
}

bool Matches(const Instruction* i) {
  if (i->opcode() != Opcode::kCompare ||
      i->comparison_type != ir::ComparisonType::kFloatTotalOrder ||
      !i->operand(0)->shape().is_static() || !i->comparison_direction.has_value() ||
      !i->shape().IsArray() || !i->control_predecessors().empty() ||
      !i->control_successors().empty()) {
    return false;
  }
  switch (i->operand(0)->shape().element_type()) {
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
      return true;
    default:
      return false;
  }
}

class ComparisonExpander : public Pass {
 public:
  std::string_view name() const override { return "comparison-expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->MakePostOrder()) {
        if (!Matches(i)) continue;
        Instruction* lhs = i->operand(0);
        Instruction* rhs = i->operand(1);
        if (lhs->shape().element_type() == PrimitiveType::kBF16) {
          lhs = MakeConvert(*c, lhs, PrimitiveType::kF32);
          rhs = MakeConvert(*c, rhs, PrimitiveType::kF32);
        }
        const auto [s, u] = IntegerTypes(ir::BitWidth(lhs->shape().element_type()));
        const std::vector<int64_t>& dims = lhs->shape().dimensions();
        ir::Literal zero = *ir::Literal::Create(Shape::Scalar(s));
        ir::Literal max = *ir::Literal::Create(Shape::Scalar(u));
        max.SetFromUint64(0, (uint64_t{1} << (ir::BitWidth(u) - 1)) - 1);
        Instruction* zero_value = Filled(*c, std::move(zero), dims);
        Instruction* max_value = Filled(*c, std::move(max), dims);
        Instruction* lhs_key = TotalOrderKey(*c, lhs, zero_value, max_value, s, u);
        Instruction* rhs_key = TotalOrderKey(*c, rhs, zero_value, max_value, s, u);
        Instruction* compare = MakeCompare(*c, *i->comparison_direction, lhs_key, rhs_key);
        compare->comparison_type = ir::ComparisonType::kSigned;
        i->ReplaceAllUsesWith(compare);
        RemoveInstructionAndUnusedOperands(i);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterComparisonExpander(Registry& registry) {
  registry.Register({"comparison-expander",
                     "expands total-order float compares into integer compares of the bits",
                     [] { return std::make_unique<ComparisonExpander>(); }});
}

}  // namespace mltune::passes
