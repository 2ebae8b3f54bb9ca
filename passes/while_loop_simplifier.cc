// simplify-while-loops: XLA's WhileLoopSimplifier. Per while loop (whose condition and body no
// other instruction calls), the first of these that applies:
//   - repeated state elements: indices the body passes through unchanged and that start from the
//     same value are merged into one;
//   - a state with nested tuples is flattened into one tuple of its leaves;
//   - dead state elements: indices not used after the loop (or passed through unchanged) whose
//     value reaches neither the condition, a side effect nor another element are removed, singly
//     or as connected groups;
//   - constant state elements: indices that are the same constant in the init and the body's
//     result are removed, the constant used directly inside;
// then, unless the loop contains send/recv:
//   - scalar constants passed through unchanged are propagated into the condition and the body;
//   - a loop with a static trip count of 0 becomes its init, one with a trip count of 1 the
//     inlined body (neither when the condition, or for 1 the body, has a side effect);
//   - integer induction variables (`x += c`) are merged into one trip counter (unless the loop
//     contains a domain).
// dce runs after any change. As XLA's pass, one run rewrites each loop once, so a further run can
// simplify more (XLA runs it inside fixed-point pipelines). Deviations, all towards safety: a loop
// whose state is entirely constant is only removed when neither computation has a side effect; the
// dynamic-update-slice variant of repeated-element merging is not done.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

bool HasControlEdges(const Instruction* i) {
  return !i->control_predecessors().empty() || !i->control_successors().empty();
}

bool AllWhileParamConsumersGte(const Instruction* while_op) {
  for (const Computation* c : {while_op->while_body(), while_op->while_condition()}) {
    if (c->parameter_count() != 1) return false;
    for (const Instruction* user : c->parameter(0)->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) return false;
    }
  }
  return true;
}

bool ContainsOpcode(const Computation* c, const std::vector<Opcode>& opcodes,
                    std::unordered_set<const Computation*>& seen) {
  if (!seen.insert(c).second) return false;
  for (const Instruction* i : c->instructions()) {
    if (std::find(opcodes.begin(), opcodes.end(), i->opcode()) != opcodes.end()) return true;
    for (const Computation* callee : i->called_computations()) {
      if (ContainsOpcode(callee, opcodes, seen)) return true;
    }
  }
  return false;
}

bool LoopContains(const Instruction* while_op, const std::vector<Opcode>& opcodes) {
  std::unordered_set<const Computation*> seen;
  return ContainsOpcode(while_op->while_body(), opcodes, seen) ||
         ContainsOpcode(while_op->while_condition(), opcodes, seen);
}

// What element `i` of a loop body's result is computed from.
const Instruction* TupleElementSource(const Instruction* root, int64_t i) {
  return root->opcode() == Opcode::kTuple ? root->operand(i) : root;
}

