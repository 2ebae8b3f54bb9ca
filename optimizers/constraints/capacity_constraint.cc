// Per-value capacity: the sizes of the variables holding a value sum to at most its capacity.
// Values a variable cannot fit even alone are removed up front; loads are checked as variables
// are fixed.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

class CapacityConstraint : public Constraint {
 public:
  CapacityConstraint(std::string name, std::vector<double> sizes, std::vector<double> capacity)
      : name_(std::move(name)), sizes_(std::move(sizes)), capacity_(std::move(capacity)) {}
  std::string_view name() const override { return name_; }

  bool Init(Solver& solver) override {
    load_.assign(capacity_.size(), 0);
    for (int32_t v = 0; v < solver.variables(); ++v) {
      solver.Watch(v, *this);
      Domain too_small = 0;
      for (size_t value = 0; value < capacity_.size(); ++value) {
        if (Size(v) > capacity_[value]) too_small |= ValueBit(static_cast<int32_t>(value));
      }
      if ((solver.domain(v) & ~too_small) == 0) {
        return solver.Conflict(
            *this, absl::StrFormat("%s needs %.0f, more than any value's capacity allows",
                                   solver.variable_name(v), Size(v)));
      }
      if (too_small != 0 && !solver.Restrict(v, ~too_small, *this)) return false;
    }
    return true;
  }

  bool OnFix(Solver& solver, int32_t var) override {
    const size_t value = static_cast<size_t>(solver.value(var));
    if (value >= load_.size()) return true;
    load_[value] += Size(var);
    if (load_[value] <= capacity_[value]) return true;
    return solver.Conflict(
        *this, absl::StrFormat("value %d holds %.0f with %s, over its %.0f", value, load_[value],
                               solver.variable_name(var), capacity_[value]));
  }

  void OnUnfix(Solver& solver, int32_t var) override {
    const size_t value = static_cast<size_t>(solver.value(var));
    if (value < load_.size()) load_[value] -= Size(var);
  }

 private:
  double Size(int32_t var) const {
    return static_cast<size_t>(var) < sizes_.size() ? sizes_[static_cast<size_t>(var)] : 0;
  }
  std::string name_;
  std::vector<double> sizes_, capacity_;
  std::vector<double> load_;
};

}  // namespace

std::unique_ptr<Constraint> MakeCapacityConstraint(std::string name, std::vector<double> sizes,
                                                   std::vector<double> capacity) {
  return std::make_unique<CapacityConstraint>(std::move(name), std::move(sizes),
                                              std::move(capacity));
}

}  // namespace mltune::opt::constraints
