// The compiler writer's tile-aware analytical model: the baseline the learned cost model is
// compared against on tpu-sim tiles (docs/cost_models.md). Deliberately simple, not the
// simulator: a roofline of the kernel's unpadded FLOPs and its tile-dependent HBM traffic
// (a matmul's operands re-read once per tile column or row they feed), with no MXU or vreg
// padding, no per-step overhead and no double-buffering overlap. It does not check VMEM: callers
// exclude tiles the target rejects.
#pragma once

#include <cstdint>

#include "backends/spec/target_spec.h"
#include "costmodels/analytical/kernels.h"

namespace mltune::costmodels {

// Tile of a kernel's iteration space, as backends::tpu::TileConfig (this library sits below the
// simulator): matmul kernels m x n output tile and k contraction step; other kernels m rows x n
// cols. 0 = the whole dimension; values are clamped to the dimension.
struct AnalyticalTile {
  int64_t m = 0, n = 0, k = 0;
};

// Seconds of `kernel` with `tile` on `spec`: max(compute, HBM traffic / bandwidth) plus the
// spec's kernel overhead. Compute is the matrix FLOPs at the matrix peak plus vector FLOPs and
// transcendentals at the vector rate (lanes x clock); opaque kernels are the plain roofline.
double AnalyticalTileSeconds(const KernelSummary& kernel, const AnalyticalTile& tile,
                             const backends::TargetSpec& spec);

}  // namespace mltune::costmodels
