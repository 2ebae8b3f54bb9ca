#include "ir/print_order.h"

#include <unordered_set>
#include <utility>

namespace mltune::ir {
namespace {

// Appends `start` to `order` after whatever of `deps(node)` is not yet in it, depth first, so a
// node's position only moves when something it depends on comes later in the stored order.
// Iterative, since computations can hold long chains of instructions.
template <typename Node, typename Deps>
void VisitPostOrder(const Node* start, const Deps& deps, std::unordered_set<const Node*>& visited,
                    std::vector<const Node*>& order) {
  if (!visited.insert(start).second) return;
  std::vector<std::pair<const Node*, std::vector<const Node*>>> stack;
  stack.push_back({start, deps(start)});
  while (!stack.empty()) {
    auto& [node, pending] = stack.back();
    if (pending.empty()) {
      order.push_back(node);
      stack.pop_back();
      continue;
    }
    const Node* next = pending.back();
    pending.pop_back();
    if (visited.insert(next).second) stack.push_back({next, deps(next)});
  }
}

}  // namespace

std::vector<const Instruction*> DefinitionOrder(const Computation& computation) {
  // Dependencies are popped from the back, so they are listed in reverse to be visited in
  // operand order (then control predecessors), as the stored order would have them.
  auto deps = [&computation](const Instruction* instr) {
    std::vector<const Instruction*> out;
    const auto& preds = instr->control_predecessors();
    const auto& operands = instr->operands();
    for (auto it = preds.rbegin(); it != preds.rend(); ++it) {
      if ((*it)->parent() == &computation) out.push_back(*it);
    }
    for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
      if ((*it)->parent() == &computation) out.push_back(*it);
    }
    return out;
  };
  const std::vector<Instruction*> stored = computation.instructions();
  std::vector<const Instruction*> order;
  order.reserve(stored.size());
  std::unordered_set<const Instruction*> visited;
  visited.reserve(stored.size());
  for (const Instruction* instr : stored) {
    if (instr != computation.root()) VisitPostOrder(instr, deps, visited, order);
  }
  if (computation.root() != nullptr) VisitPostOrder(computation.root(), deps, visited, order);
  return order;
}

std::vector<const Computation*> CalleesFirstOrder(const Module& module) {
  auto callees = [](const Computation* c) {
    std::vector<const Computation*> out;
    for (const Instruction* instr : c->instructions()) {
      for (const Computation* callee : instr->called_computations()) out.push_back(callee);
    }
    return std::vector<const Computation*>(out.rbegin(), out.rend());
  };
  const std::vector<Computation*> stored = module.computations();
  std::vector<const Computation*> order;
  order.reserve(stored.size());
  std::unordered_set<const Computation*> visited;
  for (const Computation* c : stored) {
    if (c != module.entry()) VisitPostOrder(c, callees, visited, order);
  }
  if (module.entry() != nullptr) VisitPostOrder(module.entry(), callees, visited, order);
  return order;
}

}  // namespace mltune::ir
