#include "passes/while_util.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>

#include "ir/evaluator/evaluator.h"
#include "ir/hlo_builder.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

Instruction* MakeParameter(Computation& c, int64_t number, const Shape& shape,
                           std::string_view name_hint) {
  std::string name =
      c.parent() != nullptr ? c.parent()->UniqueInstructionName(name_hint) : std::string(name_hint);
  auto instr = std::make_unique<Instruction>(Opcode::kParameter, shape, std::move(name));
  instr->parameter_number = number;
  return c.AddInstruction(std::move(instr));
}

Instruction* TupleElement(Computation& c, Instruction* tuple, int64_t index) {
  if (tuple->opcode() == Opcode::kTuple) return tuple->operand(index);
  return MakeGetTupleElement(c, tuple, index);
}

Instruction* InlineComputation(const Computation& callee, Computation& into,
                               const std::vector<Instruction*>& arguments, InstructionMap* map) {
  InstructionMap local;
  InstructionMap& m = map != nullptr ? *map : local;
  for (Instruction* i : callee.MakePostOrder()) {
    if (i->opcode() == Opcode::kParameter) {
      m[i] = arguments.at(i->parameter_number);
      continue;
    }
    std::vector<Instruction*> operands;
    for (Instruction* op : i->operands()) operands.push_back(m.at(op));
    m[i] = CloneInstruction(*i, into, operands);
  }
  for (Instruction* i : callee.instructions()) {
    if (i->opcode() == Opcode::kParameter) continue;
    for (Instruction* succ : i->control_successors()) {
      if (succ->opcode() != Opcode::kParameter) m.at(i)->AddControlDependencyTo(m.at(succ));
    }
  }
  return m.at(callee.root());
}

namespace {

// Removes every safely removable dead instruction of `c`, users first; returns them.
std::unordered_set<const Instruction*> LocalDce(Computation& c) {
  std::unordered_set<const Instruction*> removed;
  std::vector<Instruction*> order = c.MakePostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (IsSafelyRemovable(*it) && c.RemoveInstruction(*it).ok()) removed.insert(*it);
  }
  return removed;
}

}  // namespace

int64_t RemoveDeadCode(Computation& c) { return static_cast<int64_t>(LocalDce(c).size()); }

void ReplaceAndForward(Instruction* old, Instruction* replacement) {
  const std::vector<Instruction*> users = old->users();
  old->ReplaceAllUsesWith(replacement);
  if (replacement->opcode() == Opcode::kTuple) {
    for (Instruction* user : users) {
      if (user->opcode() != Opcode::kGetTupleElement || !user->control_predecessors().empty() ||
          !user->control_successors().empty()) {
        continue;
      }
      user->ReplaceAllUsesWith(replacement->operand(user->tuple_index));
      if (IsDead(user)) (void)user->parent()->RemoveInstruction(user);
    }
  }
  if (IsDead(old)) {
    old->DropAllControlDependencies();
    (void)old->parent()->RemoveInstruction(old);
  }
  if (replacement->opcode() == Opcode::kTuple && IsSafelyRemovable(replacement)) {
    (void)replacement->parent()->RemoveInstruction(replacement);
  }
}

