// algsimp: XLA's AlgebraicSimplifier (layout-insensitive mode). Rewrites each instruction into a
// cheaper equivalent: arithmetic identities, convert/compare/select simplifications and constant
// canonicalisation here; broadcast, reshape, transpose, slice, concatenate, pad, dynamic-slice,
// reduce, dot, copy and tuple rewrites in algsimp_shapes.cc.
//
// Only exact rewrites are made (bit-exact for integers and predicates, value-exact for floats),
// except where XLA deliberately maps -0.0 to +0.0, noted at the rewrite. Rewrites XLA makes that
// change float results (x*0, x-x, A/C for constants C that are not powers of two, log(exp(x)),
// reduce-of-reduce reassociation, ...) are left out. Unlike XLA's single visit per pass run, each
// computation is revisited until nothing changes, so one run reaches a fixed point (XLA runs
// algsimp inside HloPassFix to the same effect).
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_set>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/algsimp_internal.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace algsimp {

using ir::Computation;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

bool ReplaceWith(Instruction* old, Instruction* replacement) {
  const Shape& a = old->shape();
  const Shape& b = replacement->shape();
  if (old == replacement || a.element_type() != b.element_type() || !a.Compatible(b)) {
    // A replacement built for nothing must not linger (pre-existing ones still have users).
    RemoveInstructionAndUnusedOperands(replacement);
    return false;
  }
  old->ReplaceAllUsesWith(replacement);
  RemoveInstructionAndUnusedOperands(old);
  return true;
}

std::optional<Literal> SplatValue(const Instruction* instr) {
  if (instr->opcode() == Opcode::kBroadcast) instr = instr->operand(0);
  if (instr->opcode() != Opcode::kConstant || !instr->literal.has_value()) return std::nullopt;
  const Literal& l = *instr->literal;
  if (!l.shape().IsArray() || l.element_count() == 0) return std::nullopt;
  const size_t size = static_cast<size_t>(ir::StorageBytes(l.element_type()));
  const uint8_t* data = l.untyped_data();
  for (int64_t k = 1; k < l.element_count(); ++k) {
    if (std::memcmp(data, data + k * size, size) != 0) return std::nullopt;
  }
  absl::StatusOr<Literal> scalar = Literal::Create(Shape::Scalar(l.element_type()));
  if (!scalar.ok()) return std::nullopt;
  std::memcpy(scalar->untyped_data(), data, size);
  return *std::move(scalar);
}

bool IsAll(const Instruction* instr, double value) {
  std::optional<Literal> v = SplatValue(instr);
  if (!v.has_value()) return false;
  const PrimitiveType t = v->element_type();
  if (ir::IsComplex(t)) return v->GetAsComplex(0) == std::complex<double>(value, 0);
  if (ir::IsFloatingPoint(t)) return v->GetAsDouble(0) == value;
  if (ir::IsUnsignedIntegral(t)) return value >= 0 && v->GetAsUint64(0) == value;
  return static_cast<double>(v->GetAsInt64(0)) == value;
}

bool IsAllOnes(const Instruction* instr) {
  std::optional<Literal> v = SplatValue(instr);
  if (!v.has_value()) return false;
  const PrimitiveType t = v->element_type();
  if (t == PrimitiveType::kPred || ir::IsSignedIntegral(t))
    return v->GetAsInt64(0) == -1 || (t == PrimitiveType::kPred && v->GetAsInt64(0) == 1);
  if (ir::IsUnsignedIntegral(t)) {
    const int bits = ir::BitWidth(t);
    const uint64_t all = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return v->GetAsUint64(0) == all;
  }
  return false;
}

bool IsScalarBroadcast(const Instruction* instr) {
  return instr->opcode() == Opcode::kBroadcast && instr->operand(0)->shape().IsScalar();
}

Instruction* MakeFilled(Computation& c, PrimitiveType type, const std::vector<int64_t>& dims,
                        double value) {
  return BroadcastScalar(c, MakeScalarConstant(c, type, value), dims);
}

Instruction* BroadcastScalar(Computation& c, Instruction* scalar,
                             const std::vector<int64_t>& dims) {
  if (dims.empty()) return scalar;
  return MakeBroadcast(c, scalar, dims, {});
}

// A scalar literal of `type` holding the smallest (`lowest`) or largest value, -inf/+inf for
// floats with infinities; nullopt for types without such an identity.
static std::optional<Literal> Extreme(PrimitiveType type, bool lowest) {
  absl::StatusOr<Literal> l = Literal::Create(Shape::Scalar(type));
  if (!l.ok()) return std::nullopt;
  switch (type) {
    case PrimitiveType::kPred:
      l->SetFromInt64(0, lowest ? 0 : 1);
      return *std::move(l);
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kF8E5M2:
      l->SetFromDouble(0, lowest ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity());
      return *std::move(l);
    default:
      break;
  }
  if (!ir::IsIntegral(type)) return std::nullopt;
  const int bits = ir::BitWidth(type);
  if (ir::IsSignedIntegral(type)) {
    const int64_t max =
        bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    l->SetFromInt64(0, lowest ? -max - 1 : max);
  } else {
    l->SetFromUint64(0, lowest ? 0 : (bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1));
  }
  return *std::move(l);
}

bool IsAllExtreme(const Instruction* instr, bool lowest) {
  std::optional<Literal> v = SplatValue(instr);
  if (!v.has_value()) return false;
  std::optional<Literal> e = Extreme(instr->shape().element_type(), lowest);
  return e.has_value() && v->BitwiseEqual(*e);
}

namespace {

bool IsFloat(const Instruction* i) { return ir::IsFloatingPoint(i->shape().element_type()); }
bool IsIntOrPred(const Instruction* i) {
  const PrimitiveType t = i->shape().element_type();
  return ir::IsIntegral(t) || t == PrimitiveType::kPred;
}

// Operands have the result's dimensions (select with a scalar predicate and clamp with scalar
// bounds do not), so the op can be re-applied to any consistently reshaped operands.
bool IsSameShapeElementwise(const Instruction* i) {
  if (!ir::IsElementwise(i->opcode()) || i->HasSideEffect() || i->operand_count() == 0 ||
      i->opcode() == Opcode::kStochasticConvert) {
    return false;
  }
  for (const Instruction* op : i->operands()) {
    if (!op->shape().IsArray() || op->shape().dimensions() != i->shape().dimensions()) {
      return false;
    }
  }
  return true;
}

// op(broadcast(x), broadcast(y), broadcast(scalar)) => broadcast(op(x, y, broadcast'(scalar)))
// when the non-scalar broadcasts agree (XLA's TryToSinkBroadcastAfterOpWithUniqueNonScalarOperand
// seen from the user). Copies are skipped, as XLA does, so layout changes stay where they are.
bool SinkBroadcasts(Instruction* i) {
  if (!IsSameShapeElementwise(i) || i->opcode() == Opcode::kCopy || i->shape().IsScalar()) {
    return false;
  }
  const Instruction* ref = nullptr;
  for (const Instruction* op : i->operands()) {
    if (op->opcode() != Opcode::kBroadcast) return false;
    if (!IsScalarBroadcast(op) && ref == nullptr) ref = op;
  }
  if (ref == nullptr) ref = i->operand(0);
  const std::vector<int64_t>& small = ref->operand(0)->shape().dimensions();
  for (const Instruction* op : i->operands()) {
    if (IsScalarBroadcast(op)) continue;
    if (op->operand(0)->shape().dimensions() != small || op->dimensions != ref->dimensions) {
      return false;
    }
  }
  Computation& c = *i->parent();
  std::vector<Instruction*> operands;
  for (Instruction* op : i->operands()) {
    if (IsScalarBroadcast(op) && !small.empty()) {
      operands.push_back(MakeBroadcast(c, op->operand(0), small, {}));
    } else {
      operands.push_back(op->operand(0));
    }
  }
  Instruction* inner = CloneInstruction(*i, c, operands, ir::OpcodeName(i->opcode()));
  inner->set_shape(Shape(i->shape().element_type(), small));
  Instruction* outer = MakeBroadcast(c, inner, i->shape().dimensions(), ref->dimensions);
  return ReplaceWith(i, outer);
}

bool IsConstantLike(const Instruction* i) {
  return i->opcode() == Opcode::kConstant ||
         (i->opcode() == Opcode::kBroadcast && i->operand(0)->opcode() == Opcode::kConstant);
}

bool IsCommutative(Opcode op) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      return true;
    default:
      return false;
  }
}

