// TPU-like core simulator: the time of each fused kernel from its fusion and tile decisions, on a
// target spec with a matrix unit (MXU), a vector unit, HBM and VMEM (backends/specs/tpu-v*-core).
// A kernel runs as a grid of tiles: matrix work is padded to the MXU's 128x128 shape, vector work
// to the 8x128 vreg shape; operands stream HBM -> VMEM, re-read once per tile row or column they
// feed; a tile whose working set exceeds VMEM is invalid; with double buffering the DMA of the next
// tile overlaps the compute of this one. Each kernel pays a fixed launch overhead and each grid
// step a small one. Deterministic, with an optional seeded noise model for testing search.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/spec/target_spec.h"
#include "costmodels/analytical/kernels.h"

namespace mltune::backends::tpu {

// Tile of a kernel's iteration space. Matmul kernels: m x n output tile, k contraction step.
// Other kernels: m rows x n cols of the rows x cols iteration space (k unused). 0 = the whole
// dimension. Values are clamped to the dimension.
struct TileConfig {
  int64_t m = 0, n = 0, k = 0;
  bool double_buffer = true;
  bool operator==(const TileConfig&) const = default;
};
std::string TileName(const TileConfig& tile);  // "256x512x128" (+ " single-buffered")

struct KernelTiming {
  bool valid = false;
  std::string error;   // e.g. "tile 1024x2048x2048 needs 40.0 MiB of VMEM; the target has 16.0 MiB"
  double seconds = 0;  // total, overheads included
  double compute_s = 0;   // matrix + vector work, padded
  double dma_s = 0;       // HBM traffic at HBM bandwidth
  double hbm_bytes = 0;   // with re-reads across tiles
  double vmem_bytes = 0;  // working set of one tile (both buffers when double-buffered)
  int64_t steps = 0;      // grid steps
  double padded_matrix_flops = 0;
};

struct TpuResult {
  bool valid = false;
  std::string error;  // the first invalid kernel's
  double seconds = 0;
  std::vector<KernelTiming> kernels;
};

struct TpuSimOptions {
  double step_overhead_s = 0.35e-6;  // per grid step (DMA descriptor issue, loop control)
  // Multiplicative log-normal noise on every kernel time (0 = deterministic), seeded per simulator.
  double noise_stddev = 0;
  uint64_t seed = 0;
};

class TpuSimulator {
 public:
  // `spec` needs a matrix unit, vector lanes, a clock, a peak, and "hbm" and "vmem" memory levels.
  static absl::StatusOr<TpuSimulator> Create(const TargetSpec& spec, TpuSimOptions options = {});

  KernelTiming SimulateKernel(const costmodels::KernelSummary& kernel, const TileConfig& tile);
  // `tiles` one per kernel (empty = DefaultTile for each).
  TpuResult Simulate(const std::vector<costmodels::KernelSummary>& kernels,
                     const std::vector<TileConfig>& tiles = {});

  // The compiler's default tile: the largest power-of-two tile, at most 512 per dimension, whose
  // double-buffered working set fits half of VMEM.
  TileConfig DefaultTile(const costmodels::KernelSummary& kernel) const;
  // Candidate tile sizes per dimension for search: powers of two from the hardware's granule up to
  // the padded dimension (at least one value, 0 = whole, first).
  std::vector<int64_t> TileChoices(const costmodels::KernelSummary& kernel, int dimension) const;

  const TargetSpec& spec() const { return spec_; }

 private:
  TpuSimulator(TargetSpec spec, TpuSimOptions options);
  // The deterministic model; SimulateKernel adds the noise.
  KernelTiming Model(const costmodels::KernelSummary& kernel, const TileConfig& tile) const;
  double Noise();

  TargetSpec spec_;
  TpuSimOptions options_;
  std::mt19937_64 rng_;
  double hbm_bandwidth_ = 0, vmem_bytes_ = 0, vector_ops_per_s_ = 0;
};

}  // namespace mltune::backends::tpu