Computation* CloneLoopComputation(const Computation& src, ir::Module& module,
                                  const LoopCloneOptions& options, InstructionMap* map) {
  Computation* c = module.AddComputation(
      std::make_unique<Computation>(UniqueComputationName(module, src.name())));
  const Instruction* old_param = src.parameter_count() > 0 ? src.parameter(0) : nullptr;
  Instruction* param =
      MakeParameter(*c, 0, options.param_shape, old_param ? old_param->name() : "param");
  std::vector<Instruction*> elements = options.elements(*c, param);
  InstructionMap m;
  if (options.preset) m = options.preset(*c, param);
  std::unordered_set<const Instruction*> cloned;
  Instruction* param_tuple = nullptr;
  for (Instruction* i : src.MakePostOrder()) {
    if (m.count(i)) continue;
    if (i == old_param) continue;
    if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == old_param) {
      m[i] = elements.at(i->tuple_index);
      continue;
    }
    std::vector<Instruction*> operands;
    bool dropped = false;
    for (Instruction* op : i->operands()) {
      if (op == old_param) {
        if (param_tuple == nullptr) {
          if (std::find(elements.begin(), elements.end(), nullptr) != elements.end()) {
            dropped = true;
            break;
          }
          param_tuple = MakeTuple(*c, elements);
        }
        operands.push_back(param_tuple);
        continue;
      }
      auto it = m.find(op);
      if (it == m.end() || it->second == nullptr) {
        dropped = true;
        break;
      }
      operands.push_back(it->second);
    }
    if (dropped) {
      m[i] = nullptr;
      continue;
    }
    m[i] = CloneInstruction(*i, *c, operands);
    cloned.insert(i);
  }
  for (Instruction* i : src.instructions()) {
    if (!cloned.count(i)) continue;
    for (Instruction* succ : i->control_successors()) {
      if (cloned.count(succ)) m.at(i)->AddControlDependencyTo(m.at(succ));
    }
  }
  if (src.root() == old_param && old_param != nullptr) {
    // An identity computation: its parameter (as a tuple of the elements) is its value.
    const bool complete = std::find(elements.begin(), elements.end(), nullptr) == elements.end();
    m[old_param] = !complete                ? nullptr
                   : param_tuple != nullptr ? param_tuple
                                            : MakeTuple(*c, elements);
  }
  Instruction* root = options.root ? options.root(*c, m) : m.at(src.root());
  if (root == nullptr) {
    // Something live depended on a removed element: the caller's analysis was wrong; give up.
    c->set_root(param);
    (void)module.RemoveComputation(c);
    return nullptr;
  }
  c->set_root(root);
  const std::unordered_set<const Instruction*> removed = LocalDce(*c);
  if (map != nullptr) {
    for (auto& [old_instr, new_instr] : m) {
      if (removed.count(new_instr)) new_instr = nullptr;
    }
    *map = std::move(m);
  }
  return c;
}

int64_t CallerCount(const ir::Module& module, const Computation* c) {
  int64_t n = 0;
  for (const Computation* comp : module.computations()) {
    for (const Instruction* i : comp->instructions()) {
      for (const Computation* callee : i->called_computations()) n += callee == c;
    }
  }
  return n;
}

void RemoveComputationIfUnused(ir::Module& module, Computation* c) {
  if (c == nullptr || c == module.entry() || CallerCount(module, c) != 0) return;
  // Computations only it called may become unused in turn.
  std::vector<Computation*> callees;
  for (const Instruction* i : c->instructions()) {
    for (Computation* callee : i->called_computations()) {
      if (std::find(callees.begin(), callees.end(), callee) == callees.end()) {
        callees.push_back(callee);
      }
    }
  }
  if (!module.RemoveComputation(c).ok()) return;
  for (Computation* callee : callees) {
    // Compare pointers only: an earlier step may have removed (freed) it.
    const std::vector<Computation*> all = module.computations();
    if (std::find(all.begin(), all.end(), callee) != all.end()) {
      RemoveComputationIfUnused(module, callee);
    }
  }
}

std::optional<ir::Literal> EvaluateConstantExpression(const Instruction* instr) {
  if (instr->opcode() == Opcode::kConstant) {
    if (instr->literal.has_value()) return *instr->literal;
    return std::nullopt;
  }
  constexpr int kBudget = 64;
  std::vector<const Instruction*> order;
  std::unordered_set<const Instruction*> seen = {instr};
  std::vector<const Instruction*> stack = {instr};
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (i->opcode() == Opcode::kParameter || i->opcode() == Opcode::kWhile ||
        HasSideEffectRecursive(i) || static_cast<int>(seen.size()) > kBudget) {
      return std::nullopt;
    }
    for (const Instruction* op : i->operands()) {
      if (seen.insert(op).second) stack.push_back(op);
    }
  }
  ir::Module scratch("constant_expression");
  Computation* entry = scratch.AddComputation(std::make_unique<Computation>("expr"));
  scratch.set_entry(entry);
  InstructionMap m;
  for (Instruction* i : instr->parent()->MakePostOrder()) {
    if (!seen.count(i)) continue;
    std::vector<Instruction*> operands;
    for (Instruction* op : i->operands()) operands.push_back(m.at(op));
    m[i] = CloneInstruction(*i, *entry, operands);
  }
  entry->set_root(m.at(instr));
  ir::EvalOptions options;
  options.max_loop_iterations = 0;
  absl::StatusOr<ir::Literal> value = ir::Evaluate(scratch, {}, options);
  if (!value.ok()) return std::nullopt;
  return *std::move(value);
}