// Removes the state elements not in `used` (sorted). Users of a removed element after the loop
// read `dead_to_surviving`'s element when given, else the element of the init (the caller proved
// it is passed through unchanged or unused). Returns the new loop, or nullptr when nothing could
// be done.
Instruction* RemoveDeadTupleIndices(Instruction* while_op, const std::vector<int64_t>& used,
                                    const std::map<int64_t, int64_t>* dead_to_surviving = nullptr) {
  Computation& parent = *while_op->parent();
  ir::Module& module = *parent.parent();
  Instruction* init = while_op->operand(0);
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  const int64_t n = init->shape().tuple_size();
  std::vector<int64_t> old_to_new(n, -1);
  std::vector<Shape> shapes;
  for (size_t k = 0; k < used.size(); ++k) {
    old_to_new[used[k]] = static_cast<int64_t>(k);
    shapes.push_back(init->shape().tuple_shapes(used[k]));
  }
  const Shape new_shape = Shape::Tuple(shapes);
  auto finish = [&](Computation* new_cond, Computation* new_body) {
    std::vector<Instruction*> init_elements;
    for (int64_t i : used) init_elements.push_back(TupleElement(parent, init, i));
    Instruction* new_while =
        MakeWhileLike(*while_op, MakeTuple(parent, init_elements), new_cond, new_body);
    std::vector<Instruction*> result;
    for (int64_t i = 0; i < n; ++i) {
      int64_t from = old_to_new[i];
      if (from < 0 && dead_to_surviving != nullptr) from = old_to_new[dead_to_surviving->at(i)];
      result.push_back(from >= 0 ? MakeGetTupleElement(parent, new_while, from)
                                 : TupleElement(parent, init, i));
    }
    ReplaceAndForward(while_op, MakeTuple(parent, result));
    return new_while;
  };
  // Editing the loop's own computations in place avoids copying large bodies.
  std::vector<const Instruction*> kept_outputs;
  for (int64_t i : used) kept_outputs.push_back(TupleElementSource(body->root(), i));
  if (LoopStateEditableInPlace(while_op) &&
      ReadsOnlyKeptElements(*cond, {cond->root()}, old_to_new) &&
      ReadsOnlyKeptElements(*body, kept_outputs, old_to_new)) {
    Computation* c = while_op->while_condition();
    Computation* b = while_op->while_body();
    Instruction* old_root = b->root();
    std::vector<Instruction*> outputs;
    for (int64_t i : used) outputs.push_back(TupleElement(*b, old_root, i));
    b->set_root(MakeTuple(*b, outputs));
    for (Computation* comp : {c, b}) {
      RemoveDeadCode(*comp);
      RemapParameterInPlace(*comp, old_to_new, new_shape);
    }
    return finish(c, b);
  }
  auto elements = [&](Computation& c, Instruction* p) {
    std::vector<Instruction*> e(n, nullptr);
    for (int64_t i = 0; i < n; ++i) {
      if (old_to_new[i] >= 0) e[i] = MakeGetTupleElement(c, p, old_to_new[i]);
    }
    return e;
  };
  LoopCloneOptions cond_options;
  cond_options.param_shape = new_shape;
  cond_options.elements = elements;
  LoopCloneOptions body_options = cond_options;
  body_options.root = [&](Computation& c, const InstructionMap& m) -> Instruction* {
    std::vector<Instruction*> e;
    for (int64_t i : used) {
      auto it = m.find(body->root()->operand(i));
      if (it == m.end() || it->second == nullptr) return nullptr;
      e.push_back(it->second);
    }
    return MakeTuple(c, e);
  };
  Computation* new_cond = CloneLoopComputation(*cond, module, cond_options);
  if (new_cond == nullptr) return nullptr;
  Computation* new_body = CloneLoopComputation(*body, module, body_options);
  if (new_body == nullptr) {
    (void)module.RemoveComputation(new_cond);
    return nullptr;
  }
  return finish(new_cond, new_body);
}

// Rows of bit sets, one allocation.
class DenseBitSets {
 public:
  DenseBitSets(int64_t rows, int64_t bits)
      : words_per_row_((bits + 63) / 64), words_(rows * words_per_row_, 0) {}
  void Set(int64_t row, int64_t bit) { words_[row * words_per_row_ + bit / 64] |= Mask(bit); }
  bool Test(int64_t row, int64_t bit) const {
    return (words_[row * words_per_row_ + bit / 64] & Mask(bit)) != 0;
  }
  void Or(int64_t row, int64_t other) {
    for (int64_t w = 0; w < words_per_row_; ++w) {
      words_[row * words_per_row_ + w] |= words_[other * words_per_row_ + w];
    }
  }
  // row |= other, ignoring `bit` of other.
  void OrWithout(int64_t row, int64_t other, int64_t bit) {
    for (int64_t w = 0; w < words_per_row_; ++w) {
      const uint64_t keep = w == bit / 64 ? ~Mask(bit) : ~uint64_t{0};
      words_[row * words_per_row_ + w] |= words_[other * words_per_row_ + w] & keep;
    }
  }

 private:
  static uint64_t Mask(int64_t bit) { return uint64_t{1} << (bit % 64); }
  int64_t words_per_row_;
  std::vector<uint64_t> words_;
};

