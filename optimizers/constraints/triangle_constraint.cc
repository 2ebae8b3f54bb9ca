// No chip triangle: values a < b < c with edges a->b, b->c and a->c between the variables
// holding them. The value-level edges are counted as variables are fixed; the unfixed neighbours
// of a fixed variable lose the values that would close a triangle (forward checking).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

class TriangleConstraint : public Constraint {
 public:
  TriangleConstraint(std::vector<int32_t> from, std::vector<int32_t> to)
      : from_(std::move(from)), to_(std::move(to)) {}
  std::string_view name() const override { return "triangle"; }

  bool Init(Solver& solver) override {
    out_.assign(static_cast<size_t>(solver.variables()), {});
    in_.assign(static_cast<size_t>(solver.variables()), {});
    mine_.assign(static_cast<size_t>(solver.variables()), 0);
    for (size_t e = 0; e < from_.size(); ++e) {
      if (from_[e] == to_[e]) continue;
      out_[static_cast<size_t>(from_[e])].push_back(to_[e]);
      in_[static_cast<size_t>(to_[e])].push_back(from_[e]);
      solver.Watch(from_[e], *this);
      solver.Watch(to_[e], *this);
    }
    return true;
  }

  bool OnFix(Solver& solver, int32_t var) override {
    const int32_t x = solver.value(var);
    mine_[static_cast<size_t>(var)] = 1;
    bool ok = true;
    for (int32_t w : out_[static_cast<size_t>(var)]) {
      if (mine_[static_cast<size_t>(w)]) ok = Add(solver, x, solver.value(w), var, w) && ok;
    }
    for (int32_t u : in_[static_cast<size_t>(var)]) {
      if (mine_[static_cast<size_t>(u)]) ok = Add(solver, solver.value(u), x, u, var) && ok;
    }
    if (!ok) return false;
    // Forward checking: each unfixed neighbour loses the values whose edges to its fixed
    // neighbours would close a triangle.
    for (int32_t w : out_[static_cast<size_t>(var)]) {
      if (!mine_[static_cast<size_t>(w)] && !Check(solver, w)) return false;
    }
    for (int32_t u : in_[static_cast<size_t>(var)]) {
      if (!mine_[static_cast<size_t>(u)] && !Check(solver, u)) return false;
    }
    return true;
  }

  void OnUnfix(Solver& solver, int32_t var) override {
    const int32_t x = solver.value(var);
    for (int32_t w : out_[static_cast<size_t>(var)]) {
      if (mine_[static_cast<size_t>(w)]) Remove(x, solver.value(w));
    }
    for (int32_t u : in_[static_cast<size_t>(var)]) {
      if (mine_[static_cast<size_t>(u)]) Remove(solver.value(u), x);
    }
    mine_[static_cast<size_t>(var)] = 0;
  }

 private:
  // Removes from w's domain the values v whose new edges (from w's fixed producers below v, to
  // its fixed consumers above v) would close a triangle. Every new edge touches v, so v is the
  // triangle's lowest, middle or highest value.
  bool Check(Solver& solver, int32_t w) {
    Domain producers = 0, consumers = 0;  // values of w's fixed neighbours
    for (int32_t u : in_[static_cast<size_t>(w)]) {
      if (mine_[static_cast<size_t>(u)]) producers |= ValueBit(solver.value(u));
    }
    for (int32_t x : out_[static_cast<size_t>(w)]) {
      if (mine_[static_cast<size_t>(x)]) consumers |= ValueBit(solver.value(x));
    }
    Domain bad = 0;
    for (Domain d = solver.domain(w); d != 0; d &= d - 1) {
      const int32_t v = Lowest(d);
      const Domain below = ValueBit(v) - 1, above = ~below & ~ValueBit(v);
      const Domain in = (producers & below) | fed_[static_cast<size_t>(v)];
      const Domain out = (consumers & above) | feeds_[static_cast<size_t>(v)];
      if ((in & ~fed_[static_cast<size_t>(v)]) == 0 &&
          (out & ~feeds_[static_cast<size_t>(v)]) == 0) {
        continue;  // no new edge
      }
      bool closes = false;
      for (Domain a = in; a != 0 && !closes; a &= a - 1) {  // v in the middle, or highest
        closes = (feeds_[static_cast<size_t>(Lowest(a))] & out) != 0 ||
                 (fed_[static_cast<size_t>(Lowest(a))] & in) != 0;
      }
      for (Domain b = out; b != 0 && !closes; b &= b - 1) {  // v lowest
        closes = (feeds_[static_cast<size_t>(Lowest(b))] & out) != 0;
      }
      if (closes) bad |= ValueBit(v);
    }
    return bad == 0 || solver.Restrict(w, ~bad, *this);
  }

  // Would a new edge a -> c (a < c) close a triangle with the edges counted so far?
  bool Closes(int32_t a, int32_t c) const {
    if (a >= c || count_[static_cast<size_t>(a)][static_cast<size_t>(c)] > 0) return false;
    const Domain feeds_a = feeds_[static_cast<size_t>(a)], feeds_c = feeds_[static_cast<size_t>(c)];
    return (feeds_a & fed_[static_cast<size_t>(c)]) != 0  // a -> b -> c
           || (feeds_a & feeds_c) != 0                    // a -> c -> d and a -> d
           || (fed_[static_cast<size_t>(a)] & fed_[static_cast<size_t>(c)]) != 0;  // z -> a, z -> c
  }

  bool Add(Solver& solver, int32_t a, int32_t c, int32_t from, int32_t to) {
    if (a >= c) return true;  // same value, or the order constraint's business
    const bool closes = Closes(a, c);
    if (++count_[static_cast<size_t>(a)][static_cast<size_t>(c)] == 1) {
      feeds_[static_cast<size_t>(a)] |= ValueBit(c);
      fed_[static_cast<size_t>(c)] |= ValueBit(a);
    }
    if (!closes) return true;
    return solver.Conflict(
        *this, absl::StrFormat("%s on %d feeds %s on %d, which closes a triangle of values with "
                               "the edges already placed",
                               solver.variable_name(from), a, solver.variable_name(to), c));
  }

  void Remove(int32_t a, int32_t c) {
    if (a >= c) return;
    if (--count_[static_cast<size_t>(a)][static_cast<size_t>(c)] == 0) {
      feeds_[static_cast<size_t>(a)] &= ~ValueBit(c);
      fed_[static_cast<size_t>(c)] &= ~ValueBit(a);
    }
  }

  std::vector<int32_t> from_, to_;
  std::vector<std::vector<int32_t>> out_, in_;
  std::vector<uint8_t> mine_;  // fixed, as this constraint has recorded
  std::array<std::array<int32_t, kMaxValues>, kMaxValues> count_{};
  std::array<Domain, kMaxValues> feeds_{}, fed_{};
};

}  // namespace

std::unique_ptr<Constraint> MakeTriangleConstraint(std::vector<int32_t> from,
                                                   std::vector<int32_t> to) {
  return std::make_unique<TriangleConstraint>(std::move(from), std::move(to));
}

}  // namespace mltune::opt::constraints