namespace {

// All operands of `instr` are constants or gte(gte_operand, i) (possibly through a copy) for one
// i: returns that i.
std::optional<int64_t> GetGTEOperandIndex(const Instruction* instr,
                                          const Instruction* gte_operand) {
  std::optional<int64_t> tuple_idx;
  for (const Instruction* operand : instr->operands()) {
    if (operand->opcode() == Opcode::kConstant) continue;
    const Instruction* possibly_gte = operand;
    if (operand->opcode() == Opcode::kCopy) possibly_gte = operand->operand(0);
    if (possibly_gte->opcode() != Opcode::kGetTupleElement ||
        possibly_gte->operand(0) != gte_operand) {
      return std::nullopt;
    }
    if (!tuple_idx.has_value()) {
      tuple_idx = possibly_gte->tuple_index;
    } else if (*tuple_idx != possibly_gte->tuple_index) {
      return std::nullopt;
    }
  }
  return tuple_idx;
}

// Evaluates `instr` with each non-constant operand replaced by `value`.
std::optional<ir::Literal> EvaluateWithSubstitution(const Instruction* instr,
                                                    const ir::Literal& value) {
  ir::Module scratch("substitution");
  Computation* entry = scratch.AddComputation(std::make_unique<Computation>("expr"));
  scratch.set_entry(entry);
  std::vector<Instruction*> operands;
  for (const Instruction* op : instr->operands()) {
    if (op->opcode() == Opcode::kConstant) {
      if (!op->literal.has_value()) return std::nullopt;
      operands.push_back(CloneInstruction(*op, *entry, {}));
    } else {
      if (!op->shape().IsArray() || !value.shape().IsArray() ||
          !op->shape().Compatible(value.shape())) {
        return std::nullopt;
      }
      operands.push_back(MakeConstant(*entry, value));
    }
  }
  entry->set_root(CloneInstruction(*instr, *entry, operands));
  ir::EvalOptions options;
  options.max_loop_iterations = 0;
  absl::StatusOr<ir::Literal> result = ir::Evaluate(scratch, {}, options);
  if (!result.ok()) return std::nullopt;
  return *std::move(result);
}

bool IsIndvarRead(const Instruction* op, const Instruction* param, int64_t idx) {
  if (op->opcode() == Opcode::kCopy) op = op->operand(0);
  return op->opcode() == Opcode::kGetTupleElement && op->operand(0) == param &&
         op->tuple_index == idx;
}

std::optional<__int128> ScalarInt(const Instruction* constant) {
  if (constant->opcode() != Opcode::kConstant || !constant->literal.has_value() ||
      !constant->shape().IsScalar()) {
    return std::nullopt;
  }
  const ir::Literal& l = *constant->literal;
  if (ir::IsSignedIntegral(l.element_type())) return l.GetAsInt64(0);
  if (ir::IsUnsignedIntegral(l.element_type())) return l.GetAsUint64(0);
  return std::nullopt;
}

// The `for (i = init; i < bound; i += step)` family with step > 0, solved exactly; nullopt when
// the loop does not match or the induction variable would wrap.
std::optional<int64_t> MatchTrivialLoopTripCount(const Instruction* while_op, int64_t idx,
                                                 const ir::Literal& init) {
  const ir::PrimitiveType type = init.element_type();
  if (!ir::IsIntegral(type) || !init.shape().IsScalar()) return std::nullopt;
  const bool is_signed = ir::IsSignedIntegral(type);
  const int bits = ir::BitWidth(type);
  const __int128 hi = is_signed ? (static_cast<__int128>(1) << (bits - 1)) - 1
                                : (static_cast<__int128>(1) << bits) - 1;
  const __int128 i0 = is_signed ? static_cast<__int128>(init.GetAsInt64(0))
                                : static_cast<__int128>(init.GetAsUint64(0));

  const Computation* body = while_op->while_body();
  const Instruction* update = body->root()->operand(idx);
  if (update->opcode() != Opcode::kAdd || update->shape().element_type() != type) {
    return std::nullopt;
  }
  std::optional<__int128> step;
  if (IsIndvarRead(update->operand(0), body->parameter(0), idx)) {
    step = ScalarInt(update->operand(1));
  } else if (IsIndvarRead(update->operand(1), body->parameter(0), idx)) {
    step = ScalarInt(update->operand(0));
  }
  if (!step.has_value() || *step <= 0) return std::nullopt;

  const Computation* cond = while_op->while_condition();
  const Instruction* cmp = cond->root();
  if (cmp->opcode() != Opcode::kCompare || !cmp->comparison_direction.has_value() ||
      cmp->operand(0)->shape().element_type() != type) {
    return std::nullopt;
  }
  const ir::ComparisonType ct = cmp->comparison_type;
  if (ct != ir::ComparisonType::kDefault &&
      ct != (is_signed ? ir::ComparisonType::kSigned : ir::ComparisonType::kUnsigned)) {
    return std::nullopt;
  }
  using D = ir::ComparisonDirection;
  D dir = *cmp->comparison_direction;
  std::optional<__int128> bound;
  if (IsIndvarRead(cmp->operand(0), cond->parameter(0), idx)) {
    bound = ScalarInt(cmp->operand(1));
  } else if (IsIndvarRead(cmp->operand(1), cond->parameter(0), idx)) {
    bound = ScalarInt(cmp->operand(0));
    // bound > i is i < bound.
    if (dir == D::kGt) {
      dir = D::kLt;
    } else if (dir == D::kGe) {
      dir = D::kLe;
    } else {
      return std::nullopt;
    }
  }
  if (!bound.has_value()) return std::nullopt;
  __int128 n;
  if (dir == D::kLt) {
    if (i0 >= *bound) return 0;
    n = (*bound - i0 + *step - 1) / *step;
  } else if (dir == D::kLe) {
    if (i0 > *bound) return 0;
    n = (*bound - i0) / *step + 1;
  } else {
    return std::nullopt;
  }
  // The value after the last iteration must not wrap around.
  if (i0 + n * *step > hi || n > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(n);
}

// The operand of `instr` that is not a constant (all such operands read the same value).
const Instruction* NonConstantOperand(const Instruction* instr) {
  for (const Instruction* op : instr->operands()) {
    if (op->opcode() != Opcode::kConstant) return op;
  }
  return nullptr;
}

}  // namespace

std::optional<int64_t> GetLoopInductionVarTupleIdx(const Instruction* while_op) {
  if (while_op->opcode() != Opcode::kWhile) return std::nullopt;
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  if (cond->parameter_count() != 1 || body->parameter_count() != 1) return std::nullopt;
  std::optional<int64_t> idx = GetGTEOperandIndex(cond->root(), cond->parameter(0));
  if (!idx.has_value()) return std::nullopt;
  const Instruction* body_root = body->root();
  if (body_root->opcode() != Opcode::kTuple || *idx >= body_root->operand_count()) {
    return std::nullopt;
  }
  std::optional<int64_t> body_idx =
      GetGTEOperandIndex(body_root->operand(*idx), body->parameter(0));
  if (body_idx != idx) return std::nullopt;
  const Instruction* init = while_op->operand(0);
  if (init->opcode() != Opcode::kTuple || *idx >= init->operand_count()) return std::nullopt;
  return idx;
}

std::optional<int64_t> ComputeWhileLoopTripCount(const Instruction* while_op,
                                                 int64_t max_brute_force_iters) {
  std::optional<int64_t> idx = GetLoopInductionVarTupleIdx(while_op);
  if (!idx.has_value()) return std::nullopt;
  std::optional<ir::Literal> value =
      EvaluateConstantExpression(while_op->operand(0)->operand(*idx));
  if (!value.has_value()) return std::nullopt;
  if (std::optional<int64_t> n = MatchTrivialLoopTripCount(while_op, *idx, *value)) return n;

  const Instruction* update = while_op->while_body()->root()->operand(*idx);
  const Instruction* cond_root = while_op->while_condition()->root();
  if (NonConstantOperand(update) == nullptr || NonConstantOperand(cond_root) == nullptr) {
    return std::nullopt;
  }
  for (int64_t trip_count = 0; trip_count <= max_brute_force_iters; ++trip_count) {
    std::optional<ir::Literal> keep_going = EvaluateWithSubstitution(cond_root, *value);
    if (!keep_going.has_value() || keep_going->element_type() != ir::PrimitiveType::kPred ||
        keep_going->element_count() != 1) {
      return std::nullopt;
    }
    if (!keep_going->GetAsBool(0)) return trip_count;
    std::optional<ir::Literal> next = EvaluateWithSubstitution(update, *value);
    if (!next.has_value()) return std::nullopt;
    value = std::move(next);
  }
  return std::nullopt;
}

std::optional<int64_t> ComputeWhileLoopTripCountUpperBound(const Instruction* while_op) {
  if (std::optional<int64_t> n = ComputeWhileLoopTripCount(while_op)) return n;
  const Computation* cond = while_op->while_condition();
  if (cond->parameter_count() != 1) return std::nullopt;
  const Instruction* param = cond->parameter(0);
  if (param->user_count() != 1 || param->users()[0]->opcode() != Opcode::kGetTupleElement) {
    return std::nullopt;
  }
  const Instruction* cond_gte = param->users()[0];
  const Instruction* body_root = while_op->while_body()->root();
  if (body_root->opcode() != Opcode::kTuple) return std::nullopt;
  const Instruction* body_value = body_root->operand(cond_gte->tuple_index);
  if (body_value->opcode() != Opcode::kConstant || !body_value->literal.has_value()) {
    return std::nullopt;
  }
  // Every non-constant operand of the condition's root must be that one element.
  const Instruction* cond_root = cond->root();
  for (const Instruction* op : cond_root->operands()) {
    if (op->opcode() != Opcode::kConstant && op != cond_gte) return std::nullopt;
  }
  if (NonConstantOperand(cond_root) == nullptr) return std::nullopt;
  std::optional<ir::Literal> keep_going = EvaluateWithSubstitution(cond_root, *body_value->literal);
  if (!keep_going.has_value() || keep_going->element_type() != ir::PrimitiveType::kPred ||
      keep_going->element_count() != 1 || keep_going->GetAsBool(0)) {
    return std::nullopt;
  }
  return 1;
}

std::vector<Instruction*> GetInvariantGTEsForWhileBody(const Computation& body) {
  std::vector<Instruction*> result;
  const Instruction* root = body.root();
  if (root->opcode() != Opcode::kTuple || body.parameter_count() != 1) return result;
  for (int64_t i = 0; i < root->operand_count(); ++i) {
    Instruction* op = root->operand(i);
    if (op->opcode() == Opcode::kGetTupleElement && op->tuple_index == i &&
        op->operand(0) == body.parameter(0)) {
      result.push_back(op);
    }
  }
  return result;
}

std::unordered_map<int64_t, std::vector<Instruction*>> GetGTEsMapForWhileConditional(
    const Computation& condition) {
  std::unordered_map<int64_t, std::vector<Instruction*>> result;
  if (condition.parameter_count() != 1) return result;
  for (Instruction* user : condition.parameter(0)->users()) {
    if (user->opcode() == Opcode::kGetTupleElement) result[user->tuple_index].push_back(user);
  }
  return result;
}

Instruction* MakeWhileLike(const Instruction& old, Instruction* init, Computation* condition,
                           Computation* body) {
  Computation& parent = *old.parent();
  Instruction* w = AddInstr(parent, Opcode::kWhile, init->shape(), {init}, old.name());
  static_cast<ir::InstructionAttributes&>(*w) = static_cast<const ir::InstructionAttributes&>(old);
  if (!old.shape().Compatible(init->shape())) w->sharding.clear();
  w->mutable_called_computations() = {condition, body};
  return w;
}

bool LoopStateEditableInPlace(const Instruction* while_op) {
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  const ir::Module& module = *while_op->parent()->parent();
  if (cond == body || CallerCount(module, cond) != 1 || CallerCount(module, body) != 1) {
    return false;
  }
  for (const Computation* c : {cond, body}) {
    if (c->parameter_count() != 1 || c->root() == c->parameter(0)) return false;
    for (const Instruction* user : c->parameter(0)->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) return false;
    }
  }
  return true;
}