// Removes state elements that nothing live needs: (1) unused after the loop and feeding no other
// element, condition or side effect; (2) groups of connected elements, each unused after the
// loop or passed through unchanged, none reaching the condition or a side effect.
bool TryRemoveDeadWhileParams(Instruction* while_op) {
  if (HasControlEdges(while_op)) return false;
  Instruction* init = while_op->operand(0);
  Computation* cond = while_op->while_condition();
  Computation* body = while_op->while_body();
  const Instruction* body_root = body->root();
  if (!init->shape().IsTuple() || body_root->opcode() != Opcode::kTuple) return false;
  if (!AllWhileParamConsumersGte(while_op)) return false;
  const int64_t n = init->shape().tuple_size();
  if (n == 0) return false;
  const Instruction* body_param = body->parameter(0);
  const Instruction* cond_param = cond->parameter(0);
  const Computation* loop_body = body;
  const Computation* loop_cond = cond;

  std::vector<bool> used_after(n, false);
  if (while_op->parent()->root() == while_op) used_after.assign(n, true);
  for (const Instruction* user : while_op->users()) {
    if (user->opcode() != Opcode::kGetTupleElement) {
      used_after.assign(n, true);
      break;
    }
    used_after[user->tuple_index] = true;
  }
  auto passed_through = [&](int64_t i) {
    const Instruction* out = body_root->operand(i);
    return out->opcode() == Opcode::kGetTupleElement && out->operand(0) == body_param &&
           out->tuple_index == i;
  };
  std::vector<int64_t> candidate_bit(n, -1);
  int64_t num_candidates = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!used_after[i] || passed_through(i)) candidate_bit[i] = num_candidates++;
  }
  if (num_candidates == 0) return false;

  std::unordered_map<const Instruction*, int64_t> slot;
  for (const Computation* c : {loop_body, loop_cond}) {
    for (const Instruction* i : c->instructions())
      slot.emplace(i, static_cast<int64_t>(slot.size()));
  }
  const int64_t num_slots = static_cast<int64_t>(slot.size());
  const int64_t side_effect_row = num_slots;
  const int64_t others_row = num_slots + 1;
  DenseBitSets deps(num_slots + 2, num_candidates);
  std::vector<int64_t> set_parent(num_slots);
  std::iota(set_parent.begin(), set_parent.end(), 0);
  auto find_set = [&](int64_t s) {
    while (set_parent[s] != s) {
      set_parent[s] = set_parent[set_parent[s]];
      s = set_parent[s];
    }
    return s;
  };
  auto merge_sets = [&](int64_t a, int64_t b) { set_parent[find_set(a)] = find_set(b); };
  auto tracked = [&](const Instruction* i) {
    return i != body_param && i != cond_param && i != body_root;
  };

  std::vector<const Instruction*> sinks;
  for (const Computation* c : {loop_body, loop_cond}) {
    const Instruction* param = c->parameter(0);
    for (const Instruction* i : c->instructions()) {
      if (!tracked(i)) continue;
      const int64_t s = slot.at(i);
      if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == param) {
        if (candidate_bit[i->tuple_index] >= 0) deps.Set(s, candidate_bit[i->tuple_index]);
        const Instruction* out = body_root->operand(i->tuple_index);
        if (out != i && tracked(out)) merge_sets(slot.at(out), s);
      } else {
        for (const Instruction* op : i->operands()) {
          if (tracked(op)) merge_sets(slot.at(op), s);
        }
      }
      if (HasSideEffectRecursive(i) || i == cond->root()) sinks.push_back(i);
    }
  }
  // Fills the dependency row of `target` and everything it reaches, each once.
  enum class State : uint8_t { kNew, kOnStack, kDone };
  std::vector<State> state(num_slots, State::kNew);
  auto compute_deps = [&](const Instruction* target) {
    if (!tracked(target)) return;
    std::vector<const Instruction*> stack = {target};
    while (!stack.empty()) {
      const Instruction* i = stack.back();
      const int64_t s = slot.at(i);
      if (state[s] == State::kDone) {
        stack.pop_back();
        continue;
      }
      if (state[s] == State::kNew) {
        state[s] = State::kOnStack;
        for (const Instruction* op : i->operands()) {
          if (tracked(op) && state[slot.at(op)] == State::kNew) stack.push_back(op);
        }
        continue;
      }
      for (const Instruction* op : i->operands()) {
        if (tracked(op)) deps.Or(s, slot.at(op));
      }
      state[s] = State::kDone;
      stack.pop_back();
    }
  };
  for (const Instruction* sink : sinks) {
    compute_deps(sink);
    deps.Or(side_effect_row, slot.at(sink));
  }
  for (int64_t i = 0; i < n; ++i) {
    const Instruction* out = body_root->operand(i);
    if (!tracked(out)) continue;
    compute_deps(out);
    if (candidate_bit[i] >= 0) {
      deps.OrWithout(others_row, slot.at(out), candidate_bit[i]);
    } else {
      deps.Or(others_row, slot.at(out));
    }
  }
  std::set<int64_t> used;
  for (int64_t i = 0; i < n; ++i) used.insert(i);
  for (int64_t i = 0; i < n; ++i) {
    if (used_after[i]) continue;
    if (!deps.Test(others_row, candidate_bit[i]) && !deps.Test(side_effect_row, candidate_bit[i])) {
      used.erase(i);
    }
  }
  // Connected groups of elements: (set, index) pairs sorted by set.
  std::vector<std::pair<int64_t, int64_t>> members;
  for (int64_t i = 0; i < n; ++i) {
    const Instruction* out = body_root->operand(i);
    if (!tracked(out)) {
      // The body returns its parameter's element through something untracked: keep the index.
      members.push_back({-1 - i, i});
      continue;
    }
    members.push_back({find_set(slot.at(out)), i});
  }
  for (const Computation* c : {loop_body, loop_cond}) {
    for (const Instruction* gte : c->parameter(0)->users()) {
      members.push_back({find_set(slot.at(gte)), gte->tuple_index});
    }
  }
  std::sort(members.begin(), members.end());
  auto blocks = [&](int64_t i) {
    return candidate_bit[i] < 0 || deps.Test(side_effect_row, candidate_bit[i]);
  };
  for (auto begin = members.begin(); begin != members.end();) {
    auto end =
        std::find_if(begin, members.end(), [&](const auto& m) { return m.first != begin->first; });
    if (begin->first >= 0 &&
        std::none_of(begin, end, [&](const auto& m) { return blocks(m.second); })) {
      for (auto it = begin; it != end; ++it) used.erase(it->second);
    }
    begin = end;
  }
  if (static_cast<int64_t>(used.size()) == n) return false;
  return RemoveDeadTupleIndices(while_op, std::vector<int64_t>(used.begin(), used.end())) !=
         nullptr;
}

