// simplify-conditional: XLA's ConditionalSimplifier. Per conditional (none calling send/recv or
// collectives, none with a sharding):
//   - result elements that every branch computes from the same instruction are merged (users read
//     the first);
//   - result elements nobody reads are dropped from every branch (branches are cloned);
//   - a conditional nobody uses gets empty-tuple branch roots;
//   - a side-effect-free conditional with one branch, or a constant predicate/index (out of range
//     picks the last branch), is replaced by the chosen branch, inlined; one with a pred and two
//     cheap branches (elementwise ops, broadcasts, slices, reshapes, reduces, ..., neither a mere
//     forwarding of its parameter) becomes both branches inlined plus a select;
// then, per branch computation, parameter tuple elements no branch reads are removed from the
// parameter and from the operand of every conditional calling it (the branch is cloned). dce runs
// after a change (XLA leaves the replaced instructions to the next dce).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
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

bool CallsChannelInstructions(const Instruction* instr) {
  std::vector<const Computation*> worklist(instr->called_computations().begin(),
                                           instr->called_computations().end());
  std::unordered_set<const Computation*> seen;
  while (!worklist.empty()) {
    const Computation* c = worklist.back();
    worklist.pop_back();
    if (!seen.insert(c).second) continue;
    for (const Instruction* i : c->instructions()) {
      const Opcode op = i->opcode();
      if (op == Opcode::kSend || op == Opcode::kSendDone || op == Opcode::kRecv ||
          op == Opcode::kRecvDone || ir::IsCollective(op)) {
        return true;
      }
      worklist.insert(worklist.end(), i->called_computations().begin(),
                      i->called_computations().end());
    }
  }
  return false;
}

// A computation that only forwards (parameters, tuples, get-tuple-elements) an array somewhere.
bool ComputationIsEmptyWithArrayRoot(const Computation* c) {
  for (const Instruction* i : c->instructions()) {
    if (i->opcode() != Opcode::kTuple && i->opcode() != Opcode::kGetTupleElement &&
        i->opcode() != Opcode::kParameter) {
      return false;
    }
  }
  std::function<bool(const Shape&)> contains_array = [&](const Shape& s) {
    if (s.IsArray()) return true;
    for (const Shape& e : s.tuple_shapes()) {
      if (contains_array(e)) return true;
    }
    return false;
  };
  return contains_array(c->root()->shape());
}

bool InstructionIsExpensive(const Instruction* i) {
  switch (i->opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kConcatenate:
    case Opcode::kDynamicSlice:
    case Opcode::kGetTupleElement:
    case Opcode::kReduce:
    case Opcode::kReshape:
    case Opcode::kPad:
    case Opcode::kParameter:
    case Opcode::kSlice:
    case Opcode::kTuple:
    case Opcode::kConstant:  // elementwise in XLA
    case Opcode::kMap:
      return false;
    default:
      return !ir::IsElementwise(i->opcode());
  }
}

