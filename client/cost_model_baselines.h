// The analytical baselines train-cost-model prints next to the learned model, where they are not
// logged at collect time (tpu-sim rows carry theirs, task "<task>-analytical").
#pragma once

#include "costmodels/features/kernel_graph.h"

namespace mltune::client {

// This machine's figures for the CPU roofline (docs/cost_models.md; /work/shared/NOTES.md): one
// core's f32 FMA peak with AVX-512 (oneDNN SGEMM reached 214-232 GFLOP/s), and the streaming
// bandwidth an elementwise op on large buffers reaches (39-43 GB/s).
inline constexpr double kCpuPeakFlops = 222e9;
inline constexpr double kCpuBandwidth = 40e9;

// Roofline seconds of a CPU kernel from its graph's static kernel features (FLOPs,
// transcendentals, bytes read from outside and written out): max(ops / peak, bytes / bandwidth).
// The compiler writer's model: no launch overhead, caches or vectorization efficiency.
double CpuRooflineSeconds(const costmodels::features::KernelGraph& graph);

}  // namespace mltune::client
