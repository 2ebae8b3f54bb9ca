#include "ir/hlo_builder.h"

#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ir/fingerprint.h"
#include "ir/module.h"

namespace mltune::ir {

Instruction* AddInstr(ir::Computation& c, Opcode opcode, Shape shape,
                      const std::vector<Instruction*>& operands, std::string_view name_hint) {
  std::string_view hint = name_hint.empty() ? ir::OpcodeName(opcode) : name_hint;
  std::string name =
      c.parent() != nullptr ? c.parent()->UniqueInstructionName(hint) : std::string(hint);
  auto instr = std::make_unique<Instruction>(opcode, std::move(shape), std::move(name));
  for (Instruction* op : operands) instr->AppendOperand(op);
  return c.AddInstruction(std::move(instr));
}

Instruction* MakeConstant(ir::Computation& c, ir::Literal literal) {
  Shape shape = literal.shape();
  if (shape.IsArray() && !shape.layout().has_value()) shape.SetDefaultLayout();
  Instruction* i = AddInstr(c, Opcode::kConstant, shape, {});
  i->literal = std::move(literal);
  return i;
}

Instruction* MakeScalarConstant(ir::Computation& c, ir::PrimitiveType type, double value) {
  ir::Literal l = *ir::Literal::Create(Shape::Scalar(type));
  l.SetFromDouble(0, value);
  return MakeConstant(c, std::move(l));
}

Instruction* MakeBroadcast(ir::Computation& c, Instruction* operand,
                           const std::vector<int64_t>& dims, const std::vector<int64_t>& mapping) {
  Instruction* i =
      AddInstr(c, Opcode::kBroadcast, Shape(operand->shape().element_type(), dims), {operand});
  i->dimensions = mapping;
  return i;
}

Instruction* MakeReshape(ir::Computation& c, Instruction* operand,
                         const std::vector<int64_t>& dims) {
  return AddInstr(c, Opcode::kReshape, Shape(operand->shape().element_type(), dims), {operand});
}

Instruction* MakeTranspose(ir::Computation& c, Instruction* operand,
                           const std::vector<int64_t>& permutation) {
  std::vector<int64_t> dims;
  for (int64_t p : permutation) dims.push_back(operand->shape().dimensions(p));
  Instruction* i =
      AddInstr(c, Opcode::kTranspose, Shape(operand->shape().element_type(), dims), {operand});
  i->dimensions = permutation;
  return i;
}

Instruction* MakeConvert(ir::Computation& c, Instruction* operand, ir::PrimitiveType type) {
  return AddInstr(c, Opcode::kConvert, Shape(type, operand->shape().dimensions()), {operand});
}

Instruction* MakeBinary(ir::Computation& c, Opcode opcode, Instruction* lhs, Instruction* rhs) {
  Shape shape(lhs->shape().element_type(), lhs->shape().dimensions());
  return AddInstr(c, opcode, std::move(shape), {lhs, rhs});
}

Instruction* MakeUnary(ir::Computation& c, Opcode opcode, Instruction* operand) {
  Shape shape(operand->shape().element_type(), operand->shape().dimensions());
  return AddInstr(c, opcode, std::move(shape), {operand});
}

Instruction* MakeCompare(ir::Computation& c, ir::ComparisonDirection direction, Instruction* lhs,
                         Instruction* rhs) {
  Instruction* i = AddInstr(c, Opcode::kCompare,
                            Shape(ir::PrimitiveType::kPred, lhs->shape().dimensions()), {lhs, rhs});
  i->comparison_direction = direction;
  return i;
}

Instruction* MakeGetTupleElement(ir::Computation& c, Instruction* tuple, int64_t index) {
  Instruction* i =
      AddInstr(c, Opcode::kGetTupleElement, tuple->shape().tuple_shapes(index), {tuple});
  i->tuple_index = index;
  return i;
}

Instruction* MakeTuple(ir::Computation& c, const std::vector<Instruction*>& elements) {
  std::vector<Shape> shapes;
  for (Instruction* e : elements) shapes.push_back(e->shape());
  return AddInstr(c, Opcode::kTuple, Shape::Tuple(std::move(shapes)), elements);
}

Instruction* MakeSlice(ir::Computation& c, Instruction* operand,
                       const std::vector<ir::SliceDim>& slice) {
  std::vector<int64_t> dims;
  for (const ir::SliceDim& s : slice) {
    dims.push_back(s.limit <= s.start ? 0 : (s.limit - s.start + s.stride - 1) / s.stride);
  }
  Instruction* i =
      AddInstr(c, Opcode::kSlice, Shape(operand->shape().element_type(), dims), {operand});
  i->slice = slice;
  return i;
}

std::unordered_set<const ir::Computation*> FusionComputations(const ir::Module& module) {
  std::unordered_set<const ir::Computation*> fused;
  for (const ir::Computation* c : module.computations()) {
    for (const Instruction* i : c->instructions()) {
      if (i->opcode() != Opcode::kFusion) continue;
      for (const ir::Computation* callee : i->called_computations()) fused.insert(callee);
    }
  }
  return fused;
}

bool ReplaceInstruction(Instruction* old, Instruction* replacement) {
  old->ReplaceAllUsesWith(replacement);
  if (old->user_count() == 0 && !old->HasSideEffect() && old->parent()->root() != old &&
      old->control_successors().empty()) {
    (void)old->parent()->RemoveInstruction(old);
  }
  return true;
}

std::optional<double> ScalarConstantValue(const Instruction* instr) {
  if (instr->opcode() == Opcode::kBroadcast) instr = instr->operand(0);
  if (instr->opcode() != Opcode::kConstant || !instr->literal.has_value()) return std::nullopt;
  const ir::Literal& l = *instr->literal;
  if (!l.shape().IsArray() || l.element_count() == 0) return std::nullopt;
  if (ir::IsComplex(l.element_type())) return std::nullopt;
  // A splat array constant counts as a scalar too; compare element bytes, so NaN payloads and
  // -0.0 are matched exactly.
  const int64_t size = ir::StorageBytes(l.element_type());
  const uint8_t* data = l.untyped_data();
  for (int64_t k = 1; k < l.element_count(); ++k) {
    if (std::memcmp(data, data + k * size, static_cast<size_t>(size)) != 0) return std::nullopt;
  }
  return l.GetAsDouble(0);
}

bool IsConstantWithValue(const Instruction* instr, double value) {
  std::optional<double> v = ScalarConstantValue(instr);
  return v.has_value() && *v == value;
}

namespace {

bool ComputationHasSideEffectMemo(const ir::Computation* c,
                                  std::unordered_map<const ir::Computation*, bool>& memo);

bool InstructionHasSideEffectMemo(const Instruction* instr,
                                  std::unordered_map<const ir::Computation*, bool>& memo) {
  if (instr->HasSideEffect()) return true;
  for (const ir::Computation* callee : instr->called_computations()) {
    if (callee != nullptr && ComputationHasSideEffectMemo(callee, memo)) return true;
  }
  return false;
}

bool ComputationHasSideEffectMemo(const ir::Computation* c,
                                  std::unordered_map<const ir::Computation*, bool>& memo) {
  auto it = memo.find(c);
  if (it != memo.end()) return it->second;
  memo[c] = false;  // the call graph is acyclic; this only guards malformed input
  bool effect = false;
  for (const Instruction* i : c->instructions()) {
    if (InstructionHasSideEffectMemo(i, memo)) {
      effect = true;
      break;
    }
  }
  memo[c] = effect;
  return effect;
}

}  // namespace

bool HasSideEffectRecursive(const Instruction* instr) {
  std::unordered_map<const ir::Computation*, bool> memo;
  return InstructionHasSideEffectMemo(instr, memo);
}

bool ComputationHasSideEffect(const ir::Computation* c) {
  std::unordered_map<const ir::Computation*, bool> memo;
  return ComputationHasSideEffectMemo(c, memo);
}

bool IsDead(const Instruction* instr) {
  return instr->user_count() == 0 && instr->parent() != nullptr && instr->parent()->root() != instr;
}

bool IsSafelyRemovable(const Instruction* instr) {
  return IsDead(instr) && instr->opcode() != Opcode::kParameter &&
         instr->control_predecessors().empty() && instr->control_successors().empty() &&
         !HasSideEffectRecursive(instr);
}

int64_t RemoveInstructionAndUnusedOperands(Instruction* instr) {
  int64_t removed = 0;
  std::vector<Instruction*> worklist = {instr};
  std::unordered_set<Instruction*> gone;
  while (!worklist.empty()) {
    Instruction* i = worklist.back();
    worklist.pop_back();
    if (gone.count(i) || !IsSafelyRemovable(i)) continue;
    std::vector<Instruction*> operands = i->operands();
    if (!i->parent()->RemoveInstruction(i).ok()) continue;
    gone.insert(i);
    ++removed;
    for (Instruction* op : operands) {
      if (!gone.count(op)) worklist.push_back(op);
    }
  }
  return removed;
}

Instruction* CloneInstruction(const Instruction& src, ir::Computation& into,
                              const std::vector<Instruction*>& operands,
                              std::string_view name_hint) {
  std::string_view hint = name_hint.empty() ? std::string_view(src.name()) : name_hint;
  std::string name =
      into.parent() != nullptr ? into.parent()->UniqueInstructionName(hint) : std::string(hint);
  auto instr = std::make_unique<Instruction>(src.opcode(), src.shape(), std::move(name));
  // Attributes first: AddInstruction files parameters under their parameter_number.
  static_cast<ir::InstructionAttributes&>(*instr) =
      static_cast<const ir::InstructionAttributes&>(src);
  instr->mutable_called_computations() = src.called_computations();
  for (Instruction* op : operands) instr->AppendOperand(op);
  return into.AddInstruction(std::move(instr));
}

std::string UniqueComputationName(const ir::Module& module, std::string_view base) {
  std::string candidate(base);
  for (int64_t n = 1; module.FindComputation(candidate) != nullptr; ++n) {
    candidate = absl::StrCat(std::string(base), ".", n);
  }
  return candidate;
}

ir::Computation* CloneComputation(const ir::Computation& c, ir::Module& module,
                                  std::string_view suffix) {
  auto owned = std::make_unique<ir::Computation>(
      UniqueComputationName(module, absl::StrCat(c.name(), ".", std::string(suffix))));
  ir::Computation* clone = module.AddComputation(std::move(owned));
  std::unordered_map<const Instruction*, Instruction*> map;
  for (Instruction* i : c.MakePostOrder()) {
    std::vector<Instruction*> operands;
    for (Instruction* op : i->operands()) operands.push_back(map.at(op));
    map[i] = CloneInstruction(*i, *clone, operands);
  }
  for (Instruction* i : c.instructions()) {
    for (Instruction* succ : i->control_successors()) {
      map.at(i)->AddControlDependencyTo(map.at(succ));
    }
  }
  if (c.root() != nullptr) clone->set_root(map.at(c.root()));
  return clone;
}

bool ComputationsEqual(const ir::Computation& a, const ir::Computation& b,
                       const ComputationEq& callee_eq) {
  if (&a == &b) return true;
  if (a.parameter_count() != b.parameter_count() ||
      a.instruction_count() != b.instruction_count() || a.root() == nullptr ||
      b.root() == nullptr) {
    return false;
  }
  auto callees_equal = [&](const ir::Computation* x, const ir::Computation* y) {
    if (x == y) return true;
    if (callee_eq) return callee_eq(x, y);
    return x != nullptr && y != nullptr && ComputationsEqual(*x, *y);
  };
  std::unordered_map<const Instruction*, const Instruction*> a_to_b, b_to_a;
  std::vector<std::pair<const Instruction*, const Instruction*>> stack = {{a.root(), b.root()}};
  // Parameters pair up by number, so unused ones are matched too.
  for (int64_t k = 0; k < a.parameter_count(); ++k) {
    if (a.parameter(k) == nullptr || b.parameter(k) == nullptr) return false;
    stack.push_back({a.parameter(k), b.parameter(k)});
  }
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    auto it = a_to_b.find(x);
    if (it != a_to_b.end()) {
      if (it->second != y) return false;
      continue;
    }
    if (b_to_a.count(y)) return false;
    if (x->opcode() != y->opcode() || !(x->shape() == y->shape()) ||
        x->operand_count() != y->operand_count() ||
        x->called_computations().size() != y->called_computations().size() ||
        !x->control_predecessors().empty() || !y->control_predecessors().empty() ||
        ir::InstructionAttributesKey(*x) != ir::InstructionAttributesKey(*y)) {
      return false;
    }
    for (size_t k = 0; k < x->called_computations().size(); ++k) {
      if (!callees_equal(x->called_computations()[k], y->called_computations()[k])) return false;
    }
    a_to_b[x] = y;
    b_to_a[y] = x;
    for (int64_t k = 0; k < x->operand_count(); ++k) {
      stack.push_back({x->operand(k), y->operand(k)});
    }
  }
  // Other instructions the root does not reach (side-effecting or dead ones) are not compared, so
  // such computations are only equal to themselves.
  return static_cast<int64_t>(a_to_b.size()) == a.instruction_count();
}