// -v for every element of `l` (exact: integers wrap, floats flip the sign).
Literal Negated(const Literal& l) {
  Literal out = *Literal::Create(l.shape());
  const PrimitiveType t = l.element_type();
  for (int64_t k = 0; k < l.element_count(); ++k) {
    if (ir::IsComplex(t)) {
      out.SetFromComplex(k, -l.GetAsComplex(k));
    } else if (ir::IsFloatingPoint(t)) {
      out.SetFromDouble(k, -l.GetAsDouble(k));
    } else {
      out.SetFromUint64(k, uint64_t{0} - l.GetAsUint64(k));
    }
  }
  return out;
}

// `c` (a constant or broadcast of one) with its constant negated.
Instruction* NegatedConstant(Computation& comp, const Instruction* c) {
  const Instruction* constant = c->opcode() == Opcode::kBroadcast ? c->operand(0) : c;
  Instruction* negated = MakeConstant(comp, Negated(*constant->literal));
  if (c->opcode() != Opcode::kBroadcast) return negated;
  return MakeBroadcast(comp, negated, c->shape().dimensions(), c->dimensions);
}

// Const op A => A op Const for commutative ops, so equal expressions look alike (XLA puts
// constants on the right).
bool CanonicalizeConstantToRight(Instruction* i) {
  if (!IsCommutative(i->opcode()) || i->operand(0)->opcode() != Opcode::kConstant ||
      IsConstantLike(i->operand(1))) {
    return false;
  }
  return ReplaceWith(i, CloneInstruction(*i, *i->parent(), {i->operand(1), i->operand(0)},
                                         ir::OpcodeName(i->opcode())));
}

