// The solver: domains, a trail of changes for undoing, and propagation to a fixpoint.
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {

Domain AllValues(int32_t values) {
  return values >= kMaxValues ? ~Domain{0} : ValueBit(values) - 1;
}
int32_t Lowest(Domain d) { return d == 0 ? -1 : std::countr_zero(d); }
int32_t Highest(Domain d) { return d == 0 ? -1 : kMaxValues - 1 - std::countl_zero(d); }
int32_t Count(Domain d) { return std::popcount(d); }

Solver::Solver(int32_t variables, int32_t values, std::vector<std::string> variable_names)
    : values_(values),
      names_(std::move(variable_names)),
      domains_(static_cast<size_t>(variables), AllValues(values)),
      watchers_(static_cast<size_t>(variables)),
      recorded_fixed_(static_cast<size_t>(variables), 0) {
  names_.resize(static_cast<size_t>(variables));
  for (int32_t v = 0; v < variables; ++v) {
    if (names_[static_cast<size_t>(v)].empty()) names_[static_cast<size_t>(v)] = absl::StrCat(v);
  }
}

Solver::~Solver() = default;

void Solver::Add(std::unique_ptr<Constraint> constraint) {
  constraints_.push_back(std::move(constraint));
}

absl::Status Solver::Init() {
  if (values_ < 1 || values_ > kMaxValues) {
    return absl::InvalidArgumentError(
        absl::StrCat("a constraint solver holds 1 to ", kMaxValues, " values, not ", values_));
  }
  initialized_ = true;
  for (const std::unique_ptr<Constraint>& c : constraints_) {
    if (!c->Init(*this) || !Propagate()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no valid assignment: ", conflict_constraint_, ": ", conflict_));
    }
  }
  // The initial domains are the floor: backtracking never goes above them.
  trail_.clear();
  return absl::OkStatus();
}

int32_t Solver::value(int32_t var) const { return fixed(var) ? Lowest(domain(var)) : -1; }

std::vector<int32_t> Solver::Assignment() const {
  std::vector<int32_t> out(domains_.size());
  for (int32_t v = 0; v < variables(); ++v) out[static_cast<size_t>(v)] = value(v);
  return out;
}

const std::string& Solver::variable_name(int32_t var) const {
  return names_[static_cast<size_t>(var)];
}

void Solver::Watch(int32_t var, Constraint& constraint) {
  std::vector<Constraint*>& w = watchers_[static_cast<size_t>(var)];
  if (w.empty() || w.back() != &constraint) w.push_back(&constraint);
}

bool Solver::Conflict(const Constraint& by, std::string why) {
  conflict_constraint_ = std::string(by.name());
  conflict_ = std::move(why);
  ++conflict_counts_[conflict_constraint_];
  return false;
}

bool Solver::Restrict(int32_t var, Domain keep, const Constraint& by) {
  const Domain before = domains_[static_cast<size_t>(var)];
  const Domain after = before & keep;
  if (after == before) return true;
  if (after == 0) {
    return Conflict(by, absl::StrCat("no value left for ", variable_name(var)));
  }
  trail_.push_back({var, before, false});
  domains_[static_cast<size_t>(var)] = after;
  for (Constraint* c : watchers_[static_cast<size_t>(var)]) c->OnChange(var, before, after);
  queue_.push_back(var);
  return true;
}

bool Solver::Propagate() {
  for (size_t head = 0; head < queue_.size(); ++head) {
    const int32_t var = queue_[head];
    const std::vector<Constraint*>& watchers = watchers_[static_cast<size_t>(var)];
    if (fixed(var) && !recorded_fixed_[static_cast<size_t>(var)]) {
      recorded_fixed_[static_cast<size_t>(var)] = 1;
      ++fixed_count_;
      trail_.push_back({var, domain(var), true});
      bool ok = true;
      // Every watcher records the fix, even after one fails, so that undoing is symmetric.
      for (Constraint* c : watchers) ok = c->OnFix(*this, var) && ok;
      if (!ok) {
        queue_.clear();
        return false;
      }
    }
    for (Constraint* c : watchers) {
      if (!c->OnNarrow(*this, var)) {
        queue_.clear();
        return false;
      }
    }
  }
  queue_.clear();
  return true;
}

// A constraint standing for the strategy's own choices in conflicts.
class ChoiceConstraint : public Constraint {
 public:
  std::string_view name() const override { return "choice"; }
  bool Init(Solver&) override { return true; }
};

bool Solver::Fix(int32_t var, int32_t value) { return Exclude(var, ~ValueBit(value)); }

bool Solver::Exclude(int32_t var, Domain values) {
  static const ChoiceConstraint choice;
  return Restrict(var, ~values, choice) && Propagate();
}

void Solver::Undo(size_t checkpoint) {
  queue_.clear();
  while (trail_.size() > checkpoint) {
    const TrailEntry e = trail_.back();
    trail_.pop_back();
    const std::vector<Constraint*>& watchers = watchers_[static_cast<size_t>(e.var)];
    if (e.fix) {
      for (auto it = watchers.rbegin(); it != watchers.rend(); ++it) (*it)->OnUnfix(*this, e.var);
      recorded_fixed_[static_cast<size_t>(e.var)] = 0;
      --fixed_count_;
      continue;
    }
    const Domain now = domains_[static_cast<size_t>(e.var)];
    domains_[static_cast<size_t>(e.var)] = e.before;
    for (Constraint* c : watchers) c->OnChange(e.var, now, e.before);
  }
}

}  // namespace mltune::opt::constraints