bool ReadsOnlyKeptElements(const Computation& c, const std::vector<const Instruction*>& values,
                           const std::vector<int64_t>& old_to_new) {
  const Instruction* param = c.parameter(0);
  std::unordered_set<const Instruction*> seen;
  std::vector<const Instruction*> stack = values;
  for (const Instruction* i : c.instructions()) {
    if (HasSideEffectRecursive(i) || !i->control_predecessors().empty() ||
        !i->control_successors().empty()) {
      stack.push_back(i);
    }
  }
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second) continue;
    if (i == param) return false;
    if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == param) {
      if (old_to_new.at(i->tuple_index) < 0) return false;
      continue;
    }
    for (const Instruction* op : i->operands()) stack.push_back(op);
  }
  return true;
}

Instruction* RemapParameterInPlace(Computation& c, const std::vector<int64_t>& old_to_new,
                                   const Shape& new_shape) {
  Instruction* param = c.parameter(0);
  for (Instruction* gte : param->users()) gte->tuple_index = old_to_new.at(gte->tuple_index);
  param->set_shape(new_shape);
  return param;
}

namespace {

std::vector<Instruction*> TupleElementsOfParameter(Computation& c, Instruction* param, int64_t n) {
  std::vector<Instruction*> e;
  for (int64_t i = 0; i < n; ++i) e.push_back(MakeGetTupleElement(c, param, i));
  return e;
}

Computation* CloneLiveInCondition(const Instruction* while_op, const Shape& new_shape) {
  const int64_t n = while_op->shape().tuple_size();
  LoopCloneOptions options;
  options.param_shape = new_shape;
  options.elements = [n](Computation& c, Instruction* p) {
    return TupleElementsOfParameter(c, p, n);
  };
  return CloneLoopComputation(*while_op->while_condition(), *while_op->parent()->parent(), options);
}

// A copy of the body over the widened state, passing the new elements (`result.live_in_values`
// receives the copy's reads of them) through unchanged.
Computation* CloneLiveInBody(const Instruction* while_op, const Shape& new_shape,
                             LiveInResult& result) {
  const int64_t n = while_op->shape().tuple_size();
  const int64_t extra = new_shape.tuple_size() - n;
  const Computation* old_body = while_op->while_body();
  std::vector<Instruction*>& live_in = result.live_in_values;
  LoopCloneOptions options;
  options.param_shape = new_shape;
  options.elements = [n, extra, &live_in](Computation& c, Instruction* p) {
    for (int64_t k = 0; k < extra; ++k) live_in.push_back(MakeGetTupleElement(c, p, n + k));
    return TupleElementsOfParameter(c, p, n);
  };
  options.root = [n, &live_in, old_body](Computation& c, const InstructionMap& m) {
    Instruction* old_root = m.at(old_body->root());
    if (old_root == nullptr) return old_root;
    std::vector<Instruction*> e;
    for (int64_t i = 0; i < n; ++i) e.push_back(TupleElement(c, old_root, i));
    e.insert(e.end(), live_in.begin(), live_in.end());
    return MakeTuple(c, e);
  };
  return CloneLoopComputation(*old_body, *while_op->parent()->parent(), options, &result.body_map);
}

}  // namespace

