// convert-mover: XLA's ConvertMover. Moves widening converts down and narrowing converts up across
// ops that only move data (concatenate, pad, reshape, slice, transpose), so data movement happens
// on the narrower type:
//   op(convert_wide(x), constant) => convert_wide(op(x, convert_narrow(constant)))
//     when every converted operand comes from the same narrow type, each convert has one user,
//     and each constant operand survives the round trip to the narrow type;
//   convert_narrow(op(x, ...)) => op(convert_narrow(x), ...) when op has this one user.
// Converts are value-wise, so commuting them with data movement is exact. Sub-byte types are not
// moved (as XLA). The pass repeats until nothing moves; a move never undoes another.
#include <memory>
#include <unordered_set>
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
using ir::PrimitiveType;
using ir::Shape;

bool OpCommutesWithConvert(Opcode op) {
  switch (op) {
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReshape:
    case Opcode::kSlice:
    case Opcode::kTranspose:
      return true;
    default:
      return false;
  }
}

bool IsSubByte(PrimitiveType t) {
  return t != PrimitiveType::kPred && ir::IsArrayType(t) && ir::BitWidth(t) < 8;
}

bool IsMovable(const Instruction* i) {
  return OpCommutesWithConvert(i->opcode()) && i->shape().IsArray() && i->shape().is_static() &&
         i->control_predecessors().empty() && i->control_successors().empty();
}

bool IsPlainConvert(const Instruction* i) {
  return i->opcode() == Opcode::kConvert && i->control_predecessors().empty() &&
         i->control_successors().empty();
}

// `constant` converted to `type`, if converting it back gives the same bits.
std::optional<ir::Literal> LosslessConvert(const Instruction* constant, PrimitiveType type) {
  if (!constant->literal.has_value()) return std::nullopt;
  const ir::Literal& l = *constant->literal;
  if (ir::IsComplex(l.element_type()) && !ir::IsComplex(type)) return std::nullopt;
  absl::StatusOr<ir::Literal> narrow = ir::Literal::Create(Shape(type, l.shape().dimensions()));
  absl::StatusOr<ir::Literal> back = ir::Literal::Create(l.shape());
  if (!narrow.ok() || !back.ok()) return std::nullopt;
  // Integers and floats go through int64/double exactly for the types this pass moves.
  const bool via_int = ir::IsIntegral(type) || type == PrimitiveType::kPred;
  for (int64_t k = 0; k < l.element_count(); ++k) {
    if (ir::IsComplex(type)) {
      narrow->SetFromComplex(k, l.GetAsComplex(k));
      back->SetFromComplex(k, narrow->GetAsComplex(k));
    } else if (via_int && ir::IsIntegral(l.element_type())) {
      narrow->SetFromInt64(k, l.GetAsInt64(k));
      back->SetFromInt64(k, narrow->GetAsInt64(k));
    } else {
      narrow->SetFromDouble(k, l.GetAsDouble(k));
      back->SetFromDouble(k, narrow->GetAsDouble(k));
    }
  }
  if (!back->BitwiseEqual(l)) return std::nullopt;
  return *std::move(narrow);
}

// instr(convert_wide(x), ...) => convert_wide(instr(x, ...)).
bool MoveWideningDown(Computation& c, Instruction* instr) {
  if (!IsMovable(instr) || instr->operand_count() == 0) return false;
  const Instruction* convert = nullptr;
  for (const Instruction* op : instr->operands()) {
    if (IsPlainConvert(op)) {
      if (op->user_count() != 1) return false;
      if (convert == nullptr) convert = op;
      if (op->operand(0)->shape().element_type() != convert->operand(0)->shape().element_type()) {
        return false;
      }
    } else if (op->opcode() != Opcode::kConstant) {
      return false;
    }
  }
  if (convert == nullptr) return false;
  const PrimitiveType src = convert->operand(0)->shape().element_type();
  const PrimitiveType dst = convert->shape().element_type();
  if (ir::BitWidth(src) >= ir::BitWidth(dst) || IsSubByte(src)) return false;
  std::vector<Instruction*> operands;
  std::vector<ir::Literal> narrowed;
  for (const Instruction* op : instr->operands()) {
    if (op->opcode() != Opcode::kConstant) continue;
    std::optional<ir::Literal> n = LosslessConvert(op, src);
    if (!n.has_value()) return false;
    narrowed.push_back(*std::move(n));
  }
  size_t next = 0;
  for (Instruction* op : instr->operands()) {
    operands.push_back(op->opcode() == Opcode::kConstant
                           ? MakeConstant(c, std::move(narrowed[next++]))
                           : op->operand(0));
  }
  Instruction* narrow = CloneInstruction(*instr, c, operands, ir::OpcodeName(instr->opcode()));
  narrow->set_shape(Shape(src, instr->shape().dimensions()));
  Instruction* wide = MakeConvert(c, narrow, dst);
  instr->ReplaceAllUsesWith(wide);
  RemoveInstructionAndUnusedOperands(instr);
  return true;
}

// convert_narrow(instr(x, ...)) => instr(convert_narrow(x), ...).
bool MoveNarrowingUp(Computation& c, Instruction* convert) {
  if (!IsPlainConvert(convert)) return false;
  Instruction* instr = convert->operand(0);
  if (instr->user_count() != 1 || !IsMovable(instr) || c.root() == instr) return false;
  const PrimitiveType src = instr->shape().element_type();
  const PrimitiveType dst = convert->shape().element_type();
  if (ir::BitWidth(src) <= ir::BitWidth(dst) || IsSubByte(dst)) return false;
  for (const Instruction* op : instr->operands()) {
    if (op->opcode() == Opcode::kConstant && !LosslessConvert(op, dst).has_value()) return false;
  }
  std::vector<Instruction*> operands;
  for (Instruction* op : instr->operands()) operands.push_back(MakeConvert(c, op, dst));
  Instruction* narrow = CloneInstruction(*instr, c, operands, ir::OpcodeName(instr->opcode()));
  narrow->set_shape(Shape(dst, instr->shape().dimensions()));
  convert->ReplaceAllUsesWith(narrow);
  RemoveInstructionAndUnusedOperands(convert);
  return true;
}

bool MoveOnce(Computation& c) {
  bool changed = false;
  // Widening converts travel down: visit producers first. A move deletes only the visited
  // instruction and its dead operands, which come earlier.
  for (Instruction* i : c.MakePostOrder()) changed |= MoveWideningDown(c, i);
  // Narrowing converts travel up: visit users first. A move deletes the visited convert and the
  // op it was moved across, neither visited again.
  std::vector<Instruction*> order = c.MakePostOrder();
  std::unordered_set<Instruction*> gone;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* i = *it;
    if (gone.count(i)) continue;
    Instruction* across = i->opcode() == Opcode::kConvert ? i->operand(0) : nullptr;
    if (MoveNarrowingUp(c, i)) {
      changed = true;
      gone.insert(across);
    }
  }
  return changed;
}

class ConvertMover : public Pass {
 public:
  static constexpr int kMaxRounds = 64;

  std::string_view name() const override { return "convert-mover"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (int round = 0; round < kMaxRounds && MoveOnce(*c); ++round) changed = true;
    }
    return changed;
  }
};

}  // namespace

void RegisterConvertMover(Registry& registry) {
  registry.Register({"convert-mover",
                     "moves widening converts down and narrowing converts up across data movement",
                     [] { return std::make_unique<ConvertMover>(); }});
}

}  // namespace mltune::passes