// Indices the body passes through unchanged that start from the same instruction are merged into
// the first of them.
Instruction* TryRemoveRepeatedWhileTupleIndices(Instruction* while_op) {
  if (HasControlEdges(while_op)) return nullptr;
  Instruction* init = while_op->operand(0);
  Computation* body = while_op->while_body();
  Computation* cond = while_op->while_condition();
  const Instruction* body_root = body->root();
  if (init->opcode() != Opcode::kTuple || body_root->opcode() != Opcode::kTuple ||
      !AllWhileParamConsumersGte(while_op)) {
    return nullptr;
  }
  std::map<int64_t, int64_t> dead_to_surviving;
  std::unordered_map<const Instruction*, int64_t> first_index;
  for (int64_t i = 0; i < init->operand_count(); ++i) {
    const Instruction* out = body_root->operand(i);
    if (out->opcode() != Opcode::kGetTupleElement || out->operand(0) != body->parameter(0) ||
        out->tuple_index != i) {
      continue;
    }
    auto [it, inserted] = first_index.emplace(init->operand(i), i);
    if (!inserted) dead_to_surviving[i] = it->second;
  }
  if (dead_to_surviving.empty()) return nullptr;
  for (Computation* c : {body, cond}) {
    Instruction* param = c->parameter(0);
    std::unordered_map<int64_t, Instruction*> surviving_gte;
    const std::vector<Instruction*> gtes = param->users();
    for (Instruction* gte : gtes) {
      auto it = dead_to_surviving.find(gte->tuple_index);
      if (it == dead_to_surviving.end()) continue;
      Instruction*& replacement = surviving_gte[it->second];
      if (replacement == nullptr) replacement = MakeGetTupleElement(*c, param, it->second);
      gte->ReplaceAllUsesWith(replacement);
      if (IsSafelyRemovable(gte)) (void)c->RemoveInstruction(gte);
    }
  }
  std::vector<int64_t> used;
  for (int64_t i = 0; i < init->operand_count(); ++i) {
    if (!dead_to_surviving.count(i)) used.push_back(i);
  }
  // The body and condition already read the surviving elements, so the module changed even if
  // the removal itself fails.
  Instruction* new_while = RemoveDeadTupleIndices(while_op, used);
  return new_while != nullptr ? new_while : while_op;
}

bool SameConstant(const Instruction* a, const Instruction* b) {
  return a->opcode() == Opcode::kConstant && b->opcode() == Opcode::kConstant &&
         a->literal.has_value() && b->literal.has_value() && a->shape().Compatible(b->shape()) &&
         a->literal->BitwiseEqual(*b->literal);
}