LiveInResult MakeInstructionsLiveIn(Instruction* while_op,
                                    const std::vector<Instruction*>& values) {
  LiveInResult result;
  Computation& parent = *while_op->parent();
  const int64_t n = while_op->shape().tuple_size();
  std::vector<Shape> shapes = while_op->shape().tuple_shapes();
  for (Instruction* v : values) shapes.push_back(v->shape());
  const Shape new_shape = Shape::Tuple(shapes);

  std::vector<Instruction*> init_elements;
  for (int64_t i = 0; i < n; ++i)
    init_elements.push_back(TupleElement(parent, while_op->operand(0), i));
  init_elements.insert(init_elements.end(), values.begin(), values.end());
  Instruction* init = MakeTuple(parent, init_elements);

  Computation* old_cond = while_op->while_condition();
  Computation* old_body = while_op->while_body();
  if (LoopStateEditableInPlace(while_op)) {
    std::vector<int64_t> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    RemapParameterInPlace(*old_cond, identity, new_shape);
    Instruction* param = RemapParameterInPlace(*old_body, identity, new_shape);
    for (int64_t k = 0; k < static_cast<int64_t>(values.size()); ++k) {
      result.live_in_values.push_back(MakeGetTupleElement(*old_body, param, n + k));
    }
    Instruction* old_root = old_body->root();
    std::vector<Instruction*> e;
    for (int64_t i = 0; i < n; ++i) e.push_back(TupleElement(*old_body, old_root, i));
    e.insert(e.end(), result.live_in_values.begin(), result.live_in_values.end());
    old_body->set_root(MakeTuple(*old_body, e));
    if (IsSafelyRemovable(old_root)) (void)old_body->RemoveInstruction(old_root);
    result.in_place = true;
    result.new_while = MakeWhileLike(*while_op, init, old_cond, old_body);
  } else {
    result.new_while = MakeWhileLike(*while_op, init, CloneLiveInCondition(while_op, new_shape),
                                     CloneLiveInBody(while_op, new_shape, result));
  }
  std::vector<Instruction*> prefix;
  for (int64_t i = 0; i < n; ++i)
    prefix.push_back(MakeGetTupleElement(parent, result.new_while, i));
  ReplaceAndForward(while_op, MakeTuple(parent, prefix));
  return result;
}
std::vector<Computation*> NonFusionComputations(const ir::Module& module) {
  const std::unordered_set<const Computation*> fused = FusionComputations(module);
  std::vector<Computation*> out;
  for (Computation* c : module.MakeComputationPostOrder()) {
    if (!fused.count(c)) out.push_back(c);
  }
  return out;
}

