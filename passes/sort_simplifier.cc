// simplify-sorts: XLA's SortSimplifier. A variadic sort whose users are all get-tuple-elements
// drops every operand whose result nobody reads and whose comparator parameters are unused; the
// comparator is rebuilt without those parameters. Sorts that are their computation's root are
// left alone (their users are unknown).
#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
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

// A copy of `comparator` taking only the parameter pairs of the operands in `used` (renumbered).
Computation* ShrinkComparator(ir::Module& module, const Computation& comparator,
                              const std::set<int64_t>& used, const Instruction& sort) {
  Computation* c = module.AddComputation(
      std::make_unique<Computation>(UniqueComputationName(module, comparator.name())));
  InstructionMap map;
  int64_t number = 0;
  for (int64_t i : used) {
    const Shape scalar = Shape::Scalar(sort.operand(i)->shape().element_type());
    map[comparator.parameter(2 * i)] =
        MakeParameter(*c, number++, scalar, absl::StrCat("p.", i, ".lhs"));
    map[comparator.parameter(2 * i + 1)] =
        MakeParameter(*c, number++, scalar, absl::StrCat("p.", i, ".rhs"));
  }
  for (Instruction* i : comparator.MakePostOrder()) {
    if (i->opcode() == Opcode::kParameter) continue;
    std::vector<Instruction*> operands;
    for (Instruction* op : i->operands()) operands.push_back(map.at(op));
    map[i] = CloneInstruction(*i, *c, operands);
  }
  for (Instruction* i : comparator.instructions()) {
    if (i->opcode() == Opcode::kParameter) continue;
    for (Instruction* succ : i->control_successors())
      map.at(i)->AddControlDependencyTo(map.at(succ));
  }
  c->set_root(map.at(comparator.root()));
  return c;
}

bool RemoveUnusedOperandFromSort(ir::Module& module, Instruction* sort) {
  if (!sort->shape().IsTuple() || sort->parent()->root() == sort || sort->to_apply() == nullptr) {
    return false;
  }
  const Computation& comparator = *sort->to_apply();
  const int64_t n = sort->operand_count();
  if (comparator.parameter_count() != 2 * n) return false;
  std::set<int64_t> used;
  for (const Instruction* user : sort->users()) {
    if (user->opcode() != Opcode::kGetTupleElement) return false;
    used.insert(user->tuple_index);
  }
  for (int64_t i = 0; i < 2 * n; ++i) {
    if (comparator.parameter(i)->user_count() > 0 || comparator.root() == comparator.parameter(i)) {
      used.insert(i / 2);
    }
  }
  if (static_cast<int64_t>(used.size()) == n) return false;
  // A sort with no used operand at all still needs one: keep the first.
  if (used.empty()) used.insert(0);
  Computation& c = *sort->parent();
  std::vector<Instruction*> operands;
  std::vector<Shape> shapes;
  for (int64_t i : used) {
    operands.push_back(sort->operand(i));
    shapes.push_back(sort->operand(i)->shape());
  }
  Instruction* new_sort = CloneInstruction(*sort, c, operands);
  new_sort->set_shape(shapes.size() == 1 ? shapes[0] : Shape::Tuple(shapes));
  new_sort->mutable_called_computations() = {ShrinkComparator(module, comparator, used, *sort)};
  std::unordered_map<int64_t, Instruction*> result;
  if (new_sort->shape().IsTuple()) {
    int64_t k = 0;
    for (int64_t i : used) result[i] = MakeGetTupleElement(c, new_sort, k++);
  } else {
    result[*used.begin()] = new_sort;
  }
  const std::vector<Instruction*> users = sort->users();
  for (Instruction* user : users) {
    user->ReplaceAllUsesWith(result.at(user->tuple_index));
    (void)c.RemoveInstruction(user);
  }
  (void)c.RemoveInstruction(sort);
  return true;
}

class SortSimplifier : public Pass {
 public:
  std::string_view name() const override { return "simplify-sorts"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    std::vector<Computation*> comparators;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> sorts;
      for (Instruction* i : c->instructions()) {
        if (i->opcode() == Opcode::kSort && i->control_predecessors().empty() &&
            i->control_successors().empty()) {
          sorts.push_back(i);
        }
      }
      for (Instruction* sort : sorts) {
        Computation* comparator = sort->to_apply();
        if (RemoveUnusedOperandFromSort(module, sort)) {
          changed = true;
          if (std::find(comparators.begin(), comparators.end(), comparator) == comparators.end()) {
            comparators.push_back(comparator);
          }
        }
      }
    }
    for (Computation* comparator : comparators) {
      const std::vector<Computation*> all = module.computations();
      if (std::find(all.begin(), all.end(), comparator) != all.end()) {
        RemoveComputationIfUnused(module, comparator);
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterSortSimplifier(Registry& registry) {
  registry.Register({"simplify-sorts", "removes sort operands nobody reads",
                     [] { return std::make_unique<SortSimplifier>(); }});
}

}  // namespace mltune::passes
