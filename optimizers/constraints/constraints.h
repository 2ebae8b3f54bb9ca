// A small constraint engine over integer domains, in the manner of Telamon's: every variable has
// a domain of up to 64 values, constraints prune domains when a variable narrows or is fixed
// (propagation), and a strategy fixes variables one at a time and undoes to a checkpoint when a
// constraint fails (backtracking). Strategies that only ever return a completed assignment can
// then only return valid ones, however sparse the valid space is. docs/constraints.md describes
// it; the MCM and device-partition problems build their constraint sets on it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "optimizers/core/config_problem.h"
#include "optimizers/core/search.h"

namespace mltune::opt::constraints {

// Bit v set: value v is still allowed.
using Domain = uint64_t;
inline constexpr int32_t kMaxValues = 64;
inline constexpr Domain ValueBit(int32_t v) { return Domain{1} << v; }
Domain AllValues(int32_t values);  // {0, ..., values - 1}
int32_t Lowest(Domain d);          // -1 for the empty domain
int32_t Highest(Domain d);         // -1 for the empty domain
int32_t Count(Domain d);

class Solver;

// A constraint over some of the solver's variables. Stateful constraints (sums over fixed
// variables) update their state in OnFix and revert it in OnUnfix, which the solver calls in the
// reverse order when it backtracks, so they never copy their state.
class Constraint {
 public:
  virtual ~Constraint() = default;
  // Names the constraint in errors ("acyclic", "sram-capacity", ...).
  virtual std::string_view name() const = 0;
  // Before any search: registers the variables it watches (Solver::Watch) and prunes what it
  // alone rules out (static propagation). false: no assignment can satisfy it (Solver::Conflict
  // says why).
  virtual bool Init(Solver& solver) = 0;
  // A watched variable's domain shrank; prunes other domains. false: violated.
  virtual bool OnNarrow(Solver& /*solver*/, int32_t /*var*/) { return true; }
  // Keeps counters over domains current: called at once on every change of a watched domain,
  // and on every undo (from and to swapped). Must not prune.
  virtual void OnChange(int32_t /*var*/, Domain /*from*/, Domain /*to*/) {}
  // A watched variable was fixed. Must record it even when it returns false (violated).
  virtual bool OnFix(Solver& /*solver*/, int32_t /*var*/) { return true; }
  virtual void OnUnfix(Solver& /*solver*/, int32_t /*var*/) {}
};

class Solver {
 public:
  // `values` in [1, kMaxValues]; every domain starts as {0, ..., values - 1}.
  Solver(int32_t variables, int32_t values, std::vector<std::string> variable_names = {});
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  void Add(std::unique_ptr<Constraint> constraint);  // before Init
  // Static propagation of every constraint. FailedPrecondition naming the constraint (and what
  // makes the instance infeasible) when no assignment can satisfy them.
  absl::Status Init();

  int32_t variables() const { return static_cast<int32_t>(domains_.size()); }
  int32_t values() const { return values_; }
  Domain domain(int32_t var) const { return domains_[static_cast<size_t>(var)]; }
  bool fixed(int32_t var) const { return Count(domain(var)) == 1; }
  int32_t value(int32_t var) const;  // -1 unless fixed
  bool complete() const { return fixed_count_ == variables(); }
  std::vector<int32_t> Assignment() const;  // value() of every variable
  const std::string& variable_name(int32_t var) const;

  // For strategies: a point to come back to, fixing a variable (propagating to a fixpoint), and
  // going back. Fix returns false when a constraint fails; the state is then inconsistent until
  // Undo(checkpoint taken before the Fix).
  size_t Checkpoint() const { return trail_.size(); }
  bool Fix(int32_t var, int32_t value);
  // Removes values from a variable's domain, as Fix does (false: a constraint failed).
  bool Exclude(int32_t var, Domain values);
  void Undo(size_t checkpoint);

  // For constraints: keeps only `keep` in var's domain; false (and a conflict) when it empties.
  bool Restrict(int32_t var, Domain keep, const Constraint& by);
  void Watch(int32_t var, Constraint& constraint);
  // Records why `by` failed; returns false for `return solver.Conflict(...)`.
  bool Conflict(const Constraint& by, std::string why);

  // The last failure: the constraint's name and its message.
  const std::string& conflict() const { return conflict_; }
  const std::string& conflict_constraint() const { return conflict_constraint_; }
  // Failures so far, by constraint name.
  const std::map<std::string, int64_t>& conflicts() const { return conflict_counts_; }

