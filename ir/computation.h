// A computation: a DAG of instructions with parameters and one root, owned by a Module.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/instruction.h"

namespace mltune::ir {

class Module;

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  Module* parent() const { return parent_; }
  bool is_entry() const;

  // Takes ownership; the instruction is appended to the instruction order. Parameters are also
  // recorded by parameter_number.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instr);
  // Removes an instruction with no users (and not the root). Its operands lose it as a user.
  absl::Status RemoveInstruction(Instruction* instr);
  // Removes every instruction not reachable from the root (keeping parameters and side-effecting
  // ones). Returns how many were removed.
  int64_t RemoveDeadInstructions();

  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // Instructions in insertion order (the printed order; for scheduled modules, the schedule).
  std::vector<Instruction*> instructions() const;
  int64_t instruction_count() const {
    return static_cast<int64_t>(instructions_.size()) - removed_slots_;
  }
  // Operands (and control predecessors) before users. Deterministic.
  std::vector<Instruction*> MakePostOrder() const;

  const std::vector<Instruction*>& parameters() const { return params_; }
  Instruction* parameter(int64_t i) const { return params_[i]; }
  int64_t parameter_count() const { return static_cast<int64_t>(params_.size()); }

  Instruction* FindInstruction(std::string_view name) const;

 private:
  friend class Module;
  // The instruction list without the slots of removed instructions.
  const std::vector<std::unique_ptr<Instruction>>& slots() const;

  std::string name_;
  Module* parent_ = nullptr;
  // Removal empties a slot; the next read compacts, so k removals in a row cost O(n), not O(kn).
  mutable std::vector<std::unique_ptr<Instruction>> instructions_;
  mutable int64_t removed_slots_ = 0;
  std::vector<Instruction*> params_;
  Instruction* root_ = nullptr;
};

}  // namespace mltune::ir
