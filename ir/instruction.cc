#include "ir/instruction.h"

#include <algorithm>

#include "ir/computation.h"

namespace mltune::ir {

Instruction::Instruction(Opcode opcode, Shape shape, std::string name)
    : opcode_(opcode), shape_(std::move(shape)), name_(std::move(name)) {}

void Instruction::AddUser(Instruction* user) {
  if (std::find(users_.begin(), users_.end(), user) == users_.end()) users_.push_back(user);
}

void Instruction::RemoveUser(Instruction* user) {
  // Still a user while any operand slot of `user` refers to this instruction.
  if (std::find(user->operands_.begin(), user->operands_.end(), this) != user->operands_.end()) {
    return;
  }
  users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
}

void Instruction::AppendOperand(Instruction* op) {
  operands_.push_back(op);
  op->AddUser(this);
}

void Instruction::ReplaceOperand(int64_t i, Instruction* new_op) {
  Instruction* old = operands_[i];
  if (old == new_op) return;
  operands_[i] = new_op;
  old->RemoveUser(this);
  new_op->AddUser(this);
}

void Instruction::ReplaceOperandEverywhere(Instruction* old_op, Instruction* new_op) {
  if (old_op == new_op) return;
  bool replaced = false;
  for (Instruction*& op : operands_) {
    if (op == old_op) {
      op = new_op;
      replaced = true;
    }
  }
  if (replaced) {
    old_op->RemoveUser(this);
    new_op->AddUser(this);
  }
}

void Instruction::ClearOperands() {
  std::vector<Instruction*> old = std::move(operands_);
  operands_.clear();
  for (Instruction* op : old) op->RemoveUser(this);
}

void Instruction::ReplaceAllUsesWith(Instruction* other) {
  if (other == this) return;
  std::vector<Instruction*> users = users_;
  for (Instruction* user : users) {
    if (user == other) continue;  // e.g. replacing x with f(x): f keeps using x
    user->ReplaceOperandEverywhere(this, other);
  }
  if (parent_ != nullptr && parent_->root() == this) parent_->set_root(other);
}

void Instruction::AddControlDependencyTo(Instruction* successor) {
  if (std::find(control_succs_.begin(), control_succs_.end(), successor) != control_succs_.end()) {
    return;
  }
  control_succs_.push_back(successor);
  successor->control_preds_.push_back(this);
}

void Instruction::DropAllControlDependencies() {
  for (Instruction* s : control_succs_) {
    auto& p = s->control_preds_;
    p.erase(std::remove(p.begin(), p.end(), this), p.end());
  }
  for (Instruction* p : control_preds_) {
    auto& s = p->control_succs_;
    s.erase(std::remove(s.begin(), s.end(), this), s.end());
  }
  control_succs_.clear();
  control_preds_.clear();
}

const RawAttribute* Instruction::FindExtraAttribute(std::string_view name) const {
  for (const RawAttribute& a : extra_attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool Instruction::HasSideEffect() const {
  if (opcode_ == Opcode::kCustomCall) return custom_call_has_side_effect;
  return ::mltune::ir::HasSideEffect(opcode_);
}

}  // namespace mltune::ir
