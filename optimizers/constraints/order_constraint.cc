// value[from] <= value[to] along every edge, kept bounds-consistent: a variable's lowest value
// raises its successors' floors and its highest value lowers its predecessors' ceilings.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

// Values >= v, and values <= v.
Domain AtLeast(int32_t v) { return v <= 0 ? ~Domain{0} : ~(ValueBit(v) - 1); }
Domain AtMost(int32_t v) { return v >= kMaxValues - 1 ? ~Domain{0} : ValueBit(v + 1) - 1; }

class OrderConstraint : public Constraint {
 public:
  OrderConstraint(std::string name, std::vector<int32_t> from, std::vector<int32_t> to)
      : name_(std::move(name)), from_(std::move(from)), to_(std::move(to)) {}
  std::string_view name() const override { return name_; }

  bool Init(Solver& solver) override {
    succ_.assign(static_cast<size_t>(solver.variables()), {});
    pred_.assign(static_cast<size_t>(solver.variables()), {});
    for (size_t e = 0; e < from_.size(); ++e) {
      if (from_[e] == to_[e]) continue;
      succ_[static_cast<size_t>(from_[e])].push_back(to_[e]);
      pred_[static_cast<size_t>(to_[e])].push_back(from_[e]);
      solver.Watch(from_[e], *this);
      solver.Watch(to_[e], *this);
    }
    for (int32_t v = 0; v < solver.variables(); ++v) {
      if (!OnNarrow(solver, v)) return false;
    }
    return true;
  }

  bool OnNarrow(Solver& solver, int32_t var) override {
    const Domain d = solver.domain(var);
    for (int32_t w : succ_[static_cast<size_t>(var)]) {
      if (!solver.Restrict(w, AtLeast(Lowest(d)), *this)) return Explain(solver, var, w);
    }
    for (int32_t u : pred_[static_cast<size_t>(var)]) {
      if (!solver.Restrict(u, AtMost(Highest(d)), *this)) return Explain(solver, u, var);
    }
    return true;
  }

 private:
  bool Explain(Solver& solver, int32_t from, int32_t to) {
    return solver.Conflict(
        *this, absl::StrCat(solver.variable_name(from), " feeds ", solver.variable_name(to),
                            " but no value of ", solver.variable_name(to), " is at least one of ",
                            solver.variable_name(from), "'s"));
  }

  std::string name_;
  std::vector<int32_t> from_, to_;
  std::vector<std::vector<int32_t>> succ_, pred_;
};

}  // namespace

std::unique_ptr<Constraint> MakeOrderConstraint(std::string name, std::vector<int32_t> from,
                                                std::vector<int32_t> to) {
  return std::make_unique<OrderConstraint>(std::move(name), std::move(from), std::move(to));
}

}  // namespace mltune::opt::constraints
