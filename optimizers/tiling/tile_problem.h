// Tile-size search on the TPU simulator: one tile per kernel (m, n, k and double buffering), the
// whole module's simulated time as the score. The compiler's default tiles are the seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::tiling {

class TpuTileProblem : public ConfigProblem {
 public:
  // Kernels from a fusion plan; the simulator is owned (its noise state is the problem's).
  TpuTileProblem(std::vector<costmodels::KernelSummary> kernels, backends::tpu::TpuSimulator sim);

  std::string name() const override { return "tile"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  // Simulated seconds; +infinity when a tile does not fit VMEM.
  double Evaluate(const Candidate& candidate) override;

  // The default tiles as a candidate (the nearest choice per dimension).
  Candidate DefaultCandidate() const;
  std::vector<backends::tpu::TileConfig> Decode(const Candidate& candidate) const;
  backends::tpu::TpuResult Simulate(const Candidate& candidate);
  const std::vector<costmodels::KernelSummary>& kernels() const { return kernels_; }

 private:
  struct Slot {
    int32_t kernel;
    int dimension;  // 0 m, 1 n, 2 k, 3 double buffering
  };
  std::vector<costmodels::KernelSummary> kernels_;
  backends::tpu::TpuSimulator sim_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int64_t>> values_;  // per slot
  SearchSpace space_;
};

}  // namespace mltune::opt::tiling
