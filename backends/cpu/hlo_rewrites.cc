#include "backends/cpu/hlo_rewrites.h"

#include <vector>

#include "passes/hlo_builder.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

bool IsLowPrecision(PrimitiveType t) {
  return t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

// A dot or convolution of bf16/f16 the f32 GEMMs can compute: array operands and result, every
// type bf16, f16 or f32, at least one of them 16-bit.
bool RunsInF32(const Instruction& op) {
  if (op.opcode() != Opcode::kDot && op.opcode() != Opcode::kConvolution) return false;
  if (op.operand_count() != 2 || !op.shape().IsArray()) return false;
  bool low = false;
  for (const Shape* s : {&op.shape(), &op.operand(0)->shape(), &op.operand(1)->shape()}) {
    if (!s->IsArray()) return false;
    const PrimitiveType t = s->element_type();
    if (t != PrimitiveType::kF32 && !IsLowPrecision(t)) return false;
    low |= IsLowPrecision(t);
  }
  return low;
}

}  // namespace

int64_t UpcastLowPrecisionMatrixOps(ir::Module& module) {
  int64_t rewritten = 0;
  for (ir::Computation* comp : module.computations()) {
    for (Instruction* op : comp->MakePostOrder()) {
      if (!RunsInF32(*op)) continue;
      std::vector<Instruction*> operands;
      for (Instruction* x : op->operands()) {
        operands.push_back(x->shape().element_type() == PrimitiveType::kF32
                               ? x
                               : passes::MakeConvert(*comp, x, PrimitiveType::kF32));
      }
      Instruction* f32 = passes::CloneInstruction(*op, *comp, operands);
      f32->mutable_shape().set_element_type(PrimitiveType::kF32);
      const PrimitiveType t = op->shape().element_type();
      Instruction* result = t == PrimitiveType::kF32 ? f32 : passes::MakeConvert(*comp, f32, t);
      passes::ReplaceInstruction(op, result);
      ++rewritten;
    }
  }
  return rewritten;
}

}  // namespace mltune::backends::cpu
