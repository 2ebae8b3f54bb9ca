#include "ir/module.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace mltune::ir {

Computation* Module::AddComputation(std::unique_ptr<Computation> c) {
  Computation* raw = c.get();
  raw->parent_ = this;
  for (const auto& i : raw->slots()) {
    if (i->unique_id() < 0) i->set_unique_id(NextUniqueId());
  }
  computations_.push_back(std::move(c));
  return raw;
}

absl::Status Module::RemoveComputation(Computation* c) {
  if (c == entry_) return absl::FailedPreconditionError("cannot remove the entry computation");
  for (const auto& other : computations_) {
    for (const auto& i : other->slots()) {
      const auto& called = i->called_computations();
      if (std::find(called.begin(), called.end(), c) != called.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("computation ", c->name(), " is still called by ", i->name()));
      }
    }
  }
  auto it = std::find_if(computations_.begin(), computations_.end(),
                         [&](const auto& p) { return p.get() == c; });
  if (it == computations_.end()) return absl::NotFoundError(c->name());
  computations_.erase(it);
  return absl::OkStatus();
}

std::vector<Computation*> Module::computations() const {
  std::vector<Computation*> out;
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

Computation* Module::FindComputation(std::string_view name) const {
  for (const auto& c : computations_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

std::vector<Computation*> Module::MakeComputationPostOrder() const {
  std::vector<Computation*> order;
  if (entry_ == nullptr) return order;
  std::unordered_set<Computation*> visited;
  std::vector<std::pair<Computation*, std::vector<Computation*>>> stack;
  auto callees = [](Computation* c) {
    std::vector<Computation*> out;
    for (Instruction* i : c->instructions()) {
      for (Computation* callee : i->called_computations()) out.push_back(callee);
    }
    std::reverse(out.begin(), out.end());  // popped from the back: visit in call order
    return out;
  };
  visited.insert(entry_);
  stack.push_back({entry_, callees(entry_)});
  while (!stack.empty()) {
    auto& [comp, pending] = stack.back();
    if (pending.empty()) {
      order.push_back(comp);
      stack.pop_back();
      continue;
    }
    Computation* next = pending.back();
    pending.pop_back();
    if (visited.insert(next).second) stack.push_back({next, callees(next)});
  }
  return order;
}

std::string Module::UniqueInstructionName(std::string_view prefix) {
  if (!used_names_built_) {
    for (const auto& c : computations_) {
      for (const auto& i : c->slots()) used_names_.insert(i->name());
    }
    used_names_built_ = true;
  }
  // Strip a trailing ".N" so repeated rewrites of `add.3` give `add.4`-style names, not
  // `add.3.1.1`.
  std::string base(prefix);
  if (size_t dot = base.rfind('.'); dot != std::string::npos && dot + 1 < base.size() &&
                                    base.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
    base.resize(dot);
  }
  if (base.empty()) base = "instr";
  std::string candidate = base;
  while (used_names_.count(candidate)) candidate = absl::StrCat(base, ".", ++name_counter_);
  used_names_.insert(candidate);
  return candidate;
}

int64_t Module::instruction_count() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += c->instruction_count();
  return n;
}

std::unique_ptr<Module> Module::Clone() const {
  auto copy = std::make_unique<Module>(name_);
  copy->is_scheduled = is_scheduled;
  copy->input_output_alias = input_output_alias;
  copy->entry_computation_layout = entry_computation_layout;
  copy->extra_attributes = extra_attributes;
  copy->next_id_ = next_id_;
  std::unordered_map<const Computation*, Computation*> comp_map;
  std::unordered_map<const Instruction*, Instruction*> instr_map;
  for (const auto& c : computations_) {
    auto nc = std::make_unique<Computation>(c->name());
    comp_map[c.get()] = nc.get();
    copy->AddComputation(std::move(nc));
  }
  for (const auto& c : computations_) {
    Computation* nc = comp_map[c.get()];
    for (const auto& i : c->slots()) {
      auto ni = std::make_unique<Instruction>(i->opcode(), i->shape(), i->name());
      static_cast<InstructionAttributes&>(*ni) = static_cast<const InstructionAttributes&>(*i);
      ni->set_unique_id(i->unique_id());
      ni->set_source_line(i->source_line());
      for (Computation* called : i->called_computations()) {
        ni->mutable_called_computations().push_back(comp_map.at(called));
      }
      instr_map[i.get()] = nc->AddInstruction(std::move(ni));
    }
    for (const auto& i : c->slots()) {
      Instruction* ni = instr_map[i.get()];
      for (Instruction* op : i->operands()) ni->AppendOperand(instr_map.at(op));
      for (Instruction* s : i->control_successors()) ni->AddControlDependencyTo(instr_map.at(s));
    }
    if (c->root() != nullptr) nc->set_root(instr_map.at(c->root()));
  }
  if (entry_ != nullptr) copy->entry_ = comp_map.at(entry_);
  return copy;
}

}  // namespace mltune::ir
