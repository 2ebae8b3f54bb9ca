// Recognises reducer and comparator computations that are a single op on their parameters, so
// reduce, scatter, sort and friends can run them as typed loops instead of interpreting the
// computation per element.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/evaluator/eval_internal.h"

namespace mltune::ir::eval {
namespace {

bool IsScalarParameter(const Instruction* i, int64_t number) {
  return i->opcode() == Opcode::kParameter && i->parameter_number == number &&
         i->shape().IsScalar();
}

bool SameScalarParams(const Computation& c, int64_t count) {
  if (c.parameter_count() != count) return false;
  for (int64_t i = 0; i < count; ++i) {
    if (c.parameter(i) == nullptr || !c.parameter(i)->shape().IsScalar()) return false;
    if (c.parameter(i)->shape().element_type() != c.parameter(0)->shape().element_type()) {
      return false;
    }
  }
  return true;
}

bool IsFoldableBinary(Opcode op) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kDivide:
    case Opcode::kRemainder:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kPower:
    case Opcode::kAtan2:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<SimpleBinary> MatchSimpleBinary(const Computation& c) {
  if (!SameScalarParams(c, 2)) return std::nullopt;
  const Instruction* root = c.root();
  if (root == nullptr || !root->shape().IsScalar() ||
      root->shape().element_type() != c.parameter(0)->shape().element_type()) {
    return std::nullopt;
  }
  SimpleBinary m;
  if (IsScalarParameter(root, 0)) {
    m.kind = SimpleBinary::kFirst;
    return m;
  }
  if (IsScalarParameter(root, 1)) {
    m.kind = SimpleBinary::kSecond;
    return m;
  }
  if (!IsFoldableBinary(root->opcode()) || root->operand_count() != 2) return std::nullopt;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  m.kind = SimpleBinary::kOp;
  m.op = root->opcode();
  if (IsScalarParameter(a, 0) && IsScalarParameter(b, 1)) return m;
  if (IsScalarParameter(a, 1) && IsScalarParameter(b, 0)) {
    m.swapped = true;
    return m;
  }
  return std::nullopt;
}

std::optional<SimpleCompare> MatchSimpleCompare(const Computation& c) {
  const Instruction* root = c.root();
  if (root == nullptr || root->opcode() != Opcode::kCompare || root->operand_count() != 2 ||
      !root->comparison_direction.has_value()) {
    return std::nullopt;
  }
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter ||
      !a->shape().IsScalar() || !b->shape().IsScalar() ||
      a->shape().element_type() != b->shape().element_type()) {
    return std::nullopt;
  }
  SimpleCompare m;
  m.lhs_param = a->parameter_number;
  m.rhs_param = b->parameter_number;
  m.direction = *root->comparison_direction;
  m.total_order = root->comparison_type == ComparisonType::kFloatTotalOrder;
  return m;
}

absl::StatusOr<ScalarCall> ScalarCall::Make(Evaluator& ev, const Computation& computation,
                                            const std::vector<PrimitiveType>& arg_types,
                                            const std::vector<PrimitiveType>& result_types) {
  if (computation.parameter_count() != static_cast<int64_t>(arg_types.size())) {
    return absl::InvalidArgumentError(absl::StrCat("computation ", computation.name(), " takes ",
                                                   computation.parameter_count(),
                                                   " parameters, expected ", arg_types.size()));
  }
  ScalarCall call;
  call.ev_ = &ev;
  call.computation_ = &computation;
  call.result_types_ = result_types;
  for (PrimitiveType t : arg_types) {
    absl::StatusOr<Literal> l = ev.NewLiteral(Shape::Scalar(t));
    if (!l.ok()) return l.status();
    call.args_.push_back(*std::move(l));
  }
  return call;
}

void ScalarCall::SetArg(int64_t k, const uint8_t* element) {
  std::memcpy(args_[k].untyped_data(), element, args_[k].size_bytes());
}

absl::Status ScalarCall::Call() {
  arg_ptrs_.clear();
  for (const Literal& a : args_) arg_ptrs_.push_back(&a);
  absl::StatusOr<Literal> r = ev_->Run(*computation_, arg_ptrs_);
  if (!r.ok()) return r.status();
  result_ = *std::move(r);
  const size_t n = result_types_.size();
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("computation ", computation_->name(),
                                                   " returned ", result_.shape().ToString(false),
                                                   ", expected ", n, " scalar result(s)"));
  };
  if (n == 1 && !result_.shape().IsTuple()) {
    if (result_.element_count() != 1 || result_.element_type() != result_types_[0]) return bad();
    return absl::OkStatus();
  }
  if (!result_.shape().IsTuple() || result_.elements().size() != n) return bad();
  for (size_t k = 0; k < n; ++k) {
    const Literal& e = result_.elements()[k];
    if (!e.shape().IsArray() || e.element_count() != 1 || e.element_type() != result_types_[k]) {
      return bad();
    }
  }
  return absl::OkStatus();
}

const uint8_t* ScalarCall::Result(int64_t k) const {
  if (!result_.shape().IsTuple()) return result_.untyped_data();
  return result_.elements()[k].untyped_data();
}

}  // namespace mltune::ir::eval