// (A op C1) op C2 => A op (C1 op C2) for integer add and multiply, whose wrapping arithmetic is
// associative (for floats it is not, so XLA's float reassociation is left out).
bool ReassociateIntegerConstants(Instruction* i) {
  if ((i->opcode() != Opcode::kAdd && i->opcode() != Opcode::kMultiply) ||
      !ir::IsIntegral(i->shape().element_type())) {
    return false;
  }
  Instruction* inner = i->operand(0);
  if (inner->opcode() != i->opcode() || IsConstantLike(inner->operand(0))) return false;
  std::optional<Literal> c1 = SplatValue(inner->operand(1));
  std::optional<Literal> c2 = SplatValue(i->operand(1));
  if (!c1.has_value() || !c2.has_value() || !IsConstantLike(inner->operand(1))) return false;
  const uint64_t a = c1->GetAsUint64(0), b = c2->GetAsUint64(0);
  Literal combined = *Literal::Create(c1->shape());
  combined.SetFromUint64(0, i->opcode() == Opcode::kAdd ? a + b : a * b);
  Computation& c = *i->parent();
  Instruction* constant =
      BroadcastScalar(c, MakeConstant(c, std::move(combined)), i->shape().dimensions());
  return ReplaceWith(
      i, CloneInstruction(*i, c, {inner->operand(0), constant}, ir::OpcodeName(i->opcode())));
}

// 2^k for integer k, so that A / C == A * (1 / C) exactly.
bool IsPowerOfTwo(double v) {
  int exp = 0;
  return std::isfinite(v) && v != 0 && std::fabs(std::frexp(v, &exp)) == 0.5;
}