 private:
  struct TrailEntry {
    int32_t var;
    Domain before;  // the domain before this entry's change
    bool fix;       // a fix record: OnFix was called on the var's watchers
  };
  bool Propagate();

  int32_t values_;
  std::vector<std::string> names_;
  std::vector<Domain> domains_;
  std::vector<std::unique_ptr<Constraint>> constraints_;
  std::vector<std::vector<Constraint*>> watchers_;
  std::vector<TrailEntry> trail_;
  std::vector<int32_t> queue_;  // narrowed variables to propagate
  std::vector<uint8_t> recorded_fixed_;
  int32_t fixed_count_ = 0;
  bool initialized_ = false;
  std::string conflict_, conflict_constraint_;
  std::map<std::string, int64_t> conflict_counts_;
};

// ---- Constraint sets ----

// value[from] <= value[to] for every edge (data flows to equal or higher ids: the MCM ring's
// acyclicity, or a contiguous split of a graph over ordered devices).
std::unique_ptr<Constraint> MakeOrderConstraint(std::string name, std::vector<int32_t> from,
                                                std::vector<int32_t> to);
// The values used form {0, ..., m}: no value unused below the highest used (no skipped chip).
std::unique_ptr<Constraint> MakeConsecutiveConstraint();
// No values a < b < c with an edge between variables valued a and b, one between b and c, and
// one between a and c (no chip triangle). Edges are between variables, from lower to higher values.
std::unique_ptr<Constraint> MakeTriangleConstraint(std::vector<int32_t> from,
                                                   std::vector<int32_t> to);
// Sum of the sizes of the variables valued v, at most capacity[v] (a device's memory).
std::unique_ptr<Constraint> MakeCapacityConstraint(std::string name, std::vector<double> sizes,
                                                   std::vector<double> capacity);

// ---- Assignments ----

// Orders the values to try for `var`, best first, from its current domain (never empty).
using ValueOrder = std::function<std::vector<int32_t>(int32_t var, Domain domain)>;

struct CompleteOptions {
  // Failed fixes allowed before giving up (each tried value that fails counts one).
  int64_t max_failures = 20000;
  uint64_t seed = 0;  // of the restarts' shuffles
};

// Walks the unfixed variables in `order`, fixing each to the first value of `choose` that
// propagates; on a dead end (no value left) it backtracks chronologically, and restarts when a
// walk fails too often (the first choices kept, the rest shuffled). Returns the complete
// assignment (and leaves the solver complete), or FailedPrecondition naming the constraint that
// failed most when `max_failures` ran out or no assignment exists.
absl::StatusOr<std::vector<int32_t>> Complete(Solver& solver, const std::vector<int32_t>& order,
                                              const ValueOrder& choose,
                                              const CompleteOptions& options = {});

// Value orders: uniformly random; FIX's repair of a proposal (the proposed value, then the
// nearest ones); SAMPLE's draw from per-variable weights restricted to the domain.
ValueOrder UniformOrder(std::mt19937_64& rng);
ValueOrder NearestOrder(const std::vector<int32_t>& proposal);
// weights[var * values + v] >= 0; values are drawn without replacement in proportion.
ValueOrder SampledOrder(const std::vector<float>& weights, int32_t values, std::mt19937_64& rng);

// ---- Problems and strategies ----

// A configuration problem whose candidates assign one value to each variable of a constraint
// set (candidate[i] is variable i's value): the solver-backed strategies search it.
class ConstrainedProblem : public ConfigProblem {
 public:
  // A solver with the problem's constraints, Init()ed; an error when the instance is infeasible.
  virtual absl::StatusOr<std::unique_ptr<Solver>> NewSolver() const = 0;
  // The order variables are fixed in (topological, for graphs).
  virtual std::vector<int32_t> VariableOrder() const = 0;
};

// "solver-random", "solver-annealing", "solver-local-search": StrategyRegistry-compatible
// strategies that search a ConstrainedProblem through its solver (every candidate they evaluate
// is complete and valid); refused on other problems.
const StrategyRegistry& SolverStrategies();

// Repairs `proposal` (one value per variable; out-of-range values are free) into the valid
// assignment FIX finds: variables in order, each at its proposed value when the constraints
// allow, else the nearest allowed one.
absl::StatusOr<std::vector<int32_t>> Repair(const ConstrainedProblem& problem,
                                            const std::vector<int32_t>& proposal,
                                            const CompleteOptions& options = {});

}  // namespace mltune::opt::constraints
