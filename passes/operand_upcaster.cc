// operand_upcaster: XLA's OperandUpcaster. A dot or convolution whose result type is wider than
// what its operands would give (e.g. bf16 x bf16 -> f32, s8 x s8 -> s32) gets its operands
// converted to the result type, so the op computes in one type. The result is exactly what the
// op computed before: a dot or convolution with a wider result type converts its operands to that
// type first (XLA's preferred_element_type semantics).
#include <memory>
#include <optional>
#include <tuple>

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

// (overflow exponent, significand digits) of a float type.
std::pair<int, int> FloatRangeAndPrecision(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16:
      return {16, 11};
    case PrimitiveType::kBF16:
      return {128, 8};
    case PrimitiveType::kF32:
      return {128, 24};
    case PrimitiveType::kF64:
      return {1024, 53};
    case PrimitiveType::kF8E5M2:
      return {16, 3};
    case PrimitiveType::kF8E4M3FN:
      return {9, 4};
    case PrimitiveType::kF8E4M3B11FNUZ:
      return {5, 4};
    case PrimitiveType::kF8E5M2FNUZ:
      return {16, 3};
    case PrimitiveType::kF8E4M3FNUZ:
      return {8, 4};
    default:
      return {-1, -1};
  }
}

// XLA's primitive_util::HigherPrecisionType: complex over real, then float range, float precision,
// bit width, and signed over unsigned.
PrimitiveType HigherPrecisionType(PrimitiveType a, PrimitiveType b) {
  auto properties = [](PrimitiveType t) {
    PrimitiveType component = t;
    if (t == PrimitiveType::kC64) component = PrimitiveType::kF32;
    if (t == PrimitiveType::kC128) component = PrimitiveType::kF64;
    const auto [range, precision] = FloatRangeAndPrecision(component);
    return std::make_tuple(ir::IsComplex(t), range, precision, ir::BitWidth(component),
                           ir::IsSignedIntegral(component));
  };
  return properties(b) > properties(a) ? b : a;
}

bool Matches(const Instruction* i) {
  if ((i->opcode() != Opcode::kDot && i->opcode() != Opcode::kConvolution) ||
      i->operand_count() != 2 || !i->shape().IsArray() || !i->control_predecessors().empty() ||
      !i->control_successors().empty()) {
    return false;
  }
  const PrimitiveType lhs = i->operand(0)->shape().element_type();
  const PrimitiveType rhs = i->operand(1)->shape().element_type();
  const PrimitiveType result = i->shape().element_type();
  const PrimitiveType inferred = lhs == rhs ? lhs : HigherPrecisionType(lhs, rhs);
  if (result == inferred && lhs == inferred && rhs == inferred) return false;
  return HigherPrecisionType(inferred, result) == result;
}

class OperandUpcaster : public Pass {
 public:
  std::string_view name() const override { return "operand_upcaster"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->MakePostOrder()) {
        if (!Matches(i)) continue;
        for (int64_t k = 0; k < 2; ++k) {
          Instruction* op = i->operand(k);
          if (op->shape().element_type() == i->shape().element_type()) continue;
          i->ReplaceOperand(k, MakeConvert(*c, op, i->shape().element_type()));
        }
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterOperandUpcaster(Registry& registry) {
  registry.Register({"operand_upcaster", "converts dot/convolution operands to a wider result type",
                     [] { return std::make_unique<OperandUpcaster>(); }});
}

}  // namespace mltune::passes
