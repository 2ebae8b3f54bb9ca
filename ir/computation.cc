#include "ir/computation.h"

#include <algorithm>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ir/module.h"

namespace mltune::ir {

bool Computation::is_entry() const { return parent_ != nullptr && parent_->entry() == this; }

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instr) {
  Instruction* raw = instr.get();
  raw->parent_ = this;
  if (raw->unique_id() < 0 && parent_ != nullptr) raw->set_unique_id(parent_->NextUniqueId());
  if (raw->opcode() == Opcode::kParameter) {
    const int64_t n = raw->parameter_number;
    if (n >= 0 && n < (int64_t{1} << 20)) {
      if (static_cast<int64_t>(params_.size()) <= n) params_.resize(n + 1, nullptr);
      params_[n] = raw;
    }
  }
  // A new slot at the end; compaction renumbers every slot, so no compaction is needed here.
  raw->index_in_parent_ = static_cast<int64_t>(instructions_.size());
  instructions_.push_back(std::move(instr));
  return raw;
}

const std::vector<std::unique_ptr<Instruction>>& Computation::slots() const {
  if (removed_slots_ == 0) return instructions_;
  size_t out = 0;
  for (size_t in = 0; in < instructions_.size(); ++in) {
    if (instructions_[in] == nullptr) continue;
    instructions_[in]->index_in_parent_ = static_cast<int64_t>(out);
    if (out != in) instructions_[out] = std::move(instructions_[in]);
    ++out;
  }
  instructions_.resize(out);
  removed_slots_ = 0;
  return instructions_;
}

absl::Status Computation::RemoveInstruction(Instruction* instr) {
  if (instr == root_) {
    return absl::FailedPreconditionError(absl::StrCat("cannot remove root ", instr->name()));
  }
  if (instr->user_count() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove ", instr->name(), ": it still has users"));
  }
  const int64_t slot = instr->index_in_parent_;
  if (instr->parent_ != this || slot < 0 || slot >= static_cast<int64_t>(instructions_.size()) ||
      instructions_[slot].get() != instr) {
    return absl::NotFoundError(absl::StrCat(instr->name(), " is not in ", name_));
  }
  instr->ClearOperands();
  instr->DropAllControlDependencies();
  if (instr->opcode() == Opcode::kParameter) {
    std::replace(params_.begin(), params_.end(), instr, static_cast<Instruction*>(nullptr));
    while (!params_.empty() && params_.back() == nullptr) params_.pop_back();
  }
  instructions_[slot].reset();
  ++removed_slots_;
  return absl::OkStatus();
}

int64_t Computation::RemoveDeadInstructions() {
  std::unordered_set<Instruction*> live;
  std::vector<Instruction*> stack;
  auto mark = [&](Instruction* i) {
    if (i != nullptr && live.insert(i).second) stack.push_back(i);
  };
  mark(root_);
  for (const auto& i : slots()) {
    if (i->opcode() == Opcode::kParameter || i->HasSideEffect()) mark(i.get());
  }
  while (!stack.empty()) {
    Instruction* i = stack.back();
    stack.pop_back();
    for (Instruction* op : i->operands()) mark(op);
    for (Instruction* p : i->control_predecessors()) mark(p);
  }
  int64_t removed = 0;
  // Remove users before their operands: walk the reverse of a post-order.
  std::vector<Instruction*> order = MakePostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!live.count(*it)) {
      (*it)->DropAllControlDependencies();
      if (RemoveInstruction(*it).ok()) ++removed;
    }
  }
  return removed;
}

std::vector<Instruction*> Computation::instructions() const {
  std::vector<Instruction*> out;
  out.reserve(slots().size());
  for (const auto& i : instructions_) out.push_back(i.get());
  return out;
}

std::vector<Instruction*> Computation::MakePostOrder() const {
  // Iterative DFS from every instruction in insertion order, so unreachable ones appear too.
  const auto& all = slots();
  std::vector<Instruction*> order;
  order.reserve(all.size());
  std::vector<uint8_t> visited(all.size(), 0);
  auto first_visit = [&](const Instruction* i) {
    uint8_t& v = visited[static_cast<size_t>(i->index_in_parent_)];
    return v == 0 && (v = 1);
  };
  std::vector<std::pair<Instruction*, size_t>> stack;
  for (const auto& start : all) {
    if (!first_visit(start.get())) continue;
    stack.push_back({start.get(), 0});
    while (!stack.empty()) {
      auto& [instr, next] = stack.back();
      const size_t n_ops = instr->operands().size();
      const size_t n_total = n_ops + instr->control_predecessors().size();
      if (next < n_total) {
        Instruction* dep =
            next < n_ops ? instr->operands()[next] : instr->control_predecessors()[next - n_ops];
        ++next;
        if (dep->parent() == this && first_visit(dep)) stack.push_back({dep, 0});
      } else {
        order.push_back(instr);
        stack.pop_back();
      }
    }
  }
  return order;
}

Instruction* Computation::FindInstruction(std::string_view name) const {
  for (const auto& i : slots()) {
    if (i->name() == name) return i.get();
  }
  return nullptr;
}

}  // namespace mltune::ir
