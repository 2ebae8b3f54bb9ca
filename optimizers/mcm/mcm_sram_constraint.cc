// SRAM per chip, exact and incremental: what an op adds when it is fixed (its weights new to the
// chip, its result if the largest, tensors crossing to or from fixed neighbours) is undone in
// reverse order on backtracking.
#include "optimizers/mcm/mcm_sram_constraint.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace mltune::opt::mcm::internal {
namespace {

using constraints::Solver;

class SramConstraint : public constraints::Constraint {
 public:
  SramConstraint(const costmodels::OpGraph& graph, double sram_bytes)
      : graph_(graph), sram_(sram_bytes) {}
  std::string_view name() const override { return "sram-capacity"; }

  bool Init(Solver& solver) override {
    const int32_t n = graph_.size();
    mine_.assign(static_cast<size_t>(n), 0);
    consumers_.assign(static_cast<size_t>(n), {});
    weights_.assign(constraints::kMaxValues, 0);
    received_.assign(constraints::kMaxValues, 0);
    largest_.assign(constraints::kMaxValues, 0);
    for (int32_t i = 0; i < n; ++i) {
      solver.Watch(i, *this);
      const costmodels::OpNode& op = graph_.nodes[static_cast<size_t>(i)];
      for (const costmodels::OpInput& in : op.inputs) {
        if (in.node >= 0 && in.node < n && in.node != i) {
          consumers_[static_cast<size_t>(in.node)].push_back({i, in.bytes});
        }
      }
      // An op that does not fit a chip alone makes the instance infeasible.
      double own = op.output_bytes;
      std::vector<int32_t> seen;
      for (const costmodels::OpWeight& w : op.weights) {
        if (w.id >= 0 && std::find(seen.begin(), seen.end(), w.id) != seen.end()) continue;
        seen.push_back(w.id);
        own += w.bytes;
      }
      if (own > sram_) {
        return solver.Conflict(
            *this, absl::StrFormat("op '%s' alone needs %.0f bytes (its weights and result), "
                                   "more than a chip's %.0f bytes of SRAM",
                                   op.name, own, sram_));
      }
    }
    return true;
  }

  bool OnFix(Solver& solver, int32_t var) override {
    frames_.push_back({doubles_.size(), ints_.size()});
    mine_[static_cast<size_t>(var)] = 1;
    const int32_t c = solver.value(var);
    const costmodels::OpNode& op = graph_.nodes[static_cast<size_t>(var)];
    Set(&largest_[static_cast<size_t>(c)],
        std::max(largest_[static_cast<size_t>(c)], op.output_bytes));
    for (const costmodels::OpWeight& w : op.weights) {
      if (w.id < 0) {  // not shared: counted each time, as the simulator does
        Set(&weights_[static_cast<size_t>(c)], weights_[static_cast<size_t>(c)] + w.bytes);
        continue;
      }
      int32_t& holders = weight_chips_[Key(w.id, c)];
      ints_.push_back({&holders, holders});
      if (++holders == 1)
        Set(&weights_[static_cast<size_t>(c)], weights_[static_cast<size_t>(c)] + w.bytes);
    }
    Domain touched = constraints::ValueBit(c);
    for (const costmodels::OpInput& in : op.inputs) {
      if (in.node < 0 || in.node >= graph_.size() || in.node == var) continue;
      if (!mine_[static_cast<size_t>(in.node)]) continue;
      const int32_t from = solver.value(in.node);
      if (from != c) Receive(in.node, c, in.bytes);
    }
    for (const auto& [consumer, bytes] : consumers_[static_cast<size_t>(var)]) {
      if (!mine_[static_cast<size_t>(consumer)]) continue;
      const int32_t to = solver.value(consumer);
      if (to != c) {
        Receive(var, to, bytes);
        touched |= constraints::ValueBit(to);
      }
    }
    for (; touched != 0; touched &= touched - 1) {
      const size_t chip = static_cast<size_t>(constraints::Lowest(touched));
      const double need = weights_[chip] + received_[chip] + largest_[chip];
      if (need <= sram_) continue;
      return solver.Conflict(
          *this, absl::StrFormat("chip %d would need %.0f bytes (weights %.0f, received %.0f, "
                                 "largest result %.0f) with op '%s', over its %.0f",
                                 chip, need, weights_[chip], received_[chip], largest_[chip],
                                 op.name, sram_));
    }
    return true;
  }

  void OnUnfix(Solver& /*solver*/, int32_t var) override {
    const auto [doubles, ints] = frames_.back();
    frames_.pop_back();
    while (doubles_.size() > doubles) {
      *doubles_.back().first = doubles_.back().second;
      doubles_.pop_back();
    }
    while (ints_.size() > ints) {
      *ints_.back().first = ints_.back().second;
      ints_.pop_back();
    }
    mine_[static_cast<size_t>(var)] = 0;
  }

 private:
  using Domain = constraints::Domain;
  static int64_t Key(int64_t id, int32_t chip) { return id * constraints::kMaxValues + chip; }

  void Set(double* slot, double value) {
    doubles_.push_back({slot, *slot});
    *slot = value;
  }
  // The producer's tensor counts once per receiving chip, at its largest edge there.
  void Receive(int32_t producer, int32_t chip, double bytes) {
    double& held = tensor_on_chip_[Key(producer, chip)];
    if (bytes <= held) return;
    Set(&received_[static_cast<size_t>(chip)], received_[static_cast<size_t>(chip)] + bytes - held);
    Set(&held, bytes);
  }

  const costmodels::OpGraph& graph_;
  double sram_;
  std::vector<uint8_t> mine_;
  std::vector<std::vector<std::pair<int32_t, double>>> consumers_;
  std::vector<double> weights_, received_, largest_;  // per chip
  // Element references stay valid as these maps grow.
  std::unordered_map<int64_t, int32_t> weight_chips_;   // (weight id, chip) -> ops holding it
  std::unordered_map<int64_t, double> tensor_on_chip_;  // (producer, chip) -> bytes received
  std::vector<std::pair<double*, double>> doubles_;     // undo: slot, old value
  std::vector<std::pair<int32_t*, int32_t>> ints_;
  std::vector<std::pair<size_t, size_t>> frames_;  // undo stack sizes at each fix
};

}  // namespace

std::unique_ptr<constraints::Constraint> MakeSramConstraint(const costmodels::OpGraph& graph,
                                                            double sram_bytes) {
  return std::make_unique<SramConstraint>(graph, sram_bytes);
}

}  // namespace mltune::opt::mcm::internal