namespace {

// Significand digits (implicit bit included), largest and smallest normal exponent, and which
// special values a float type has.
struct FloatFormat {
  int digits, max_exp, min_exp;
  bool inf, nan, negative_zero;
};

std::optional<FloatFormat> FormatOf(ir::PrimitiveType t) {
  using ir::PrimitiveType;
  switch (t) {
    case PrimitiveType::kF16:
      return FloatFormat{11, 15, -14, true, true, true};
    case PrimitiveType::kBF16:
      return FloatFormat{8, 127, -126, true, true, true};
    case PrimitiveType::kF32:
      return FloatFormat{24, 127, -126, true, true, true};
    case PrimitiveType::kF64:
      return FloatFormat{53, 1023, -1022, true, true, true};
    case PrimitiveType::kF8E5M2:
      return FloatFormat{3, 15, -14, true, true, true};
    case PrimitiveType::kF8E4M3FN:
      return FloatFormat{4, 8, -6, false, true, true};
    case PrimitiveType::kF8E4M3B11FNUZ:
      return FloatFormat{4, 4, -10, false, true, false};
    case PrimitiveType::kF8E5M2FNUZ:
      return FloatFormat{3, 15, -15, false, true, false};
    case PrimitiveType::kF8E4M3FNUZ:
      return FloatFormat{4, 7, -7, false, true, false};
    default:
      return std::nullopt;
  }
}

ir::PrimitiveType ComplexComponent(ir::PrimitiveType t) {
  return t == ir::PrimitiveType::kC64 ? ir::PrimitiveType::kF32 : ir::PrimitiveType::kF64;
}

}  // namespace