bool HandleDivide(Instruction* i) {
  Instruction* a = i->operand(0);
  Instruction* b = i->operand(1);
  if (ir::IsComplex(i->shape().element_type())) return false;
  if (IsAll(b, 1)) return ReplaceWith(i, a);
  // A / C => A * (1/C) (XLA inverts any float constant; only powers of two invert exactly).
  if (!IsFloat(i) || a->opcode() == Opcode::kConstant) return false;
  std::optional<Literal> c = SplatValue(b);
  if (!c.has_value() || !IsPowerOfTwo(c->GetAsDouble(0))) return false;
  absl::StatusOr<Literal> inverse = Literal::Create(c->shape());
  if (!inverse.ok()) return false;
  inverse->SetFromDouble(0, 1.0 / c->GetAsDouble(0));
  if (inverse->GetAsDouble(0) * c->GetAsDouble(0) != 1.0) return false;  // out of range
  Computation& comp = *i->parent();
  Instruction* inv =
      BroadcastScalar(comp, MakeConstant(comp, *std::move(inverse)), i->shape().dimensions());
  return ReplaceWith(i, MakeBinary(comp, Opcode::kMultiply, a, inv));
}

bool HandleBinaryIdentity(Instruction* i) {
  Instruction* a = i->operand(0);
  Instruction* b = i->operand(1);
  Computation& c = *i->parent();
  switch (i->opcode()) {
    case Opcode::kAdd:
      // A + 0 => A. For floats this keeps -0.0 where -0.0 + 0.0 gives +0.0: numerically equal,
      // and XLA makes the same rewrite.
      if (IsAll(b, 0)) return ReplaceWith(i, a);
      if (IsAll(a, 0)) return ReplaceWith(i, b);
      return false;
    case Opcode::kSubtract:
      if (IsAll(b, 0)) return ReplaceWith(i, a);
      // A - C => A + (-C), exact (XLA's canonical form, which reassociation then sees).
      if (!IsConstantLike(a) && IsConstantLike(b) &&
          (b->opcode() == Opcode::kBroadcast ? b->operand(0) : b)->literal.has_value()) {
        return ReplaceWith(i, MakeBinary(c, Opcode::kAdd, a, NegatedConstant(c, b)));
      }
      return false;
    case Opcode::kMultiply:
      // Complex A * 1 is not exact when a component of A is infinite.
      if (!ir::IsComplex(i->shape().element_type())) {
        if (IsAll(b, 1)) return ReplaceWith(i, a);
        if (IsAll(a, 1)) return ReplaceWith(i, b);
      }
      // A * 0 => 0 only for integers: for floats NaN * 0 and inf * 0 are NaN.
      if (IsIntOrPred(i) && IsAll(b, 0)) return ReplaceWith(i, b);
      if (IsIntOrPred(i) && IsAll(a, 0)) return ReplaceWith(i, a);
      return false;
    case Opcode::kDivide:
      return HandleDivide(i);
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      if (a == b) return ReplaceWith(i, a);
      // max(A, lowest) => A and min(A, highest) => A (NaN still propagates from A).
      const bool lowest = i->opcode() == Opcode::kMaximum;
      if (IsAllExtreme(b, lowest)) return ReplaceWith(i, a);
      if (IsAllExtreme(a, lowest)) return ReplaceWith(i, b);
      return false;
    }
    case Opcode::kAnd:
      if (a == b) return ReplaceWith(i, a);
      if (IsAllOnes(b)) return ReplaceWith(i, a);
      if (IsAllOnes(a)) return ReplaceWith(i, b);
      if (IsAll(b, 0)) return ReplaceWith(i, b);
      if (IsAll(a, 0)) return ReplaceWith(i, a);
      return false;
    case Opcode::kOr:
      if (a == b) return ReplaceWith(i, a);
      if (IsAll(b, 0)) return ReplaceWith(i, a);
      if (IsAll(a, 0)) return ReplaceWith(i, b);
      if (IsAllOnes(b)) return ReplaceWith(i, b);
      if (IsAllOnes(a)) return ReplaceWith(i, a);
      return false;
    case Opcode::kXor:
      if (IsAll(b, 0)) return ReplaceWith(i, a);
      if (IsAll(a, 0)) return ReplaceWith(i, b);
      return false;
    case Opcode::kPower:
      if (ir::IsComplex(i->shape().element_type())) return false;
      // pow(A, 0) => 1 (also for NaN A), pow(A, 1) => A, pow(A, 2) => A * A.
      if (IsAll(b, 0)) {
        return ReplaceWith(i, MakeFilled(c, i->shape().element_type(), i->shape().dimensions(), 1));
      }
      if (IsAll(b, 1)) return ReplaceWith(i, a);
      if (IsAll(b, 2)) return ReplaceWith(i, MakeBinary(c, Opcode::kMultiply, a, a));
      return false;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      if (IsAll(b, 0)) return ReplaceWith(i, a);
      return false;
    case Opcode::kCompare: {
      // compare(A, A) is known for integers and predicates (for floats, A may be NaN).
      if (a != b || !IsIntOrPred(a) || !i->comparison_direction.has_value()) return false;
      const ir::ComparisonDirection d = *i->comparison_direction;
      const bool result = d == ir::ComparisonDirection::kEq || d == ir::ComparisonDirection::kGe ||
                          d == ir::ComparisonDirection::kLe;
      return ReplaceWith(
          i, MakeFilled(c, PrimitiveType::kPred, i->shape().dimensions(), result ? 1 : 0));
    }
    default:
      return false;
  }
}

