// An HLO module: computations (callees before callers, as XLA prints them), the entry, and
// module-level attributes.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/computation.h"

namespace mltune::ir {

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  Computation* AddComputation(std::unique_ptr<Computation> c);
  // Removes a computation no instruction calls. The entry cannot be removed.
  absl::Status RemoveComputation(Computation* c);
  std::vector<Computation*> computations() const;
  int64_t computation_count() const { return static_cast<int64_t>(computations_.size()); }
  Computation* FindComputation(std::string_view name) const;
  // Callees before callers, entry last, reachable from the entry only.
  std::vector<Computation*> MakeComputationPostOrder() const;

  Computation* entry() const { return entry_; }
  void set_entry(Computation* c) { entry_ = c; }

  // Hands out ids for new instructions so names and ids stay unique.
  int64_t NextUniqueId() { return next_id_++; }
  // Returns `prefix` or `prefix.N`, unused by any instruction in the module, and reserves it.
  // Amortised O(1): the set of names is built on first use and then kept up to date by this call.
  std::string UniqueInstructionName(std::string_view prefix);

  int64_t instruction_count() const;

  // Module attributes.
  bool is_scheduled = false;
  std::vector<IoAlias> input_output_alias;
  // entry_computation_layout text ("{(f32[2]{0})->f32[2]{0}}") when present; other module
  // attributes as raw text.
  std::string entry_computation_layout;
  std::vector<RawAttribute> extra_attributes;

  // Deep copy: same text, fresh objects.
  std::unique_ptr<Module> Clone() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  int64_t next_id_ = 0;
  int64_t name_counter_ = 0;
  std::unordered_set<std::string> used_names_;
  bool used_names_built_ = false;
};

}  // namespace mltune::ir
