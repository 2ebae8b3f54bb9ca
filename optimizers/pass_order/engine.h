// Internal to mltune_opt_pass_order: immutable module states and the transition cache shared by
// PassOrderEnv, its forks and PassOrderProblem.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/pass.h"

namespace mltune::opt::pass_order::internal {

// One module state, never modified once built. Its fingerprint is computed on first use: most
// children a search scores are never stepped from, and fingerprinting costs more than cloning.
struct Node : std::enable_shared_from_this<Node> {
  std::unique_ptr<const ir::Module> module;
  int64_t op_count = 0;
  int64_t instructions = 0;
  double score = 0;
  mutable std::string fingerprint;                   // "" until Engine::Fingerprint
  mutable std::unique_ptr<Observation> observation;  // built on first use
};
using NodePtr = std::shared_ptr<const Node>;

struct Applied {
  NodePtr node;  // the input node when nothing changed
  bool changed = false;
  std::string error;  // the pass failed or produced an invalid module
};

class Engine {
 public:
  static absl::StatusOr<std::shared_ptr<Engine>> Create(const PassOrderOptions& options);

  // A node for a copy of `module`, which must verify.
  absl::StatusOr<NodePtr> AddRoot(const ir::Module& module);
  // Applies action `a` to `from`: a cache lookup when (fingerprint, a) was seen and its result
  // is still alive, else one pass run on a copy. `exact`: a result structurally identical to
  // `from` counts as unchanged (costs its fingerprint); otherwise only the pass's own verdict
  // counts (passes report no change only when there is none, so this differs just for passes
  // that report a change and undo it).
  Applied Apply(const NodePtr& from, int a, bool exact);
  const std::string& Fingerprint(const Node& node);
  const Observation& Observe(const Node& node);

  int action_count() const { return static_cast<int>(names_.size()); }
  const std::vector<std::string>& action_names() const { return names_; }
  int ActionIndex(std::string_view name) const;
  const std::vector<PassFailure>& failures() const { return failures_; }
  PassOrderStats stats() const;
  int64_t cache_instructions() const { return options_.cache_instructions; }

 private:
  struct Transition {
    bool changed = false;
    std::weak_ptr<const Node> result;  // when changed
    std::string error;
  };

  Engine(PassOrderOptions options, std::vector<std::unique_ptr<passes::Pass>> passes,
         std::vector<std::string> names);
  NodePtr NewNode(std::unique_ptr<ir::Module> module, std::string fingerprint);
  NodePtr Lookup(const std::string& fingerprint);
  void Pin(const NodePtr& node);
  void Record(const Node& from, int a, Transition t);
  Applied Fail(const NodePtr& from, int a, std::string message);

  PassOrderOptions options_;
  std::vector<std::unique_ptr<passes::Pass>> passes_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Transition> transitions_;  // "<fingerprint>/<action>"
  // Nodes by fingerprint (those whose fingerprint is known), to share equal modules.
  std::unordered_map<std::string, std::weak_ptr<const Node>> nodes_;
  // A copy of `scratch_source_` that a pass ran on and left unchanged: the next pass on the same
  // source runs on it instead of a fresh clone, so trying every pass on one module (greedy, beam,
  // masks) clones once per pass that changes something rather than once per pass.
  NodePtr scratch_source_;
  std::unique_ptr<ir::Module> scratch_;
  // Most recently used first; keeps results alive up to options_.cache_instructions.
  std::list<NodePtr> pinned_;
  std::unordered_map<const Node*, std::list<NodePtr>::iterator> pin_index_;
  int64_t pinned_instructions_ = 0;
  std::vector<PassFailure> failures_;
  PassOrderStats stats_;
};

}  // namespace mltune::opt::pass_order::internal