bool HandleUnary(Instruction* i) {
  Instruction* a = i->operand(0);
  switch (i->opcode()) {
    case Opcode::kNegate:
    case Opcode::kNot:
      if (a->opcode() == i->opcode()) return ReplaceWith(i, a->operand(0));
      return false;
    case Opcode::kAbs:
      if (a->opcode() == Opcode::kAbs) return ReplaceWith(i, a);
      return false;
    case Opcode::kCopy:
      // A copy to the same layout does nothing; copy(copy(A)) is one copy.
      if (a->shape() == i->shape()) return ReplaceWith(i, a);
      if (a->opcode() == Opcode::kCopy && a->operand(0)->shape().IsArray()) {
        Instruction* copy = CloneInstruction(*i, *i->parent(), {a->operand(0)});
        return ReplaceWith(i, copy);
      }
      return false;
    case Opcode::kConvert: {
      const PrimitiveType to = i->shape().element_type();
      if (a->shape().element_type() == to) return ReplaceWith(i, a);
      // convert(convert(A, T1), T2) => convert(A, T2) when A -> T1 is exact; => A when T2 is A's
      // type (XLA's convert-pair elimination).
      if (a->opcode() != Opcode::kConvert) return false;
      Instruction* src = a->operand(0);
      if (!CastPreservesValues(src->shape().element_type(), a->shape().element_type())) {
        return false;
      }
      if (src->shape().element_type() == to) return ReplaceWith(i, src);
      return ReplaceWith(i, MakeConvert(*i->parent(), src, to));
    }
    case Opcode::kBitcastConvert: {
      const PrimitiveType to = i->shape().element_type();
      if (a->shape().element_type() == to) return ReplaceWith(i, a);
      if (a->opcode() != Opcode::kBitcastConvert) return false;
      Instruction* src = a->operand(0);
      if (ir::BitWidth(src->shape().element_type()) != ir::BitWidth(to) ||
          ir::BitWidth(a->shape().element_type()) != ir::BitWidth(to)) {
        return false;
      }
      if (src->shape().element_type() == to) return ReplaceWith(i, src);
      Instruction* direct = AddInstr(*i->parent(), Opcode::kBitcastConvert,
                                     Shape(to, src->shape().dimensions()), {src});
      return ReplaceWith(i, direct);
    }
    default:
      return false;
  }
}

bool HandleSelect(Instruction* i) {
  Instruction* p = i->operand(0);
  Instruction* t = i->operand(1);
  Instruction* f = i->operand(2);
  if (t == f) return ReplaceWith(i, t);
  if (IsAll(p, 1)) return ReplaceWith(i, t);
  if (IsAll(p, 0)) return ReplaceWith(i, f);
  Computation& c = *i->parent();
  // select(not(P), A, B) => select(P, B, A).
  if (p->opcode() == Opcode::kNot) {
    Instruction* s = CloneInstruction(*i, c, {p->operand(0), f, t});
    return ReplaceWith(i, s);
  }
  // select(P, true, false) => P; select(P, false, true) => not(P).
  if (i->shape().element_type() == PrimitiveType::kPred &&
      p->shape().dimensions() == i->shape().dimensions()) {
    if (IsAll(t, 1) && IsAll(f, 0)) return ReplaceWith(i, p);
    if (IsAll(t, 0) && IsAll(f, 1)) return ReplaceWith(i, MakeUnary(c, Opcode::kNot, p));
  }
  return false;
}

