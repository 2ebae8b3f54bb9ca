// Tile-size search on the TPU simulator: one tile per kernel (m, n, k and double buffering), the
// whole module's simulated time as the score. The compiler's default tiles are the seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/features/kernel_graph.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::tiling {

// A tile as the learned cost model's configuration slots: tile_m, tile_n, tile_k (0: the whole
// dimension) and double_buffer (0 or 1).
costmodels::features::Configuration TpuTileConfiguration(const backends::tpu::TileConfig& tile);
// "tile_m=256,tile_n=512,tile_k=128,double_buffer=1": the measurement log's configuration text,
// which `mltune collect --target tpu-sim --task tile` writes and training parses back.
std::string TpuTileConfigText(const backends::tpu::TileConfig& tile);

class TpuTileProblem : public ConfigProblem {
 public:
  // Predicted cost of each tile of kernel `kernel` (an index into kernels(); lower is better, only
  // the order within one call matters): a learned cost model, for the "model-topk" strategy.
  using RankFn = std::function<absl::StatusOr<std::vector<double>>(
      int32_t kernel, const std::vector<backends::tpu::TileConfig>&)>;

  // Told every simulated candidate: its tiles (Decode's) and the simulator's result, per kernel of
  // kernels(): the daemon logs them as training data.
  using ObserveFn = std::function<void(const std::vector<backends::tpu::TileConfig>&,
                                       const backends::tpu::TpuResult&)>;

  // Kernels from a fusion plan; the simulator is owned (its noise state is the problem's).
  TpuTileProblem(std::vector<costmodels::KernelSummary> kernels, backends::tpu::TpuSimulator sim);
  void SetRanker(RankFn rank) { rank_ = std::move(rank); }
  void SetObserver(ObserveFn observe) { observe_ = std::move(observe); }

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

  // One part per tileable kernel: its positions. A kernel's tile changes only its own time, so
  // each is ranked and tuned on its own. Slowest first by the default tiles' simulated seconds
  // (found once, on a copy of the simulator, so the problem's noise draws do not move).
  std::vector<std::vector<int64_t>> Parts() const override;
  // Ranks the tiles that `settings` make of part `part`'s kernel with the ranker (dimensions
  // without a position keep the default "whole" value, as Decode gives them); FailedPrecondition
  // without one.
  absl::StatusOr<std::vector<double>> RankSettings(int64_t part,
                                                   const std::vector<Candidate>& settings) override;

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
  RankFn rank_;
  ObserveFn observe_;
  std::vector<std::vector<int64_t>> parts_;  // slowest kernel first
  std::vector<int32_t> part_kernel_;         // per part
};

}  // namespace mltune::opt::tiling