bool CastPreservesValues(ir::PrimitiveType from, ir::PrimitiveType to) {
  using ir::PrimitiveType;
  if (from == to) return ir::IsArrayType(from);
  if (!ir::IsArrayType(from) || !ir::IsArrayType(to)) return false;
  if (from == PrimitiveType::kPred) return true;
  if (to == PrimitiveType::kPred) return false;
  if (ir::IsComplex(to)) {
    const PrimitiveType component = ComplexComponent(to);
    return CastPreservesValues(ir::IsComplex(from) ? ComplexComponent(from) : from, component);
  }
  if (ir::IsComplex(from)) return false;
  if (ir::IsIntegral(from) && ir::IsIntegral(to)) {
    if (ir::IsSignedIntegral(from)) {
      return ir::IsSignedIntegral(to) && ir::BitWidth(from) <= ir::BitWidth(to);
    }
    return ir::IsUnsignedIntegral(to) ? ir::BitWidth(from) <= ir::BitWidth(to)
                                      : ir::BitWidth(from) < ir::BitWidth(to);
  }
  const std::optional<FloatFormat> t = FormatOf(to);
  if (!t.has_value()) return false;
  if (ir::IsIntegral(from)) {
    const int value_bits = ir::BitWidth(from) - (ir::IsSignedIntegral(from) ? 1 : 0);
    return value_bits <= t->digits && value_bits <= t->max_exp;
  }
  const std::optional<FloatFormat> f = FormatOf(from);
  if (!f.has_value()) return false;
  return t->digits >= f->digits && t->max_exp >= f->max_exp && t->min_exp <= f->min_exp &&
         t->min_exp - t->digits <= f->min_exp - f->digits && (!f->inf || t->inf) &&
         (!f->nan || t->nan) && (!f->negative_zero || t->negative_zero);
}

}  // namespace mltune::ir