// Elements that are the same constant in the init and the body's result are removed from the
// state; the condition and the body use the constant directly.
bool TryRemoveConstantParams(Instruction* while_op) {
  if (HasControlEdges(while_op)) return false;
  Computation& parent = *while_op->parent();
  ir::Module& module = *parent.parent();
  Instruction* init = while_op->operand(0);
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  const Instruction* body_root = body->root();
  if (init->opcode() != Opcode::kTuple || body_root->opcode() != Opcode::kTuple) return false;
  const int64_t n = init->operand_count();
  std::vector<bool> constant(n, false);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n; ++i) {
    constant[i] = SameConstant(init->operand(i), body_root->operand(i));
    if (!constant[i]) kept.push_back(i);
  }
  if (static_cast<int64_t>(kept.size()) == n) return false;
  if (kept.empty()) {
    // The loop computes nothing: its value is its init. Only when dropping it drops no effect.
    if (ComputationHasSideEffect(cond) || ComputationHasSideEffect(body)) return false;
    ReplaceAndForward(while_op, init);
    return true;
  }
  std::vector<Shape> shapes;
  for (int64_t i : kept) shapes.push_back(init->shape().tuple_shapes(i));
  LoopCloneOptions cond_options;
  cond_options.param_shape = Shape::Tuple(shapes);
  cond_options.elements = [&](Computation& c, Instruction* p) {
    std::vector<Instruction*> e;
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i) {
      e.push_back(constant[i] ? CloneInstruction(*init->operand(i), c, {})
                              : MakeGetTupleElement(c, p, j++));
    }
    return e;
  };
  LoopCloneOptions body_options = cond_options;
  body_options.root = [&](Computation& c, const InstructionMap& m) -> Instruction* {
    std::vector<Instruction*> e;
    for (int64_t i : kept) {
      auto it = m.find(body_root->operand(i));
      if (it == m.end() || it->second == nullptr) return nullptr;
      e.push_back(it->second);
    }
    return MakeTuple(c, e);
  };
  Computation* new_cond = CloneLoopComputation(*cond, module, cond_options);
  if (new_cond == nullptr) return false;
  Computation* new_body = CloneLoopComputation(*body, module, body_options);
  if (new_body == nullptr) {
    (void)module.RemoveComputation(new_cond);
    return false;
  }
  std::vector<Instruction*> init_elements;
  for (int64_t i : kept) init_elements.push_back(init->operand(i));
  Instruction* new_while =
      MakeWhileLike(*while_op, MakeTuple(parent, init_elements), new_cond, new_body);
  std::vector<Instruction*> result;
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    result.push_back(constant[i] ? init->operand(i) : MakeGetTupleElement(parent, new_while, j++));
  }
  ReplaceAndForward(while_op, MakeTuple(parent, result));
  return true;
}

// Scalar constants that the body passes through unchanged replace their get-tuple-elements in
// the condition and the body.
bool TryPropagateConstant(Instruction* while_op) {
  const Instruction* init = while_op->operand(0);
  Computation* body = while_op->while_body();
  const Instruction* body_root = body->root();
  if (init->opcode() != Opcode::kTuple || body_root->opcode() != Opcode::kTuple) return false;
  std::unordered_map<int64_t, const Instruction*> index_to_constant;
  for (int64_t i = 0; i < body_root->operand_count(); ++i) {
    const Instruction* out = body_root->operand(i);
    if (out->opcode() == Opcode::kGetTupleElement && out->operand(0) == body->parameter(0) &&
        out->tuple_index == i && out->shape().IsScalar() &&
        init->operand(i)->opcode() == Opcode::kConstant && init->operand(i)->literal.has_value()) {
      index_to_constant[i] = init->operand(i);
    }
  }
  if (index_to_constant.empty()) return false;
  bool changed = false;
  for (Computation* c : {while_op->while_condition(), body}) {
    if (c->parameter_count() != 1) continue;
    const std::vector<Instruction*> users = c->parameter(0)->users();
    for (Instruction* gte : users) {
      if (gte->opcode() != Opcode::kGetTupleElement ||
          !(gte->user_count() > 0 || c->root() == gte)) {
        continue;
      }
      auto it = index_to_constant.find(gte->tuple_index);
      if (it == index_to_constant.end()) continue;
      gte->ReplaceAllUsesWith(CloneInstruction(*it->second, *c, {}));
      changed = true;
    }
  }
  return changed;
}

