// The values used form {0, ..., m}. Each value's support (the variables that may still take it)
// is counted; once a value has none, no variable may take a higher one.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

class ConsecutiveConstraint : public Constraint {
 public:
  std::string_view name() const override { return "skipped-chip"; }

  bool Init(Solver& solver) override {
    support_.assign(kMaxValues, 0);
    for (int32_t v = 0; v < solver.variables(); ++v) {
      solver.Watch(v, *this);
      OnChange(v, 0, solver.domain(v));
    }
    return Cap(solver);
  }

  void OnChange(int32_t /*var*/, Domain from, Domain to) override {
    for (Domain gone = from & ~to; gone != 0; gone &= gone - 1) {
      const int32_t value = Lowest(gone);
      if (--support_[static_cast<size_t>(value)] == 0) pending_ = std::min(pending_, value);
    }
    for (Domain added = to & ~from; added != 0; added &= added - 1) {
      ++support_[static_cast<size_t>(Lowest(added))];
    }
  }

  bool OnFix(Solver& solver, int32_t var) override {
    ++used_[static_cast<size_t>(solver.value(var))];
    return true;
  }
  void OnUnfix(Solver& solver, int32_t var) override {
    --used_[static_cast<size_t>(solver.value(var))];
  }

  bool OnNarrow(Solver& solver, int32_t /*var*/) override {
    if (pending_ != kMaxValues && !Cap(solver)) return false;  // a value lost its last support
    return ForceLastSupporters(solver);
  }

 private:
  // Values above an unsupported one are unusable: every domain is capped below it.
  bool Cap(Solver& solver) {
    int32_t gap = kMaxValues;
    for (int32_t value = 0; value < solver.values(); ++value) {
      if (support_[static_cast<size_t>(value)] == 0) {
        gap = value;
        break;
      }
    }
    pending_ = kMaxValues;
    if (gap >= solver.values()) return true;
    if (gap == 0) return solver.Conflict(*this, "no variable can take value 0");
    const Domain below = ValueBit(gap) - 1;
    for (int32_t v = 0; v < solver.variables(); ++v) {
      if (solver.domain(v) & below) {
        if (!solver.Restrict(v, below, *this)) return false;
        continue;
      }
      return solver.Conflict(
          *this, absl::StrFormat("%s can only take values above %d, which no variable can take",
                                 solver.variable_name(v), gap));
    }
    return true;
  }

  // A value below the highest used that nobody holds yet, with one variable left that may take
  // it: that variable must.
  bool ForceLastSupporters(Solver& solver) {
    int32_t highest = -1;
    for (int32_t value = solver.values() - 1; value >= 0; --value) {
      if (used_[static_cast<size_t>(value)] > 0) {
        highest = value;
        break;
      }
    }
    for (int32_t value = 0; value < highest; ++value) {
      if (used_[static_cast<size_t>(value)] > 0 || support_[static_cast<size_t>(value)] != 1) {
        continue;
      }
      for (int32_t v = 0; v < solver.variables(); ++v) {
        if (!(solver.domain(v) & ValueBit(value))) continue;
        if (!solver.Restrict(v, ValueBit(value), *this)) return false;
        break;
      }
    }
    return true;
  }

  std::vector<int64_t> support_;
  std::vector<int64_t> used_ = std::vector<int64_t>(kMaxValues, 0);
  int32_t pending_ = kMaxValues;
};

}  // namespace

std::unique_ptr<Constraint> MakeConsecutiveConstraint() {
  return std::make_unique<ConsecutiveConstraint>();
}

}  // namespace mltune::opt::constraints