// A constant whose elements are all equal becomes broadcast(scalar); 0, 1, 2, ... becomes iota.
bool HandleConstant(Instruction* i) {
  if (!i->literal.has_value() || !i->shape().IsArray() || i->shape().rank() == 0 ||
      i->literal->element_count() <= 1) {
    return false;
  }
  Computation& c = *i->parent();
  if (std::optional<Literal> v = SplatValue(i)) {
    return ReplaceWith(i,
                       BroadcastScalar(c, MakeConstant(c, *std::move(v)), i->shape().dimensions()));
  }
  const PrimitiveType t = i->shape().element_type();
  if (i->shape().rank() != 1 || !(ir::IsIntegral(t) || ir::IsFloatingPoint(t))) return false;
  const Literal& l = *i->literal;
  for (int64_t k = 0; k < l.element_count(); ++k) {
    const bool exact =
        ir::IsFloatingPoint(t) ? l.GetAsDouble(k) == static_cast<double>(k) : l.GetAsInt64(k) == k;
    if (!exact) return false;
    if (ir::IsFloatingPoint(t) && std::signbit(l.GetAsDouble(k))) return false;  // -0.0
  }
  Instruction* iota = AddInstr(c, Opcode::kIota, Shape(t, i->shape().dimensions()), {});
  iota->iota_dimension = 0;
  return ReplaceWith(i, iota);
}

}  // namespace

bool SimplifyArithmetic(Instruction* i) {
  if (i->opcode() == Opcode::kConstant) return HandleConstant(i);
  if (i->opcode() == Opcode::kSelect) {
    if (HandleSelect(i)) return true;
  } else if (ir::IsElementwiseBinary(i->opcode()) && i->operand_count() == 2) {
    if (HandleBinaryIdentity(i) || CanonicalizeConstantToRight(i) ||
        ReassociateIntegerConstants(i)) {
      return true;
    }
  } else if (ir::IsElementwiseUnary(i->opcode()) && i->operand_count() == 1) {
    if (HandleUnary(i)) return true;
  }
  return SinkBroadcasts(i);
}

namespace {

// Instructions the simplifier may rewrite: static array shapes (tuples only for
// get-tuple-element), no side effects and no control edges to preserve.
bool IsCandidate(const Instruction* i) {
  if (i->HasSideEffect() || (!i->called_computations().empty() && HasSideEffectRecursive(i)) ||
      !i->control_predecessors().empty() || !i->control_successors().empty() ||
      i->opcode() == Opcode::kParameter) {
    return false;
  }
  if (!(i->shape().IsArray() && i->shape().is_static()) &&
      i->opcode() != Opcode::kGetTupleElement) {
    return false;
  }
  for (const Instruction* op : i->operands()) {
    if (op->shape().IsArray() && !op->shape().is_static()) return false;
  }
  return true;
}

class AlgebraicSimplifier : public Pass {
 public:
  static constexpr int kMaxRounds = 32;

  std::string_view name() const override { return "algsimp"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (int round = 0; round < kMaxRounds; ++round) {
        bool round_changed = false;
        // A rewrite deletes only the visited instruction and operands that become dead, all
        // earlier in this order, so the rest of the order stays valid.
        for (Instruction* i : c->MakePostOrder()) {
          if (!IsCandidate(i)) continue;
          if (SimplifyArithmetic(i) || SimplifyDataMovement(i)) round_changed = true;
        }
        if (!round_changed) break;
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace
}  // namespace algsimp

void RegisterAlgebraicSimplifier(Registry& registry) {
  registry.Register({"algsimp", "algebraic simplifier: exact identities and shape-op folding",
                     [] { return std::make_unique<algsimp::AlgebraicSimplifier>(); }});
}

}  // namespace mltune::passes
