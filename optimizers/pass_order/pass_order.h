// Pass ordering as an environment and as a search problem.
//
// PassOrderEnv is the CompilerGym-style API (Reset, Step -> {observation, reward, done}, Fork,
// ActionMask) for agents; PassOrderProblem adapts the same machinery to opt::Problem for the
// strategies of optimizers/core. Both share one transition cache per module: results are keyed by
// (module fingerprint, pass), so a pass already run on an identical module costs a lookup, and
// states are immutable modules shared copy-on-write, so Fork is O(1) and the only clone is the one
// a pass runs on. Not thread-safe: forks share the cache. docs/search.md has the semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/observation.h"

namespace mltune::passes {
class Registry;
}

namespace mltune::opt::pass_order {

struct PassOrderOptions {
  // The action space, in order. Empty: every pass of `registry`, sorted by name.
  std::vector<std::string> passes;
  const passes::Registry* registry = nullptr;  // nullptr: passes::Registry::Global()
  // Env: steps per episode. Search: the longest sequence.
  int64_t episode_length = 40;
  // A score to minimise instead of the op count (e.g. a cost model); called once per distinct
  // module.
  ScoreFn cost_model;
  // Verify every module a pass changed; an invalid result counts as a failed pass.
  bool verify = true;
  // Modules kept for reuse by the transition cache, in instructions (about 1 KB each).
  int64_t cache_instructions = 300'000;
  // Search: warm-start from this default pipeline's order ("cpu" or "gpu"; "" = none). Its
  // effective sequence (the pass runs that changed the module, which reproduce its result) is the
  // problem's seed candidate, cut to the episode length, without passes outside the action space.
  std::string seed_pipeline;
  // Search: more seed candidates as pass names (e.g. a cached best order, so a search with a
  // larger budget continues from it). Names outside the action space are dropped; each is cut to
  // the episode length.
  std::vector<std::vector<std::string>> seed_sequences;
};

// A pass that returned an error (or an invalid module): the step was a no-op.
struct PassFailure {
  std::string pass;
  std::string fingerprint;  // of the module it ran on
  std::string message;
};

struct PassOrderStats {
  int64_t pass_runs = 0;     // passes actually run
  int64_t clones = 0;        // module copies made for them
  int64_t fingerprints = 0;  // structural fingerprints computed
  int64_t cache_hits = 0;    // steps answered by the transition cache
  int64_t failures = 0;      // runs that failed or produced an invalid module
  int64_t distinct_modules = 0;
};

struct StepResult {
  Observation observation;
  // (score before - score after) / |initial score|: an episode's rewards sum to the relative
  // reduction of the score (the op count by default) from the start.
  double reward = 0;
  bool done = false;     // the episode reached its length
  bool changed = false;  // false: the pass left the module structurally identical, or failed
  std::string error;     // set when the pass failed
};

namespace internal {
class Engine;
struct Node;
}  // namespace internal

class PassOrderEnv {
 public:
  static absl::StatusOr<std::unique_ptr<PassOrderEnv>> Create(PassOrderOptions options = {});
  ~PassOrderEnv();

  // Starts an episode on a copy of `module` (which must verify); returns its observation. The
  // transition cache outlives episodes (its keys are fingerprints).
  absl::StatusOr<Observation> Reset(const ir::Module& module);
  // Applies one pass. InvalidArgument for an unknown action, FailedPrecondition before Reset or
  // after done. A failing pass is not an error: the step is a no-op with `error` set.
  absl::StatusOr<StepResult> Step(int action);
  absl::StatusOr<StepResult> Step(std::string_view pass_name);
  // An independent copy of the episode (O(1): modules are shared copy-on-write).
  std::unique_ptr<PassOrderEnv> Fork() const;
  // mask[a] is false when pass `a` cannot change the current module (it reports no change,
  // fails, or yields a structurally identical module). Runs each pass once per distinct module;
  // the results are cached, so stepping a masked-in pass afterwards is free.
  std::vector<bool> ActionMask();

  int action_count() const;
  const std::vector<std::string>& action_names() const;
  int action_index(std::string_view pass_name) const;  // -1 when absent
  int64_t episode_length() const;
  int64_t episode_step() const { return step_; }
  bool done() const;
  const std::vector<int>& actions_taken() const { return taken_; }
  const std::vector<PassFailure>& episode_failures() const { return failures_; }

  // The current module and its observation; valid after Reset.
  const ir::Module& module() const;
  const Observation& observation() const;
  double initial_score() const { return initial_score_; }
  double score() const;
  PassOrderStats stats() const;

 private:
  PassOrderEnv(std::shared_ptr<internal::Engine> engine, PassOrderOptions options);

  PassOrderOptions options_;
  std::shared_ptr<internal::Engine> engine_;
  std::shared_ptr<const internal::Node> node_;
  double initial_score_ = 0;
  int64_t step_ = 0;
  std::vector<int> taken_;
  std::vector<PassFailure> failures_;
};

class PassOrderProblem : public Problem {
 public:
  static absl::StatusOr<std::unique_ptr<PassOrderProblem>> Create(const ir::Module& module,
                                                                  PassOrderOptions options = {});
  ~PassOrderProblem() override;

  std::string name() const override { return "pass-order"; }
  SearchSpace space() const override;
  std::string ActionName(int64_t position, Action action) const override;
  std::unique_ptr<State> NewState() override;
  int64_t PrefixCacheCapacity() const override;
  std::vector<std::pair<std::string, int64_t>> Stats() const override;
  std::vector<Candidate> SeedCandidates() override;

  const std::vector<std::string>& action_names() const;
  std::vector<std::string> PassNames(const Candidate& candidate) const;
  // Pass names to a candidate; NotFound for a name outside the action space.
  absl::StatusOr<Candidate> ParseCandidate(const std::vector<std::string>& pass_names) const;
  double initial_score() const;
  int64_t initial_op_count() const;
  // A fresh copy of the module `candidate` produces, stepping as the search does (failing passes
  // are no-ops), and its observation.
  std::unique_ptr<ir::Module> Apply(const Candidate& candidate);
  Observation Observe(const Candidate& candidate);
  const std::vector<PassFailure>& failures() const;
  PassOrderStats stats() const;

 private:
  PassOrderProblem(std::shared_ptr<internal::Engine> engine,
                   std::shared_ptr<const internal::Node> root, int64_t episode_length);
  std::shared_ptr<const internal::Node> Replay(const Candidate& candidate);

  std::shared_ptr<internal::Engine> engine_;
  std::shared_ptr<const internal::Node> root_;
  int64_t episode_length_;
  std::vector<Candidate> seeds_;
};

}  // namespace mltune::opt::pass_order