class ConditionalSimplifier : public Pass {
 public:
  std::string_view name() const override { return "simplify-conditional"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    std::vector<Instruction*> conditionals;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* i : c->MakePostOrder()) {
        if (i->opcode() == Opcode::kConditional && i->sharding.empty() &&
            !CallsChannelInstructions(i)) {
          conditionals.push_back(i);
        }
      }
    }
    bool changed = false;
    // Computations replaced by clones (and conditionals nested in them) are dead.
    dead_.clear();
    std::unordered_set<const Instruction*> removed;
    for (Instruction* conditional : conditionals) {
      if (dead_.count(conditional->parent())) {
        removed.insert(conditional);
        continue;
      }
      changed |= MergeDuplicateTupleElements(conditional);
      changed |= RemoveUnusedTupleElements(module, conditional);
      changed |= ReplaceRootWithEmptyTupleIfNoUsers(module, conditional);
      if (TryRemoveConditional(conditional)) {
        removed.insert(conditional);
        changed = true;
      }
    }
    std::vector<Computation*> branches;
    std::unordered_map<Computation*, std::vector<Instruction*>> callers;
    for (Instruction* conditional : conditionals) {
      if (removed.count(conditional)) continue;
      for (Computation* branch : conditional->called_computations()) {
        std::vector<Instruction*>& list = callers[branch];
        if (list.empty()) branches.push_back(branch);
        if (std::find(list.begin(), list.end(), conditional) == list.end()) {
          list.push_back(conditional);
        }
      }
    }
    for (Computation* branch : branches) {
      changed |= TryRemoveUnusedConditionalOperands(module, branch, callers[branch]);
    }
    if (changed) {
      absl::StatusOr<std::unique_ptr<Pass>> dce = Registry::Global().Create("dce");
      if (!dce.ok()) return dce.status();
      if (absl::StatusOr<bool> s = (*dce)->Run(module); !s.ok()) return s.status();
    }
    return changed;
  }

 private:
  // Users of result element j that every branch computes from the same instruction as an earlier
  // element i read element i instead.
  static bool MergeDuplicateTupleElements(Instruction* conditional) {
    RemoveDeadUsers(conditional);
    if (conditional->user_count() == 0 || conditional->parent()->root() == conditional ||
        !conditional->shape().IsTuple()) {
      return false;
    }
    for (const Instruction* user : conditional->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) return false;
    }
    for (const Computation* branch : conditional->called_computations()) {
      if (branch->root()->opcode() != Opcode::kTuple) return false;
    }
    std::map<std::vector<const Instruction*>, int64_t> first;
    bool changed = false;
    for (int64_t i = 0; i < conditional->shape().tuple_size(); ++i) {
      std::vector<const Instruction*> sources;
      for (const Computation* branch : conditional->called_computations()) {
        sources.push_back(branch->root()->operand(i));
      }
      auto [it, inserted] = first.emplace(sources, i);
      if (inserted) continue;
      for (Instruction* user : conditional->users()) {
        if (user->tuple_index == i) {
          user->tuple_index = it->second;
          changed = true;
        }
      }
    }
    return changed;
  }

  // Dead get-tuple-element users would keep elements alive until the next dce; drop them now so
  // one run does what two would.
  static void RemoveDeadUsers(Instruction* instr) {
    const std::vector<Instruction*> users = instr->users();
    for (Instruction* user : users) {
      if (user->opcode() == Opcode::kGetTupleElement && IsSafelyRemovable(user)) {
        (void)user->parent()->RemoveInstruction(user);
      }
    }
  }

  // Drops the result elements no user reads (branches are cloned with a narrower root).
  bool RemoveUnusedTupleElements(ir::Module& module, Instruction* conditional) {
    if (conditional->user_count() == 0 || conditional->parent()->root() == conditional ||
        !conditional->shape().IsTuple()) {
      return false;
    }
    const Shape old_shape = conditional->shape();
    const int64_t n = old_shape.tuple_size();
    std::vector<bool> used(n, false);
    for (const Instruction* user : conditional->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) return false;
      used[user->tuple_index] = true;
    }
    if (std::count(used.begin(), used.end(), true) == n) return false;
    for (const Computation* branch : conditional->called_computations()) {
      if (!branch->root()->shape().IsTuple() || !branch->root()->shape().Compatible(old_shape)) {
        return false;
      }
    }
    std::vector<int64_t> old_to_new(n, -1);
    std::vector<Shape> shapes;
    for (int64_t i = 0; i < n; ++i) {
      if (!used[i]) continue;
      old_to_new[i] = static_cast<int64_t>(shapes.size());
      shapes.push_back(old_shape.tuple_shapes(i));
    }
    std::vector<Computation*>& branches = conditional->mutable_called_computations();
    std::unordered_map<Computation*, Computation*> cloned;  // a branch used twice, cloned once
    for (Computation*& branch : branches) {
      auto it = cloned.find(branch);
      if (it != cloned.end()) {
        branch = it->second;
        continue;
      }
      Computation* clone = CloneComputation(*branch, module);
      std::vector<Instruction*> elements;
      for (int64_t i = 0; i < n; ++i) {
        if (used[i]) elements.push_back(TupleElement(*clone, clone->root(), i));
      }
      clone->set_root(MakeTuple(*clone, elements));
      RemoveDeadCode(*clone);
      cloned[branch] = clone;
      dead_.insert(branch);
      branch = clone;
    }
    conditional->set_shape(Shape::Tuple(shapes));
    for (Instruction* user : conditional->users())
      user->tuple_index = old_to_new[user->tuple_index];
    return true;
  }

  bool ReplaceRootWithEmptyTupleIfNoUsers(ir::Module& module, Instruction* conditional) {
    const Shape empty = Shape::Tuple({});
    if (conditional->user_count() != 0 || conditional->parent()->root() == conditional ||
        conditional->shape().Compatible(empty)) {
      return false;
    }
    std::unordered_map<Computation*, Computation*> cloned;
    for (Computation*& branch : conditional->mutable_called_computations()) {
      auto it = cloned.find(branch);
      if (it != cloned.end()) {
        branch = it->second;
        continue;
      }
      Computation* clone = CloneComputation(*branch, module);
      clone->set_root(MakeTuple(*clone, {}));
      RemoveDeadCode(*clone);
      cloned[branch] = clone;
      dead_.insert(branch);
      branch = clone;
    }
    conditional->set_shape(empty);
    return true;
  }

  // One branch, or a constant branch index: the chosen branch inlined. Two cheap branches on a
  // pred: both inlined, then a select.
  static bool TryRemoveConditional(Instruction* conditional) {
    if (HasControlEdges(conditional) || HasSideEffectRecursive(conditional)) return false;
    Computation& parent = *conditional->parent();
    const std::vector<Computation*>& branches = conditional->called_computations();
    const int64_t count = static_cast<int64_t>(branches.size());
    auto inline_branch = [&](int64_t b) {
      return InlineComputation(*branches[b], parent, {conditional->operand(1 + b)});
    };
    const Instruction* index = conditional->operand(0);
    std::optional<int64_t> chosen;
    if (count == 1) {
      chosen = 0;
    } else if (index->opcode() == Opcode::kConstant && index->literal.has_value()) {
      if (index->shape().element_type() == ir::PrimitiveType::kPred) {
        chosen = index->literal->GetAsBool(0) ? 0 : 1;
      } else {
        const int64_t v = index->literal->GetAsInt64(0);
        chosen = v < 0 || v >= count ? count - 1 : v;
      }
    }
    if (chosen.has_value()) {
      ReplaceAndForward(conditional, inline_branch(*chosen));
      return true;
    }
    if (count != 2 || index->shape().element_type() != ir::PrimitiveType::kPred) return false;
    for (const Computation* branch : branches) {
      for (const Instruction* i : branch->instructions()) {
        if (InstructionIsExpensive(i)) return false;
      }
    }
    if (ComputationIsEmptyWithArrayRoot(branches[0]) ||
        ComputationIsEmptyWithArrayRoot(branches[1])) {
      return false;
    }
    Instruction* pred = conditional->operand(0);
    Instruction* on_true = inline_branch(0);
    Instruction* on_false = inline_branch(1);
    std::function<Instruction*(Instruction*, Instruction*)> select = [&](Instruction* t,
                                                                         Instruction* f) {
      if (f->shape().IsToken()) return AddInstr(parent, Opcode::kAfterAll, f->shape(), {t, f});
      if (f->shape().IsArray()) {
        Instruction* p = pred;
        if (!f->shape().IsScalar()) p = MakeBroadcast(parent, pred, f->shape().dimensions(), {});
        return AddInstr(parent, Opcode::kSelect,
                        Shape(f->shape().element_type(), f->shape().dimensions()), {p, t, f});
      }
      std::vector<Instruction*> elements;
      for (int64_t i = 0; i < f->shape().tuple_size(); ++i) {
        elements.push_back(select(TupleElement(parent, t, i), TupleElement(parent, f, i)));
      }
      return MakeTuple(parent, elements);
    };
    ReplaceAndForward(conditional, select(on_true, on_false));
    return true;
  }

  // Parameter tuple elements no instruction of `branch` reads are removed: every conditional in
  // `callers` calls a clone with the narrower parameter and passes only the kept elements.
  bool TryRemoveUnusedConditionalOperands(ir::Module& module, Computation* branch,
                                          const std::vector<Instruction*>& callers) {
    if (branch->parameter_count() != 1) return false;
    Instruction* param = branch->parameter(0);
    if (param == branch->root() || !param->shape().IsTuple()) return false;
    RemoveDeadUsers(param);
    std::set<int64_t> keep;
    for (const Instruction* user : param->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) return false;
      keep.insert(user->tuple_index);
    }
    const int64_t n = param->shape().tuple_size();
    if (static_cast<int64_t>(keep.size()) == n) return false;
    std::vector<int64_t> old_to_new(n, -1);
    std::vector<Shape> shapes;
    for (int64_t i : keep) {
      old_to_new[i] = static_cast<int64_t>(shapes.size());
      shapes.push_back(param->shape().tuple_shapes(i));
    }
    Computation* clone = CloneComputation(*branch, module);
    Instruction* new_param = clone->parameter(0);
    new_param->set_shape(Shape::Tuple(shapes));
    for (Instruction* user : new_param->users()) user->tuple_index = old_to_new[user->tuple_index];
    for (Instruction* conditional : callers) {
      if (!conditional->sharding.empty()) continue;
      std::vector<Computation*>& called = conditional->mutable_called_computations();
      for (size_t b = 0; b < called.size(); ++b) {
        if (called[b] != branch) continue;
        called[b] = clone;
        Computation& parent = *conditional->parent();
        Instruction* operand = conditional->operand(1 + b);
        std::vector<Instruction*> elements;
        for (int64_t i : keep) elements.push_back(TupleElement(parent, operand, i));
        conditional->ReplaceOperand(1 + b, MakeTuple(parent, elements));
      }
    }
    return true;
  }

  std::unordered_set<const Computation*> dead_;
};

}  // namespace

void RegisterConditionalSimplifier(Registry& registry) {
  registry.Register({"simplify-conditional",
                     "removes conditionals with constant predicates or cheap branches, and unused "
                     "conditional results and operands",
                     [] { return std::make_unique<ConditionalSimplifier>(); }});
}

}  // namespace mltune::passes