absl::StatusOr<bool> RewriteWhileLoops(ir::Module& module,
                                       const std::function<bool(Instruction*, bool*)>& rewrite) {
  std::vector<Instruction*> while_ops;
  for (Computation* c : module.MakeComputationPostOrder()) {
    for (Instruction* i : c->instructions()) {
      if (i->opcode() == Opcode::kWhile) while_ops.push_back(i);
    }
  }
  bool changed = false;
  std::unordered_set<const Computation*> dead;  // computations of loops replaced so far
  for (Instruction* while_op : while_ops) {
    if (dead.count(while_op->parent())) continue;
    Computation* cond = while_op->while_condition();
    Computation* body = while_op->while_body();
    bool replaced = false;
    if (rewrite(while_op, &replaced)) {
      if (replaced) {
        dead.insert(cond);
        dead.insert(body);
      }
      changed = true;
    }
  }
  if (changed) {
    for (const char* cleanup : {"dce", "tuple-simplifier"}) {
      absl::StatusOr<std::unique_ptr<Pass>> pass = Registry::Global().Create(cleanup);
      if (!pass.ok()) return pass.status();
      if (absl::StatusOr<bool> s = (*pass)->Run(module); !s.ok()) return s.status();
    }
  }
  return changed;
}

}  // namespace mltune::passes