// Trip count 0: the loop is its init. Trip count 1: the loop is its body, inlined.
bool TryRemoveWhileLoop(Instruction* while_op) {
  if (HasControlEdges(while_op)) return false;
  if (ComputationHasSideEffect(while_op->while_condition())) return false;
  std::optional<int64_t> trip_count = ComputeWhileLoopTripCount(while_op, 1);
  if (!trip_count.has_value()) return false;
  Computation& parent = *while_op->parent();
  if (*trip_count == 0) {
    ReplaceAndForward(while_op, while_op->operand(0));
    return true;
  }
  if (*trip_count != 1) return false;
  if (while_op->frontend_attributes.find("skip-simplify-while-loops_trip-count-one=\"true\"") !=
      std::string::npos) {
    return false;
  }
  if (ComputationHasSideEffect(while_op->while_body())) return false;
  Instruction* value = InlineComputation(*while_op->while_body(), parent, {while_op->operand(0)});
  ReplaceAndForward(while_op, value);
  return true;
}

void FlattenShape(const Shape& shape, std::vector<Shape>& leaves) {
  if (!shape.IsTuple()) {
    leaves.push_back(shape);
    return;
  }
  for (const Shape& e : shape.tuple_shapes()) FlattenShape(e, leaves);
}

// The leaves of tuple-valued `value`, depth first (get-tuple-elements where needed).
void FlatElements(Computation& c, Instruction* value, std::vector<Instruction*>& leaves) {
  if (!value->shape().IsTuple()) {
    leaves.push_back(value);
    return;
  }
  for (int64_t i = 0; i < value->shape().tuple_size(); ++i) {
    FlatElements(c, TupleElement(c, value, i), leaves);
  }
}

// A value of `shape` rebuilt from `leaves` starting at `pos`.
Instruction* Unflatten(Computation& c, const Shape& shape, const std::vector<Instruction*>& leaves,
                       size_t& pos) {
  if (!shape.IsTuple()) return leaves[pos++];
  std::vector<Instruction*> elements;
  for (const Shape& e : shape.tuple_shapes()) elements.push_back(Unflatten(c, e, leaves, pos));
  return MakeTuple(c, elements);
}

// A loop state with nested tuples becomes one flat tuple of its leaves.
bool TryFlattenNestedTuples(Instruction* while_op) {
  Computation& parent = *while_op->parent();
  ir::Module& module = *parent.parent();
  Instruction* init = while_op->operand(0);
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  if (init->opcode() != Opcode::kTuple || body->root()->opcode() != Opcode::kTuple ||
      HasControlEdges(while_op)) {
    return false;
  }
  const Shape while_shape = init->shape();
  bool nested = false;
  for (const Shape& e : while_shape.tuple_shapes()) nested |= e.IsTuple();
  if (!nested) return false;
  std::vector<Shape> leaf_shapes;
  FlattenShape(while_shape, leaf_shapes);
  // Old-state elements (top level) rebuilt from a flat state.
  auto nested_elements = [&](Computation& c, Instruction* flat) {
    std::vector<Instruction*> leaves;
    for (int64_t i = 0; i < static_cast<int64_t>(leaf_shapes.size()); ++i) {
      leaves.push_back(MakeGetTupleElement(c, flat, i));
    }
    std::vector<Instruction*> elements;
    size_t pos = 0;
    for (const Shape& e : while_shape.tuple_shapes()) {
      elements.push_back(Unflatten(c, e, leaves, pos));
    }
    return elements;
  };
  LoopCloneOptions cond_options;
  cond_options.param_shape = Shape::Tuple(leaf_shapes);
  cond_options.elements = nested_elements;
  LoopCloneOptions body_options = cond_options;
  body_options.root = [&](Computation& c, const InstructionMap& m) -> Instruction* {
    auto it = m.find(body->root());
    if (it == m.end() || it->second == nullptr) return nullptr;
    std::vector<Instruction*> leaves;
    FlatElements(c, it->second, leaves);
    return MakeTuple(c, leaves);
  };
  Computation* new_cond = CloneLoopComputation(*cond, module, cond_options);
  if (new_cond == nullptr) return false;
  Computation* new_body = CloneLoopComputation(*body, module, body_options);
  if (new_body == nullptr) {
    (void)module.RemoveComputation(new_cond);
    return false;
  }
  std::vector<Instruction*> init_leaves;
  FlatElements(parent, init, init_leaves);
  Instruction* new_while =
      MakeWhileLike(*while_op, MakeTuple(parent, init_leaves), new_cond, new_body);
  ReplaceAndForward(while_op, MakeTuple(parent, nested_elements(parent, new_while)));
  return true;
}

