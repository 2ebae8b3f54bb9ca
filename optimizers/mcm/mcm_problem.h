// Multi-chip-module partitioning on the MCM simulator (Xie et al. 2022): one decision per op in
// topological order, "start the next chip here" or not, so every candidate flows from lower to
// higher chips without skipping one; the pipeline's stage time (1 / throughput) is the score and
// a partition breaking the triangle or SRAM constraint scores +infinity. The balanced partition
// is the seed. McmChipProblem assigns a chip to every op instead, with the four constraints in a
// solver, for the solver-backed strategies and GO's FIX and SAMPLE modes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/mcm_sim/mcm_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::mcm {

class McmPartitionProblem : public ConfigProblem {
 public:
  McmPartitionProblem(costmodels::OpGraph graph, backends::mcm::McmSimulator sim);

  std::string name() const override { return "mcm-partition"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;

  // A partition in this encoding: chips non-decreasing in node order (others are not encodable).
  Candidate Encode(const std::vector<int32_t>& chip_of_node) const;
  std::vector<int32_t> Decode(const Candidate& candidate) const;
  Candidate BalancedCandidate() const;
  backends::mcm::McmResult Simulate(const Candidate& candidate) const;
  const costmodels::OpGraph& graph() const { return graph_; }
  const backends::mcm::McmSimulator& simulator() const { return sim_; }

 private:
  costmodels::OpGraph graph_;
  backends::mcm::McmSimulator sim_;
  SearchSpace space_;
};

// One chip per op (candidate[i] = op i's chip), scored by the simulator (+infinity when invalid).
// Its solver holds the simulator's constraints: acyclic (chips non-decreasing along every edge),
// no skipped chip (the chips used are 0..m), no chip triangle, and SRAM per chip (exact, checked
// as ops are fixed). The balanced partition is its seed when valid. Counts every evaluation and
// the valid ones (Stats()).
class McmChipProblem : public constraints::ConstrainedProblem {
 public:
  McmChipProblem(costmodels::OpGraph graph, backends::mcm::McmSimulator sim);

  std::string name() const override { return "mcm-partition"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;
  std::vector<std::pair<std::string, int64_t>> Stats() const override;
  absl::StatusOr<std::unique_ptr<constraints::Solver>> NewSolver() const override;
  std::vector<int32_t> VariableOrder() const override;

  Candidate BalancedCandidate() const;
  // ContiguousDpPartition, repaired by the solver (FIX) when the simulator refuses it; empty when
  // neither gives a valid partition.
  Candidate ContiguousDpCandidate() const;
  backends::mcm::McmResult Simulate(const Candidate& candidate) const;
  const costmodels::OpGraph& graph() const { return graph_; }
  const backends::mcm::McmSimulator& simulator() const { return sim_; }
  int64_t evaluations() const { return evaluations_; }
  int64_t valid_evaluations() const { return valid_; }

 private:
  costmodels::OpGraph graph_;
  backends::mcm::McmSimulator sim_;
  SearchSpace space_;
  int64_t evaluations_ = 0, valid_ = 0;
};

// The best contiguous partition in op order by dynamic programming over cut points (Tarnawski
// et al., NeurIPS 2020): each run's compute plus its outgoing hop's transfers, each run within a
// chip's SRAM; crossing tensors counted once per producer. The best partition of each chip count
// is simulated and the best valid one returned (else the DP's best, for the solver to repair).
// Empty when no contiguous partition fits the chips.
std::vector<int32_t> ContiguousDpPartition(const costmodels::OpGraph& graph,
                                           const backends::mcm::McmSimulator& sim);

}  // namespace mltune::opt::mcm