// XLA's TryMergeInductionVariables for one integer type: every element updated as `x += c`
// (c a scalar constant) becomes init + counter * c, with a single trip counter (an existing one,
// starting at 0 and incremented by 1, or a new last element). Returns the new loop or nullptr.
Instruction* TryMergeInductionVariables(Instruction* while_op, ir::PrimitiveType type) {
  Computation& parent = *while_op->parent();
  ir::Module& module = *parent.parent();
  Instruction* init = while_op->operand(0);
  const Computation* cond = while_op->while_condition();
  const Computation* body = while_op->while_body();
  const Instruction* body_root = body->root();
  if (init->opcode() != Opcode::kTuple || body_root->opcode() != Opcode::kTuple ||
      HasControlEdges(while_op)) {
    return nullptr;
  }
  const Shape& while_shape = init->shape();
  const int64_t n = while_shape.tuple_size();
  std::optional<int64_t> trip_counter;
  std::map<int64_t, const Instruction*> induction_vars;
  for (int64_t i = 0; i < n; ++i) {
    const Instruction* out = body_root->operand(i);
    if (out->opcode() != Opcode::kAdd || out->shape().element_type() != type ||
        !out->shape().IsArray() || out->shape().ElementCount() != 1) {
      continue;
    }
    const Instruction* constant = nullptr;
    for (int k = 0; k < 2; ++k) {
      const Instruction* gte = out->operand(k);
      const Instruction* other = out->operand(1 - k);
      if (gte->opcode() == Opcode::kGetTupleElement && gte->operand(0) == body->parameter(0) &&
          gte->tuple_index == i && other->opcode() == Opcode::kConstant &&
          other->literal.has_value() && other->shape().IsScalar()) {
        constant = other;
        break;
      }
    }
    if (constant == nullptr) continue;
    if (!trip_counter.has_value() && IsConstantWithValue(constant, 1) &&
        init->operand(i)->opcode() == Opcode::kConstant &&
        IsConstantWithValue(init->operand(i), 0)) {
      trip_counter = i;
    } else {
      induction_vars.emplace(i, constant);
    }
  }
  if (induction_vars.size() + (trip_counter.has_value() ? 1 : 0) < 2) return nullptr;

  std::vector<Shape> shapes = while_shape.tuple_shapes();
  const bool added_counter = !trip_counter.has_value();
  if (added_counter) {
    trip_counter = n;
    shapes.push_back(Shape::Scalar(type));
  }
  const Shape new_shape = Shape::Tuple(shapes);
  // Old-form elements from a new-form state: induction variables are init + counter * c.
  auto old_form = [&](Computation& c, Instruction* state) {
    std::vector<Instruction*> e;
    Instruction* counter = nullptr;
    for (int64_t i = 0; i < n; ++i) {
      auto it = induction_vars.find(i);
      Instruction* element = TupleElement(c, state, i);
      if (it == induction_vars.end()) {
        e.push_back(element);
        continue;
      }
      if (counter == nullptr) counter = TupleElement(c, state, *trip_counter);
      const Shape& s = while_shape.tuple_shapes(i);
      Instruction* cnt = counter;
      if (!cnt->shape().SameDimensions(s)) cnt = MakeReshape(c, cnt, s.dimensions());
      Instruction* step = CloneInstruction(*it->second, c, {});
      if (!step->shape().SameDimensions(s)) step = MakeReshape(c, step, s.dimensions());
      e.push_back(
          MakeBinary(c, Opcode::kAdd, element, MakeBinary(c, Opcode::kMultiply, cnt, step)));
    }
    return e;
  };
  LoopCloneOptions cond_options;
  cond_options.param_shape = new_shape;
  cond_options.elements = old_form;
  Computation* new_cond = CloneLoopComputation(*cond, module, cond_options);
  if (new_cond == nullptr) return nullptr;
  LoopCloneOptions body_options = cond_options;
  Instruction* body_param = nullptr;
  body_options.elements = [&](Computation& c, Instruction* p) {
    body_param = p;
    return old_form(c, p);
  };
  // New-form root: induction variables keep their init value, the counter advances.
  body_options.root = [&](Computation& c, const InstructionMap& m) -> Instruction* {
    std::vector<Instruction*> e;
    for (int64_t i = 0; i < n; ++i) {
      if (induction_vars.count(i)) {
        e.push_back(MakeGetTupleElement(c, body_param, i));
        continue;
      }
      auto it = m.find(body_root->operand(i));
      if (it == m.end() || it->second == nullptr) return nullptr;
      e.push_back(it->second);
    }
    if (added_counter) {
      e.push_back(MakeBinary(c, Opcode::kAdd, MakeGetTupleElement(c, body_param, n),
                             MakeScalarConstant(c, type, 1)));
    }
    return MakeTuple(c, e);
  };
  Computation* new_body = CloneLoopComputation(*body, module, body_options);
  if (new_body == nullptr) {
    (void)module.RemoveComputation(new_cond);
    return nullptr;
  }
  Instruction* new_init = init;
  if (added_counter) {
    std::vector<Instruction*> e(init->operands().begin(), init->operands().end());
    e.push_back(MakeScalarConstant(parent, type, 0));
    new_init = MakeTuple(parent, e);
  }
  Instruction* new_while = MakeWhileLike(*while_op, new_init, new_cond, new_body);
  ReplaceAndForward(while_op, MakeTuple(parent, old_form(parent, new_while)));
  return new_while;
}

class WhileLoopSimplifier : public Pass {
 public:
  std::string_view name() const override { return "simplify-while-loops"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    std::vector<Instruction*> while_ops;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* i : c->instructions()) {
        if (i->opcode() == Opcode::kWhile) while_ops.push_back(i);
      }
    }
    bool changed = false;
    // Loops replaced so far: their computations (and loops nested in them) are dead.
    std::unordered_set<const Computation*> dead;
    auto note = [&](Instruction* old_while) {
      dead.insert(old_while->while_condition());
      dead.insert(old_while->while_body());
      changed = true;
    };
    for (Instruction* while_op : while_ops) {
      if (dead.count(while_op->parent())) continue;
      if (CallerCount(module, while_op->while_body()) > 1 ||
          CallerCount(module, while_op->while_condition()) > 1 ||
          while_op->while_body()->parameter_count() != 1 ||
          while_op->while_condition()->parameter_count() != 1) {
        continue;
      }
      Computation* cond = while_op->while_condition();
      Computation* body = while_op->while_body();
      if (TryRemoveRepeatedWhileTupleIndices(while_op) != nullptr) {
        dead.insert(cond);
        dead.insert(body);
        changed = true;
        continue;
      }
      if (TryFlattenNestedTuples(while_op)) {
        dead.insert(cond);
        dead.insert(body);
        changed = true;
        continue;
      }
      if (TryRemoveDeadWhileParams(while_op)) {
        dead.insert(cond);
        dead.insert(body);
        changed = true;
        continue;
      }
      if (TryRemoveConstantParams(while_op)) {
        dead.insert(cond);
        dead.insert(body);
        changed = true;
        continue;
      }
      if (LoopContains(while_op,
                       {Opcode::kSend, Opcode::kSendDone, Opcode::kRecv, Opcode::kRecvDone})) {
        continue;
      }
      const bool contains_domain = LoopContains(while_op, {Opcode::kDomain});
      changed |= TryPropagateConstant(while_op);
      if (TryRemoveWhileLoop(while_op)) {
        dead.insert(cond);
        dead.insert(body);
        changed = true;
        continue;
      }
      if (contains_domain) continue;
      for (ir::PrimitiveType type :
           {ir::PrimitiveType::kS8, ir::PrimitiveType::kU8, ir::PrimitiveType::kS32,
            ir::PrimitiveType::kU32, ir::PrimitiveType::kS64, ir::PrimitiveType::kU64}) {
        Instruction* old = while_op;
        if (Instruction* merged = TryMergeInductionVariables(while_op, type)) {
          note(old);
          while_op = merged;
        }
      }
    }
    if (changed) {
      absl::StatusOr<std::unique_ptr<Pass>> dce = Registry::Global().Create("dce");
      if (!dce.ok()) return dce.status();
      if (absl::StatusOr<bool> s = (*dce)->Run(module); !s.ok()) return s.status();
    }
    return changed;
  }
};

}  // namespace

void RegisterWhileLoopSimplifier(Registry& registry) {
  registry.Register({"simplify-while-loops",
                     "removes dead, repeated and constant loop state, and loops running 0 or 1 "
                     "times; merges induction variables",
                     [] { return std::make_unique<WhileLoopSimplifier>(); }});
}

}  // namespace mltune::passes
